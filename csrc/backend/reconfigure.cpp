// Fault tolerance through torch >= 2.15's reconfigure contract
// (init_process_group(enable_reconfigure=True), dist._get_reconfigure_handle,
// dist._reconfigure): the group waits for reconfigure() before it has a
// communicator; each reconfigure() ends the communicator it has (the members
// that stay hand it over together, then it is revoked and aborted: its
// pending works end with DistBackendError) and builds the next one over the
// members the handles name, through the group's store.
// The group object, its options and its hooks stay; its rank and size become
// the new membership's, and its sequence numbers start again at 0 on every
// member (a member that joins starts there too).
#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "backend/backend.h"
#include "backend/membership.h"
#include "failures/group_failures.h"
#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/seam.h"
#include "op/errors.h"
#include "util/checked.h"

namespace nccl_core {

#if NCCL_CORE_TORCH >= 215

namespace {

// The Work reconfigure() returns: the new communicator exists when it does.
class FinishedWork final : public c10d::Work {
 public:
  explicit FinishedWork(int rank) : c10d::Work(rank, c10d::OpType::UNKNOWN) { finish(); }
};

// How long a healthy communicator's own pending works may take to end once
// every member that stays has arrived: whatever can still complete does so
// at once; what cannot (a collective a peer never joined) fails after this.
constexpr std::chrono::milliseconds kDrainGrace{5000};

// Posts this process's `step` of a hand-over under `base`, then (where it
// waits) waits until every handle in `others` posted it too, the timeout
// passed, or `failed()` says this process's communicator failed meanwhile (a
// member is gone, and nothing of this process's is left on the wire).
void hand_over_step(c10d::Store& store, const std::string& base, const char* step,
                    const std::string& mine, const std::vector<std::string>& others, bool wait,
                    std::chrono::milliseconds timeout, const std::function<bool()>& failed) {
  store.set(base + step + "/" + mine, std::vector<uint8_t>{1});
  if (!wait || others.empty()) {
    return;
  }
  std::vector<std::string> keys;
  for (const auto& h : others) {
    keys.push_back(base + step + "/" + h);
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!store.check(keys) && !failed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

bool Backend::supportsReconfigure() const {
  return nccl().provides("ncclCommRevoke");
}

c10d::ReconfigureHandle Backend::get_reconfigure_handle() const {
  NCCL_CORE_CHECK_VALUE(options_->reconfigurable(),
                        "nccl_core: get_reconfigure_handle needs a group made with "
                        "init_process_group(enable_reconfigure=True)");
  return generations_.handle;
}

WorkPtr Backend::reconfigure(const c10d::ReconfigureOptions& opts) {
  // Everything the caller gave is checked, alike on every rank, before the
  // old communicator is touched: a refused call leaves the group as it was.
  NCCL_CORE_CHECK_VALUE(options_->reconfigurable(),
                        "nccl_core: reconfigure needs a group made with "
                        "init_process_group(enable_reconfigure=True)");
  nccl().require("ncclCommRevoke", "reconfigure", newer::kRevokeVersion);
  NCCL_CORE_CHECK_VALUE(!coalescing_, "nccl_core: reconfigure inside a coalescing block");
  NCCL_CORE_CHECK_VALUE(generations_.used_uuids.count(opts.uuid) == 0, "nccl_core reconfigure: uuid ",
                        opts.uuid, " was used by this group before; pass a fresh one");
  NCCL_CORE_CHECK_VALUE(opts.hints.empty(), "nccl_core reconfigure: unknown hint \"",
                        opts.hints.empty() ? std::string() : opts.hints.begin()->first,
                        "\" (nccl_core takes none)");
  std::chrono::milliseconds timeout = opts.timeout.value_or(options_->timeout);
  NCCL_CORE_CHECK_VALUE(timeout.count() > 0, "nccl_core reconfigure: timeout must be positive, got ",
                        timeout.count(), " ms");
  std::vector<std::string> members = membership::ranked(opts.handles);
  int rank = membership::rank_of(members, generations_.handle);
  generations_.used_uuids.insert(opts.uuid);

  // The members that stay leave a live communicator together: a rank whose
  // collective ended locally may still have its last sends on the wire (a
  // socket transport hands them to a proxy), and revoking them would cut a
  // peer's collective short.  So every one of them arrives, lets its own
  // pending works end, and only then does any of them revoke.  A rank whose
  // communicator failed has nothing on the wire: it posts its steps and goes on.
  const std::string base = "nccl_core/reconfigure/" + std::to_string(opts.uuid) + "/";
  const bool live = comm_ && comm_->is_live() && !failures_->failed();
  const auto others = membership::staying(members, generations_.members, generations_.handle);
  const auto failed = [this] { return failures_->failed(); };
  hand_over_step(*store_, base, "arrived", generations_.handle, others, live, timeout, failed);
  if (live && failures_->started()) {
    auto deadline = std::chrono::steady_clock::now() + std::min(timeout, kDrainGrace);
    while (!failures_->watchdog()->drained() && !failed() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  hand_over_step(*store_, base, "drained", generations_.handle, others, live, timeout, failed);
  end_communicator("nccl_core: the group is being reconfigured (uuid " +
                               std::to_string(opts.uuid) + ")");
  at::Device dev = device_ ? *device_ : pick_device(nullptr);
  rank_ = rank;
  size_ = static_cast<int>(members.size());
  info_->label = (options_->group_name.empty() ? std::string("?") : options_->group_name) +
                 " (rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                 ", uuid " + std::to_string(opts.uuid) + ")";
  try {
    ncclUniqueId id = unique_id("nccl_core/reconfigure/" + std::to_string(opts.uuid), timeout);
    std::lock_guard<std::mutex> lock(init_mutex_);
    adopt(Communicator::create(id, size_, rank_, dev.index(), options_->config, timeout), dev);
  } catch (const c10::Error&) {
    throw;
  } catch (...) {
    rethrow_as_dist_error("nccl_core reconfigure");
  }
  generations_.members = std::move(members);
  announce(true);
  return c10::make_intrusive<FinishedWork>(rank_);
}

void Backend::end_communicator(const std::string& why) {
  retire_registrations();
  // Pending works fail first: revoking lets their kernels leave, and a
  // watchdog sweep in between would take an end event for success.
  if (failures_->started()) {
    failures_->fail_pending(why, Watchdog::Release::kKeep);
  }
  if (comm_ && comm_->is_live()) {
    // In-flight operations stop where NCCL can stop them; the abort below
    // ends the rest, and frees the communicator without waiting for peers.
    try {
      (void)nccl().CommRevoke(comm_->get(), 0);
    } catch (...) {
    }
  }
  if (comm_) {
    comm_->abort();
  }
  failures_->stop_watchdog();
  // A new generation: what the old communicator's failures knew is theirs.
  redops_.clear();
  fast_.reset();
  comm_.reset();
  info_ = std::make_shared<GroupInfo>();
  failures_ = std::make_unique<GroupFailures>(info_, options_->trace_buffer_size, abort_hooks_);
  abort_hooks_->rearm();
  seq_ = 0;
  collectives_ = 0;
  announced_ = false;
}

#endif  // NCCL_CORE_TORCH >= 215

}  // namespace nccl_core
