// Device-side state every fast-path kernel shares (kernels.cu, one_way.cu):
// the per-block view of one call (its barrier count, its index, whose parity
// picks the window's half, its signature), how a call begins, and how it
// leaves and reports its ticket.  Included by CUDA sources only.
#pragma once

#include <cuda/atomic>

#include "nvlink/kernels.h"

namespace nccl_core::nvlink {

constexpr int kThreads = 512;
// Polls of a wait (barrier, header or line) between two reads of the
// (host-mapped, slow) abort flag (should_stop).
constexpr unsigned kAbortEvery = 256;

using SystemWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__device__ __forceinline__ unsigned long long* flags_of(const Shared& s, int rank) {
  return reinterpret_cast<unsigned long long*>(s.window[rank]);
}

// Per-block state of one call: the barrier count before it (s.epoch[0]), the
// call's index (s.epoch[1], whose parity picks the half), and whether a
// barrier was abandoned.  Every rank runs the same calls with the same number
// of barriers each, so both counters agree between ranks.
struct BlockState {
  unsigned long long barriers;
  unsigned long long call;
  unsigned long long sig;  // this call's signature (kernels.h)
  int stop;
  int mismatch;  // a peer's flag carried another signature: move no data
};

// Called after each failed poll of a wait: whether to give up, because the
// communicator is aborted or another thread of the block gave up (st.stop is
// then set).  The abort flag is host-mapped and slow to read: every
// kAbortEvery polls, by one thread of the warp's threads polling together
// (thousands of threads polling at once, as in the one-way kernels, would
// otherwise flood PCIe with reads while a call runs late and make it later);
// a short sleep between polls.
__device__ __forceinline__ bool should_stop(const Shared& s, BlockState& st, unsigned& spins) {
  if (++spins % kAbortEvery != 0) {
    __nanosleep(32);
    return false;
  }
  const bool reader = (threadIdx.x & 31) == __ffs(__activemask()) - 1;
  if ((reader && *s.abort != 0) || *(volatile int*)&st.stop != 0) {
    *(volatile int*)&st.stop = 1;
    return true;
  }
  return false;
}

__device__ __forceinline__ char* half_of(const Shared& s, int rank, const BlockState& st) {
  return s.window[rank] + kFlagBytes + (st.call & 1) * s.half;
}

// False when the communicator is being aborted (Progress::stop_kernels): the
// call must leave before it touches the window, which NCCL's abort unmaps.
__device__ __forceinline__ bool begin(const Shared& s, BlockState& st, const CallTag& tag) {
  if (threadIdx.x == 0) {
    st.barriers = s.epoch[0];
    st.call = s.epoch[1] + 1;
    st.sig = tag.sig;
    st.stop = *s.stop != 0;
    st.mismatch = 0;
  }
  __syncthreads();
  return st.stop == 0;
}

// Every block calls this once, on every way out (done, or stopped by an
// abort).  The last block to leave saves the counters of a completed call
// and reports the call's ticket: from then on the kernel touches neither the
// window nor the user's tensors.  The last one, not block 0: in a kernel
// without barriers (one_way.cu) block 0 may be done before another block
// has begun, which must still read the counters of before the call.
__device__ __forceinline__ void leave(const Shared& s, const BlockState& st, bool completed,
                                      unsigned long long ticket) {
  __syncthreads();  // this block's stores are issued
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&s.epoch[2], 1ull) == gridDim.x - 1) {
      if (completed) {
        s.epoch[0] = st.barriers;
        s.epoch[1] = st.call;
      }
      s.epoch[2] = 0;  // the next call starts after this kernel: no race
      if (ticket != 0) {
        __threadfence_system();
        SystemWord(*s.done).store(ticket, cuda::memory_order_release);
      }
    }
  }
}

}  // namespace nccl_core::nvlink
