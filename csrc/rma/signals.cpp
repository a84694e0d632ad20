#include "rma/signals.h"

#include <c10/cuda/CUDAGuard.h>

#include "comm/communicator.h"
#include "comm/device_scope.h"
#include "memory/allocator.h"
#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/types.h"
#include "nccl/seam.h"
#include "rma/kernels.h"
#include "util/checked.h"

namespace nccl_core::rma {

namespace {

constexpr const char* kAreaKey = "rma.signal_area";
constexpr int64_t kTickets = 4096;

std::shared_ptr<SignalArea> area_of(Communicator& comm) {
  auto r = std::dynamic_pointer_cast<SignalArea>(comm.attachment(kAreaKey));
  NCCL_CORE_REQUIRE(r != nullptr,
                    "one-sided operations need a registered window on this communicator "
                    "(register_window creates the signal area they use)");
  return r;
}

void check_peer(const Communicator& comm, int peer) {
  NCCL_CORE_REQUIRE(peer >= 0 && peer < comm.nranks(), "peer ", peer,
                    " is outside the communicator of ", comm.nranks(), " ranks");
}

std::shared_ptr<SignalArea> area_if_any(const Communicator& comm) {
  return std::dynamic_pointer_cast<SignalArea>(comm.attachment(kAreaKey));
}

// NCCL's one-sided calls compute signal values on the host when enqueued
// (its copy-engine path even copies them from pageable memory), so a graph
// would replay stale ones: refused before NCCL sees the call.
void refuse_capture(const Communicator& comm, cudaStream_t stream, const char* what) {
  DeviceScope on_device(comm.device());  // stream 0 is the legacy stream of the current device
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  NCCL_CORE_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  NCCL_CORE_REQUIRE(status == cudaStreamCaptureStatusNone, what,
                    " through NCCL's one-sided calls (route native, or a peer outside the "
                    "NVLink domain) cannot be captured in a CUDA graph: NCCL computes their "
                    "signal values on the host when they are enqueued");
}

// ncclPutSignal finds the source's window itself and refuses it unless that
// window was registered with COLL_SYMMETRIC; checked here to say so clearly.
// The whole source must lie inside it (NCCL's network path reads
// window-relative bytes).
void require_symmetric_source(const Communicator& comm, const Buffer& src, size_t bytes,
                              int peer) {
  auto begin = reinterpret_cast<uintptr_t>(src.ptr);
  for (const auto& r : comm.resources()) {
    auto w = std::dynamic_pointer_cast<Window>(r);
    if (!w || (w->flags() & newer::kWinCollSymmetric) == 0 || !w->is_valid()) {
      continue;
    }
    uintptr_t base = 0;
    try {
      base = reinterpret_cast<uintptr_t>(w->user_ptr());
    } catch (const NcclInvalid&) {
      continue; // closed meanwhile
    }
    if (begin >= base && begin - base < w->size() && bytes <= w->size() - (begin - base)) {
      return;
    }
  }
  throw NcclInvalid(concat(
      "put_signal to rank ", peer, " runs through NCCL's ncclPutSignal (route ",
      route_name(route_of(comm)),
      "), which needs local_buffer inside a window registered on this communicator with "
      "WindowFlag.COLL_SYMMETRIC; these ", bytes, " bytes are not inside one"));
}

// NCCL sets up its one-sided state at a rank's first one-sided call, and that
// set-up is collective (NCCL 2.29.2-2.30.7: the call queues ncclRmaCeInit,
// which registers a signal window across the LSA team in group end), so a
// first put from a few ranks would wait for the others.  Done instead where
// every rank already is, at the agreement: a signal to itself, waited for, on
// a private stream (both of NCCL's counters for this pair advance by one).
void set_up_nccl(Communicator& comm) {
  nccl().require("ncclSignal", "one-sided set-up", newer::kSignalsVersion);
  nccl().require("ncclWaitSignal", "one-sided set-up", newer::kSignalsVersion);
  DeviceScope on_device(comm.device());
  struct Stream {
    cudaStream_t s = nullptr;
    ~Stream() {
      if (s != nullptr) {
        (void)cudaStreamDestroy(s);  // released once its work is done
      }
    }
  } st;
  NCCL_CORE_CUDA_CHECK(cudaStreamCreateWithFlags(&st.s, cudaStreamNonBlocking));
  ncclComm_t c = comm.get();
  int self = comm.rank();
  comm.run("ncclSignal (one-sided set-up)", [&] { return nccl().Signal(self, 0, 0, 0u, c, st.s); });
  newer::WaitSignalDesc desc{1, self, 0, 0};
  comm.run("ncclWaitSignal (one-sided set-up)", [&] { return nccl().WaitSignal(1, &desc, c, st.s); });
  NCCL_CORE_CUDA_CHECK(cudaStreamSynchronize(st.s));
}

// NCCL's one-sided calls before its set-up (no COLL_SYMMETRIC window yet on
// this communicator): refused here, the same on every rank, instead of
// NCCL's lazy set-up, which is collective and would hang a call that only
// some ranks make (and which NCCL 2.32 refuses outright).
void require_set_up(const SignalArea& area, const char* what) {
  NCCL_CORE_REQUIRE(!area.setup_pending(), what,
                    " through NCCL's one-sided calls needs a window registered with "
                    "WindowFlag.COLL_SYMMETRIC on this communicator first");
}

[[noreturn]] void unreachable_peer(int peer, const char* what) {
  throw NcclUnsupported(concat(what, " to rank ", peer,
                               ", which is not load/store reachable (no NVLink path from this "
                               "GPU), needs NCCL 2.29.2 or newer (ncclPutSignal); the loaded "
                               "NCCL is ",
                               api::version_string(api::loaded_version())));
}

} // namespace

bool native() {
  return nccl().provides("ncclPutSignal") && nccl().provides("ncclWaitSignal");
}

void prepare(const std::shared_ptr<Communicator>& comm) {
  if (comm->attachment(kAreaKey) != nullptr) {
    return;
  }
  // Collective, and the same answer (or error) on every rank.
  Agreement agreed = agree_route(comm);
  Route route = agreed.route;
  if (auto area = SignalArea::create(comm, route)) {
    // Route native, or auto with peers outside the LSA team (NCCL carries
    // those): NCCL's set-up is due at the first COLL_SYMMETRIC window.
    if (route == Route::Native) {
      area->set_setup_pending(false);
    } else if (agreed.nccl_calls_usable && !comm->lsa_spans_all()) {
      area->set_setup_pending(true);
    }
    comm->attach(kAreaKey, std::move(area));
    // Allocated here, outside any graph capture: wait_signal hands it to its
    // kernel, possibly while capturing, when pinned allocations are not allowed.
    (void)comm->abort_flag();
  }
}

void after_window(const std::shared_ptr<Communicator>& comm, int flags) {
  auto area = area_if_any(*comm);
  if (!area || !area->setup_pending() || (flags & NCCL_WIN_COLL_SYMMETRIC) == 0) {
    return;
  }
  try {
    set_up_nccl(*comm);
  } catch (const NcclError& e) {
    // Route auto: where NCCL turns its calls down (hostRmaSupport unknown
    // before 2.29.7, the same answer on every rank), the first such put
    // reports it instead.
    if (!area->setup_tolerant() || !comm->is_live() ||
        dynamic_cast<const NcclUnsupported*>(&e) != nullptr) {
      throw;
    }
  }
  area->setup_done();
}

Route route_of(const Communicator& comm) {
  auto area = area_if_any(comm);
  return area ? area->route() : requested_route(comm);
}

bool served_by_kernels(Communicator& comm, int peer) {
  check_peer(comm, peer);
  return area_of(comm)->reachable(peer);
}

void set_route(Communicator& comm, Route r) {
  auto area = area_if_any(comm);
  NCCL_CORE_REQUIRE(!area || area->route() == r, "the one-sided route of this communicator is ",
                    route_name(area ? area->route() : r),
                    ", agreed by every rank at its first register_window; it cannot change "
                    "while its windows and signals live (set rma_route before registering, "
                    "or after close_all_resources)");
  request_route(comm, r);
}

// --- SignalArea -------------------------------------------------------------

SignalArea::SignalArea(std::shared_ptr<Communicator> comm, Route route,
                       std::shared_ptr<Window> window, at::Tensor counters, at::Tensor tickets)
    : Resource(comm, "SignalArea"),
      route_(route),
      window_(std::move(window)),
      counters_(std::move(counters)),
      tickets_(std::move(tickets)),
      consumed_(comm->nranks(), 0) {}

std::shared_ptr<SignalArea> SignalArea::create(const std::shared_ptr<Communicator>& comm,
                                               Route route) {
  if (route == Route::Native) {
    // Every signal travels through NCCL, which keeps its own counters.
    return std::shared_ptr<SignalArea>(
        new SignalArea(comm, route, nullptr, at::Tensor(), at::Tensor()));
  }
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(comm->device()));
  at::Tensor counters = memory::empty({comm->nranks()}, at::kLong, comm->device(), false);
  counters.zero_();
  at::Tensor tickets = at::zeros({kTickets}, at::TensorOptions()
                                                 .dtype(at::kInt)
                                                 .device(at::kCUDA, comm->device()));
  // The zeros must be in place before any peer can signal into them; both
  // tensors were written on the current stream.
  NCCL_CORE_CUDA_CHECK(cudaStreamSynchronize(
      c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(comm->device())).stream()));
  size_t bytes = static_cast<size_t>(comm->nranks()) * sizeof(unsigned long long);
  auto window = Window::create(comm, counters.data_ptr(), bytes, 0, counters.storage());
  if (window == nullptr) {
    return nullptr; // no windows on this system: register_window reports None
  }
  return std::shared_ptr<SignalArea>(new SignalArea(comm, route, std::move(window),
                                                    std::move(counters), std::move(tickets)));
}

