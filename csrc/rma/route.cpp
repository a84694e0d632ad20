#include "rma/route.h"

#include <cctype>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "device/dev_comm.h"
#include "device/properties.h"
#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/seam.h"

namespace nccl_core::rma {

namespace {

constexpr const char* kEnv = "NCCL_CORE_RMA_ROUTE";

// Settings made through Communicator.rma_route, until the communicator dies.
std::mutex settings_mutex;
std::vector<std::pair<std::weak_ptr<const Communicator>, Route>> settings;

// One rank's contribution to the agreement (one uint64 of an all-gather).
constexpr uint64_t kAskMask = 0x3;       // 0 auto, 1 native, 2 a bad variable
constexpr uint64_t kAskBad = 2;
constexpr uint64_t kHasCalls = 1u << 2;  // ncclPutSignal & co. are exported
constexpr uint64_t kNoHostRma = 1u << 3; // NCCL says hostRmaSupport = false
constexpr uint64_t kFailed = 1u << 4;    // ncclCommQueryProperties failed here

bool has_native_calls() {
  return nccl().provides("ncclPutSignal") && nccl().provides("ncclSignal") &&
         nccl().provides("ncclWaitSignal");
}

Route* setting_of(const Communicator& comm) {
  for (auto it = settings.begin(); it != settings.end();) {
    auto c = it->first.lock();
    if (!c) {
      it = settings.erase(it);
    } else if (c.get() == &comm) {
      return &it->second;
    } else {
      ++it;
    }
  }
  return nullptr;
}

std::string ranks_where(const std::vector<size_t>& all, uint64_t mask, uint64_t value) {
  std::string out;
  for (size_t r = 0; r < all.size(); ++r) {
    if ((all[r] & mask) == value) {
      out += (out.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  return out;
}

// hostRmaSupport (2.29.7+): the same for every rank of a communicator unless
// their environments differ (NCCL_WIN_ENABLE, cuMem), which the agreement
// catches.  Unknown before 2.29.7, where NCCL refuses the first call itself.
bool host_rma_refused(Communicator& comm) {
  auto p = comm_properties(comm);
  return p.has_2_29_7 && !p.host_rma_support;
}

} // namespace

const char* route_name(Route r) { return r == Route::Native ? "native" : "auto"; }

Route parse_route(const std::string& text, const char* what) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  std::string word;
  for (size_t i = b; i < e; ++i) {
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  if (word == "auto") return Route::Auto;
  if (word == "native") return Route::Native;
  throw NcclInvalid(concat(what, " must be \"auto\" or \"native\", got \"", text, "\""));
}

Route requested_route(const Communicator& comm) {
  {
    std::lock_guard<std::mutex> lock(settings_mutex);
    if (const Route* r = setting_of(comm)) {
      return *r;
    }
  }
  const char* env = std::getenv(kEnv);
  return env == nullptr || *env == '\0' ? Route::Auto : parse_route(env, kEnv);
}

void request_route(const Communicator& comm, Route r) {
  if (r == Route::Native && !has_native_calls()) {
    features::refuse(features::kRmaNativeRoute, "Communicator.rma_route = \"native\"");
  }
  std::lock_guard<std::mutex> lock(settings_mutex);
  if (Route* old = setting_of(comm)) {
    *old = r;
  } else {
    settings.emplace_back(comm.shared_from_this(), r);
  }
}

Agreement agree_route(const std::shared_ptr<Communicator>& comm) {
  // Everything local is turned into a value first: a rank that threw before
  // the all-gather would leave the others waiting in it.
  uint64_t mine = 0;
  std::string own_error;
  std::exception_ptr own_failure;
  Route asked = Route::Auto;
  try {
    asked = requested_route(*comm);
    mine = static_cast<uint64_t>(asked);
  } catch (const NcclInvalid& e) {
    mine = kAskBad;
    own_error = e.what();
  }
  bool calls = has_native_calls();
  if (calls) {
    mine |= kHasCalls;
  }
  // NCCL's calls will carry some peer: the route asks for them, or a peer is
  // outside the LSA team (the same on every rank).
  if (calls && (asked == Route::Native || !comm->lsa_spans_all())) {
    try {
      if (host_rma_refused(*comm)) {
        mine |= kNoHostRma;
      }
    } catch (const std::exception&) {
      mine |= kFailed;
      own_failure = std::current_exception();
    }
  }
  auto all = comm->all_gather_sizes(mine, "ncclAllGather (one-sided route)");

  if (own_failure) {
    std::rethrow_exception(own_failure);
  }
  std::string failed = ranks_where(all, kFailed, kFailed);
  if (!failed.empty()) {
    throw NcclError(ncclInternalError,
                    concat("ncclCommQueryProperties failed on rank(s) ", failed,
                           " while the ranks agreed on the one-sided route (see their errors)"));
  }
  std::string bad = ranks_where(all, kAskMask, kAskBad);
  if (!bad.empty()) {
    throw NcclInvalid(!own_error.empty()
                          ? own_error
                          : concat(kEnv, " is invalid on rank(s) ", bad,
                                   " (it must be \"auto\" or \"native\")"));
  }
  std::string native = ranks_where(all, kAskMask, static_cast<uint64_t>(Route::Native));
  std::string automatic = ranks_where(all, kAskMask, static_cast<uint64_t>(Route::Auto));
  if (!native.empty() && !automatic.empty()) {
    throw NcclInvalid(concat(
        "the ranks of this communicator ask for different one-sided routes (native on rank(s) ",
        native, ", auto on rank(s) ", automatic,
        "); signals are counted where the route puts them, so every rank must use the same "
        "one: set Communicator.rma_route or ", kEnv, " alike on every rank"));
  }
  std::string missing = ranks_where(all, kHasCalls, 0);
  std::string no_rma = ranks_where(all, kNoHostRma, kNoHostRma);
  if (native.empty()) {
    return Agreement{Route::Auto, missing.empty() && no_rma.empty()};
  }
  if (!missing.empty()) {
    features::refuse(features::kRmaNativeRoute,
                     concat("the native one-sided route (", kEnv,
                            " / Communicator.rma_route; ncclPutSignal missing on rank(s) ",
                            missing, ")"));
  }
  if (!no_rma.empty()) {
    throw NcclUnsupported(concat(
        "the native one-sided route needs NCCL's host RMA, which NCCL reports unavailable "
        "on rank(s) ", no_rma,
        " (ncclCommQueryProperties: hostRmaSupport = false; it needs NCCL's symmetric memory "
        "(cuMem, NCCL_WIN_ENABLE) and either one NVLink domain or an RMA-capable network)"));
  }
  return Agreement{Route::Native, true};
}

} // namespace nccl_core::rma
