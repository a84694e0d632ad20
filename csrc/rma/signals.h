// One-sided operations of a Communicator: put_signal, signal, wait_signal.
//
// Peers that are load/store reachable (NVLink, the LSA team) are served by
// the extension's kernels (kernels.cu) on every NCCL: data goes straight into
// the peer's window through its LSA pointer, and each rank keeps a symmetric
// "signal area" of one counter per sending rank, which senders increment
// (release) and waiters poll (acquire).  Other peers go through NCCL's own
// ncclPutSignal / ncclSignal / ncclWaitSignal where the loaded NCCL has them
// (2.29.2+; NCCL then also requires the source to lie in a registered
// window), and raise NcclUnsupported naming 2.29 otherwise.  A peer's signals
// always travel one of the two ways, so waits match.  The signal area is a
// resource of the communicator, created collectively with its first window.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/operations.h"
#include "comm/resources.h"

namespace nccl_core::rma {

struct WaitDesc {
  int peer;
  int op_count;
};

// True when the loaded NCCL brings its own one-sided API (used for peers
// outside the LSA team).
bool native();

// Collective part: every rank calls it while registering a window.  Creates
// the signal area if the communicator has none yet.
void prepare(const std::shared_ptr<Communicator>& comm);

// `offset` in bytes.  Checks everything before enqueueing (NcclInvalid).
void put_signal(Communicator& comm, const ops::Buffer& src, int peer, const Window& window,
                size_t offset, cudaStream_t stream);
void signal(Communicator& comm, int peer, cudaStream_t stream);
void wait_signal(Communicator& comm, const std::vector<WaitDesc>& descs, cudaStream_t stream);

// The 2.28 signal area (public for the resource bookkeeping only).
class SignalArea final : public Resource {
 public:
  // Collective; nullptr where NCCL cannot register windows.
  static std::shared_ptr<SignalArea> create(const std::shared_ptr<Communicator>& comm);
  // Whether `peer` is load/store reachable (its signals go through this area).
  bool reachable(int peer) const;
  // Address of `peer`'s counter for signals from this rank.
  unsigned long long* remote_counter(int peer) const;
  const unsigned long long* local_counters() const;
  // A zeroed ticket word for one put (a ring, so concurrent streams differ).
  unsigned int* next_ticket();
  // Counter targets for a wait on `peer` after `op_count` more signals.
  unsigned long long advance(int peer, int op_count);

 private:
  SignalArea(std::shared_ptr<Communicator> comm, std::shared_ptr<Window> window,
             at::Tensor counters, at::Tensor tickets);
  void release(Communicator& comm) override;
  bool needs_quiet() const override { return true; }

  std::shared_ptr<Window> window_;
  at::Tensor counters_; // nranks uint64 in NCCL memory, registered as window_
  at::Tensor tickets_;
  std::atomic<uint64_t> next_ticket_{0};
  std::mutex mutex_;
  std::vector<unsigned long long> consumed_; // signals already waited for, per peer
};

} // namespace nccl_core::rma