bool SignalArea::reachable(int peer) const {
  ensure_valid();
  return window_ != nullptr && window_->peer_pointer(peer, 0).has_value();
}

unsigned long long* SignalArea::remote_counter(int peer) const {
  ensure_valid();
  if (window_ == nullptr) {
    unreachable_peer(peer, "signalling");
  }
  auto addr = window_->peer_pointer(peer, owner()->rank() * sizeof(unsigned long long));
  if (!addr) {
    unreachable_peer(peer, "signalling");
  }
  return static_cast<unsigned long long*>(*addr);
}

const unsigned long long* SignalArea::local_counters() const {
  ensure_valid();
  return static_cast<const unsigned long long*>(counters_.data_ptr());
}

unsigned int* SignalArea::next_ticket() {
  ensure_valid();
  uint64_t i = next_ticket_.fetch_add(1) % kTickets;
  return static_cast<unsigned int*>(tickets_.data_ptr()) + i;
}

unsigned long long SignalArea::advance(int peer, int op_count) {
  std::lock_guard<std::mutex> lock(mutex_);
  consumed_[peer] += static_cast<unsigned long long>(op_count);
  return consumed_[peer];
}

void SignalArea::release(Communicator& /*comm*/) {
  if (window_ != nullptr) {
    window_->close();
  }
  counters_ = at::Tensor();
  tickets_ = at::Tensor();
}

