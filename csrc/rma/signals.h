// One-sided operations of a Communicator: put_signal, signal, wait_signal.
//
// Two implementations, chosen per communicator by its route (route.h, which
// also says why the route can never differ between ranks or windows):
// - nccl_core's kernels (kernels.cu), for peers that are load/store reachable
//   (NVLink, the LSA team) on route auto: data goes straight into the peer's
//   window through its LSA pointer, and each rank keeps a symmetric "signal
//   area" of one counter per sending rank, which senders increment (release)
//   and waiters poll (acquire);
// - NCCL's ncclPutSignal / ncclSignal / ncclWaitSignal (2.29.2+) for every
//   other peer, and for every peer on route native.  NCCL requires the source
//   of a put to lie in a window registered with COLL_SYMMETRIC, and its calls
//   cannot be captured in a CUDA graph; both are checked here first.
// A peer's signals always travel one of the two ways, so waits match.  The
// per-communicator state (route, signal area) is a resource of the
// communicator, created collectively with its first window.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/buffer.h"
#include "comm/resources.h"
#include "rma/route.h"

namespace nccl_core::rma {

struct WaitDesc {
  int peer;
  int op_count;
};

// True when the loaded NCCL brings its own one-sided API (used for peers
// outside the LSA team, and for every peer on route native).
bool native();

// Collective part: every rank calls it while registering a window.  Agrees
// on the route and creates the signal area if the communicator has none yet.
void prepare(const std::shared_ptr<Communicator>& comm);
// Collective too: after a window with `flags` is registered.  NCCL's
// one-sided state is set up (every rank at once, so that no later call from
// some ranks only sets it up) at the first COLL_SYMMETRIC window: NCCL 2.32
// initialises it at such a registration and refuses ncclSignal before one.
void after_window(const std::shared_ptr<Communicator>& comm, int flags);

// The agreed route while the communicator has its one-sided state, else the
// one it would ask for (route.h: requested_route).
Route route_of(const Communicator& comm);
// Whether `peer`'s one-sided operations run as nccl_core's kernels (false:
// NCCL's calls).  Needs the one-sided state (a registered window).
bool served_by_kernels(Communicator& comm, int peer);
// Communicator.rma_route = r: refused (NcclInvalid) once another route is
// agreed, as the signals already counted live where that route put them.
void set_route(Communicator& comm, Route r);

// `offset` in bytes.  Checks everything before enqueueing (NcclInvalid).
void put_signal(Communicator& comm, const Buffer& src, int peer, const Window& window,
                size_t offset, cudaStream_t stream);
void signal(Communicator& comm, int peer, cudaStream_t stream);
void wait_signal(Communicator& comm, const std::vector<WaitDesc>& descs, cudaStream_t stream);

// The one-sided state of a communicator: its route and, on route auto, the
// signal area of our kernels (public for the resource bookkeeping only).
class SignalArea final : public Resource {
 public:
  // Collective; nullptr where NCCL cannot register windows (route auto).
  static std::shared_ptr<SignalArea> create(const std::shared_ptr<Communicator>& comm,
                                            Route route);
  Route route() const { return route_; }
  // Whether `peer`'s signals go through this area: route auto and `peer`
  // load/store reachable.
  bool reachable(int peer) const;
  // Address of `peer`'s counter for signals from this rank.
  unsigned long long* remote_counter(int peer) const;
  const unsigned long long* local_counters() const;
  // A zeroed ticket word for one put (a ring, so concurrent streams differ).
  unsigned int* next_ticket();
  // Counter targets for a wait on `peer` after `op_count` more signals.
  unsigned long long advance(int peer, int op_count);
  // NCCL's one-sided set-up is due at the next COLL_SYMMETRIC window
  // (after_window); `tolerant`: route auto, where NCCL may turn it down.
  void set_setup_pending(bool tolerant) {
    setup_tolerant_ = tolerant;
    setup_pending_.store(true);
  }
  bool setup_pending() const { return setup_pending_.load(); }
  bool setup_tolerant() const { return setup_tolerant_; }
  void setup_done() { setup_pending_.store(false); }

 private:
  SignalArea(std::shared_ptr<Communicator> comm, Route route, std::shared_ptr<Window> window,
             at::Tensor counters, at::Tensor tickets);
  void release(Communicator& comm) override;
  bool needs_quiet() const override { return true; }

  const Route route_;
  std::shared_ptr<Window> window_;  // nullptr on route native
  at::Tensor counters_; // nranks uint64 in NCCL memory, registered as window_
  at::Tensor tickets_;
  std::atomic<uint64_t> next_ticket_{0};
  std::atomic<bool> setup_pending_{false};
  bool setup_tolerant_ = false;
  std::mutex mutex_;
  std::vector<unsigned long long> consumed_; // signals already waited for, per peer
};

} // namespace nccl_core::rma
