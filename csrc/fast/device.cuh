// Device-side building blocks of the fast path's kernels (kernels.cu, the
// staged calls; zero_copy.cu, all-reduce in place on a window): the call
// counters, the cross-rank barrier and wide copies.
#pragma once

#include <cuda/atomic>

#include <cstddef>
#include <cstdint>

#include "fast/kernels.h"

namespace nccl_core::fast::dev {

// Barrier polls between two reads of the (host-mapped, slow) abort flag.
constexpr unsigned kAbortEvery = 256;

using SystemWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__device__ __forceinline__ unsigned long long* flags_of(const Shared& s, int rank) {
  return reinterpret_cast<unsigned long long*>(s.window[rank]);
}

// Per-block state of one kernel: the barrier count before it (s.epoch[0]),
// the call's index (s.epoch[1], whose parity picks the half), and whether a
// barrier was abandoned.  Every rank runs the same kernels with the same
// number of barriers each, so both counters agree between ranks.
struct BlockState {
  unsigned long long barriers;
  unsigned long long call;
  int stop;
};

__device__ __forceinline__ char* half_of(const Shared& s, int rank, const BlockState& st) {
  return s.window[rank] + kFlagBytes + (st.call & 1) * s.half;
}

__device__ __forceinline__ void begin(const Shared& s, BlockState& st) {
  if (threadIdx.x == 0) {
    st.barriers = s.epoch[0];
    st.call = s.epoch[1] + 1;
    st.stop = 0;
  }
  __syncthreads();
}

// The last block to leave cannot be ahead of a block that has not read the
// counters yet: every block reads them before it signals its first barrier.
// `count_call` false: a kernel that is part of a call, not a call of its own.
__device__ __forceinline__ void end(const Shared& s, const BlockState& st,
                                    bool count_call = true) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    s.epoch[0] = st.barriers;
    if (count_call) {
      s.epoch[1] = st.call;
    }
  }
}

__device__ __forceinline__ size_t smin(size_t a, size_t b) { return a < b ? a : b; }

// dst[0, n) = src[0, n), spread over the grid, 16 bytes at a time where both
// are aligned.
__device__ inline void copy_bytes(char* dst, const char* src, size_t n) {
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t packs = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    packs = n / 16;
    for (size_t i = first; i < packs; i += stride) {
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    }
  }
  for (size_t i = packs * 16 + first; i < n; i += stride) {
    dst[i] = src[i];
  }
}

// Every block of the grid (at most kBlocks) on every rank: this block tells
// each rank it has arrived (release, after the block's stores), then waits
// until block b of every rank has, for each b of the grid (acquire).  False
// when the communicator was aborted meanwhile.  Slots of blocks outside a
// smaller grid lag behind; a later, wider barrier writes them before it
// waits on them, and waiting is "at least this epoch".
__device__ inline bool barrier(const Shared& s, BlockState& st) {
  __syncthreads();
  const unsigned long long epoch = st.barriers + 1;
  if (threadIdx.x < s.nranks) {
    unsigned long long* f = flags_of(s, threadIdx.x) + s.rank * kBlocks + blockIdx.x;
    __threadfence_system();
    SystemWord(*f).store(epoch, cuda::memory_order_release);
  }
  unsigned long long* mine = flags_of(s, s.rank);
  const unsigned blocks = gridDim.x;
  for (unsigned i = threadIdx.x; i < s.nranks * blocks; i += blockDim.x) {
    SystemWord f(mine[(i / blocks) * kBlocks + i % blocks]);
    unsigned spins = 0;
    while (f.load(cuda::memory_order_acquire) < epoch) {
      if (++spins % kAbortEvery == 0 && (*s.abort != 0 || *(volatile int*)&st.stop != 0)) {
        st.stop = 1;
        break;
      }
      __nanosleep(32);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    st.barriers = epoch;  // every thread has read the old value above
  }
  __syncthreads();
  return st.stop == 0;
}

}  // namespace nccl_core::fast::dev