// --- operations -------------------------------------------------------------

void put_signal(Communicator& comm, const Buffer& src, int peer, const Window& window,
                size_t offset, cudaStream_t stream) {
  NCCL_CORE_REQUIRE(src.device == comm.device(), "local_buffer is on device ", src.device,
                    ", but communicator is on device ", comm.device());
  check_peer(comm, peer);
  ncclWindow_t win = window.handle(); // raises if closed
  NCCL_CORE_REQUIRE(window.owner().get() == &comm,
                    "peer_window was registered on another communicator");
  size_t bytes = checked::bytes(src.count, types::element_size(src.type), "local_buffer bytes");
  // The store lands in the peer's copy, whose size (exchanged at
  // registration) may differ from this rank's.
  size_t theirs = window.peer_size(peer);
  NCCL_CORE_REQUIRE(offset <= theirs && bytes <= theirs - offset, "put_signal of ", bytes,
                    " bytes at byte offset ", offset, " does not fit rank ", peer,
                    "'s window of ", theirs, " bytes");
  auto area = area_of(comm);
  if (!area->reachable(peer)) {
    // Route native, or not load/store reachable: NCCL's own put (2.29.2+).
    if (!native()) {
      unreachable_peer(peer, "put_signal");
    }
    require_symmetric_source(comm, src, bytes, peer);
    require_set_up(*area, "put_signal");
    refuse_capture(comm, stream, "put_signal");
    nccl().require("ncclPutSignal", "put_signal", newer::kSignalsVersion);
    comm.call(nccl().PutSignal(src.ptr, src.count, src.type, peer, win, offset, 0, 0, 0u,
                               comm.get(), stream),
              "ncclPutSignal");
    return;
  }
  auto dst = window.peer_pointer(peer, 0);
  NCCL_CORE_REQUIRE(dst.has_value(), "rank ", peer,
                    " is load/store reachable, but not through peer_window");
  unsigned long long* counter = area->remote_counter(peer);
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(comm.device()));
  launch_put_signal(src.ptr, static_cast<char*>(*dst) + offset, bytes, counter,
                    area->next_ticket(), stream);
}

