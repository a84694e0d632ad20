// CUDA kernels of one-sided communication over load/store (LSA) pointers,
// used where the loaded NCCL has no ncclPutSignal (2.28).
//
// Ordering: every block of a put stores its share, syncs, and fences at
// system scope before taking a ticket; the last block then increments the
// peer's signal counter with release semantics.  A waiter that reads the
// counter with acquire semantics therefore sees all of the put's data.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace nccl_core::rma {

// Most descriptors one wait kernel handles; longer lists take several launches.
constexpr int kMaxWaitsPerLaunch = 64;

struct WaitList {
  int count;
  int slot[kMaxWaitsPerLaunch];                  // index into the local counters
  unsigned long long target[kMaxWaitsPerLaunch]; // wait until counter >= target
};

// Copies `bytes` from `src` to `dst` (a peer's window through its LSA
// pointer), then adds 1 to `*remote_signal` (release, system scope).
// `ticket` is a zeroed device word, returned to zero by the kernel.
void launch_put_signal(const void* src, void* dst, size_t bytes,
                       unsigned long long* remote_signal, unsigned int* ticket,
                       cudaStream_t stream);

// Adds 1 to `*remote_signal` after all prior writes of the stream's work.
void launch_signal(unsigned long long* remote_signal, cudaStream_t stream);

// Blocks the stream until each local counter reaches its target (acquire),
// or until the communicator's abort flag is raised.
void launch_wait(const unsigned long long* counters, const WaitList& waits,
                 const volatile int* abort, cudaStream_t stream);

} // namespace nccl_core::rma