void signal(Communicator& comm, int peer, cudaStream_t stream) {
  check_peer(comm, peer);
  auto area = area_of(comm);
  if (!area->reachable(peer)) {
    if (!native()) {
      unreachable_peer(peer, "signal");
    }
    require_set_up(*area, "signal");
    refuse_capture(comm, stream, "signal");
    nccl().require("ncclSignal", "signal", newer::kSignalsVersion);
    comm.call(nccl().Signal(peer, 0, 0, 0u, comm.get(), stream), "ncclSignal");
    return;
  }
  unsigned long long* counter = area->remote_counter(peer);
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(comm.device()));
  launch_signal(counter, stream);
}

void wait_signal(Communicator& comm, const std::vector<WaitDesc>& descs, cudaStream_t stream) {
  for (const auto& d : descs) {
    check_peer(comm, d.peer);
    NCCL_CORE_REQUIRE(d.op_count >= 1, "op_count must be >= 1, got ", d.op_count);
  }
  if (descs.empty()) {
    return;
  }
  // Each peer's signals always travel one way: through the signal area for
  // load/store peers on route auto, through NCCL (2.29.2+) for the others.
  auto area = area_of(comm);
  std::vector<WaitDesc> local;
  std::vector<newer::WaitSignalDesc> remote;
  for (const auto& d : descs) {
    if (area->reachable(d.peer)) {
      local.push_back(d);
    } else if (native()) {
      remote.push_back(newer::WaitSignalDesc{d.op_count, d.peer, 0, 0});
    } else {
      unreachable_peer(d.peer, "wait_signal");
    }
  }
  if (!remote.empty()) {
    require_set_up(*area, "wait_signal");
    refuse_capture(comm, stream, "wait_signal");
    nccl().require("ncclWaitSignal", "wait_signal", newer::kSignalsVersion);
    comm.call(nccl().WaitSignal(static_cast<int>(remote.size()), remote.data(), comm.get(),
                                stream),
              "ncclWaitSignal");
  }
  if (local.empty()) {
    return;
  }
  const unsigned long long* counters = area->local_counters();
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(comm.device()));
  WaitList list{};
  for (size_t i = 0; i < local.size(); ++i) {
    list.slot[list.count] = local[i].peer;
    list.target[list.count] = area->advance(local[i].peer, local[i].op_count);
    if (++list.count == kMaxWaitsPerLaunch || i + 1 == local.size()) {
      launch_wait(counters, list, comm.abort_flag(), stream);
      list.count = 0;
    }
  }
}

} // namespace nccl_core::rma
