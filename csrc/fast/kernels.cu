#include "fast/kernels.h"

#include <cuda/atomic>

#include <cstdint>

#include "nccl/api.h"
#include "util/reduce.cuh"

namespace nccl_core::fast {

namespace {

constexpr int kThreads = 512;
// Barrier polls between two reads of the (host-mapped, slow) abort flag.
constexpr unsigned kAbortEvery = 256;

using SystemWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__device__ __forceinline__ unsigned long long* flags_of(const Shared& s, int rank) {
  return reinterpret_cast<unsigned long long*>(s.window[rank]);
}

__device__ __forceinline__ char* half_of(const Shared& s, int rank, unsigned long long epoch) {
  return s.window[rank] + kFlagBytes + (epoch & 1) * s.half;
}

// Per-block state: the call's epoch and whether the barrier was abandoned.
struct BlockState {
  unsigned long long epoch;
  int stop;
};

__device__ __forceinline__ unsigned long long begin(const Shared& s, BlockState& st) {
  if (threadIdx.x == 0) {
    st.epoch = *s.epoch + 1;
    st.stop = 0;
  }
  __syncthreads();
  return st.epoch;
}

// The last block to leave cannot be ahead of a block that has not read the
// epoch yet: every block reads it before it signals the barrier.
__device__ __forceinline__ void end(const Shared& s, unsigned long long epoch) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *s.epoch = epoch;
  }
}

__device__ void copy_bytes(char* dst, const char* src, size_t n) {
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

// Every block of every rank: this block tells each rank it has arrived
// (release, after the block's stores), then waits until every block of every
// rank has (acquire).  False when the communicator was aborted meanwhile.
__device__ bool barrier(const Shared& s, BlockState& st, unsigned long long epoch) {
  __syncthreads();
  if (threadIdx.x < s.nranks) {
    unsigned long long* f = flags_of(s, threadIdx.x) + s.rank * kBlocks + blockIdx.x;
    __threadfence_system();
    SystemWord(*f).store(epoch, cuda::memory_order_release);
  }
  unsigned long long* mine = flags_of(s, s.rank);
  for (int i = threadIdx.x; i < s.nranks * kBlocks; i += blockDim.x) {
    SystemWord f(mine[i]);
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
  return st.stop == 0;
}

template <class T, int Op, bool Vec>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(Shared s, const char* in, size_t in_bytes, T* out, size_t count,
                  size_t src_offset, typename Acc<T>::type scale) {
  using A = typename Acc<T>::type;
  __shared__ BlockState st;
  unsigned long long epoch = begin(s, st);
  copy_bytes(half_of(s, s.rank, epoch), in, in_bytes);
  if (!barrier(s, st, epoch)) {
    return;
  }
  const T* src[kMaxRanks];
  for (int p = 0; p < s.nranks; ++p) {
    src[p] = reinterpret_cast<const T*>(half_of(s, p, epoch)) + src_offset;
  }
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  if constexpr (Vec) {
    constexpr int V = 16 / sizeof(T);
    size_t packs = count / V;
    for (size_t i = first; i < packs; i += stride) {
      A acc[V];
      Pack<T> pk;
      pk.raw = reinterpret_cast<const uint4*>(src[0])[i];
      for (int k = 0; k < V; ++k) acc[k] = to_acc(pk.v[k]);
      for (int p = 1; p < s.nranks; ++p) {
        pk.raw = reinterpret_cast<const uint4*>(src[p])[i];
        for (int k = 0; k < V; ++k) acc[k] = combine<Op>(acc[k], to_acc(pk.v[k]));
      }
      for (int k = 0; k < V; ++k) pk.v[k] = from_acc<T>(Op == ncclAvg ? acc[k] * scale : acc[k]);
      reinterpret_cast<uint4*>(out)[i] = pk.raw;
    }
  } else {
    for (size_t i = first; i < count; i += stride) {
      A acc = to_acc(src[0][i]);
      for (int p = 1; p < s.nranks; ++p) acc = combine<Op>(acc, to_acc(src[p][i]));
      out[i] = from_acc<T>(Op == ncclAvg ? acc * scale : acc);
    }
  }
  end(s, epoch);
}

__global__ void __launch_bounds__(kThreads)
    copy_kernel(Shared s, const char* in, size_t in_bytes, char* out, size_t bytes,
                size_t src_offset, int first_peer, int npeers) {
  __shared__ BlockState st;
  unsigned long long epoch = begin(s, st);
  copy_bytes(half_of(s, s.rank, epoch), in, in_bytes);
  if (!barrier(s, st, epoch)) {
    return;
  }
  for (int q = 0; q < npeers; ++q) {
    copy_bytes(out + static_cast<size_t>(q) * bytes, half_of(s, first_peer + q, epoch) + src_offset,
               bytes);
  }
  end(s, epoch);
}

bool aligned16(uintptr_t v) { return (v & 15) == 0; }

}  // namespace

bool launch_reduce(const Shared& s, const void* in, size_t in_count, void* out, size_t count,
                   size_t src_offset, ncclDataType_t type, int op, cudaStream_t stream) {
  bool launched = false;
  visit_type(type, [&](auto tt) {
    using T = typename decltype(tt)::type;
    using A = typename Acc<T>::type;
    A scale = static_cast<A>(1.0 / s.nranks);
    // Wide loads need 16-byte alignment of every pointer the kernel forms.
    bool vec = aligned16(reinterpret_cast<uintptr_t>(out)) && aligned16(count * sizeof(T)) &&
               aligned16(src_offset * sizeof(T)) && aligned16(s.half);
    launched = visit_op<T>(op, [&](auto ot) {
      constexpr int Op = decltype(ot)::value;
      const char* bytes_in = static_cast<const char*>(in);
      if (vec) {
        reduce_kernel<T, Op, true><<<kBlocks, kThreads, 0, stream>>>(
            s, bytes_in, in_count * sizeof(T), static_cast<T*>(out), count, src_offset, scale);
      } else {
        reduce_kernel<T, Op, false><<<kBlocks, kThreads, 0, stream>>>(
            s, bytes_in, in_count * sizeof(T), static_cast<T*>(out), count, src_offset, scale);
      }
    });
  });
  if (launched) {
    NCCL_CORE_CUDA_CHECK(cudaGetLastError());
  }
  return launched;
}

void launch_copy(const Shared& s, const void* in, size_t in_bytes, void* out, size_t bytes,
                 size_t src_offset, int first, int npeers, cudaStream_t stream) {
  copy_kernel<<<kBlocks, kThreads, 0, stream>>>(s, static_cast<const char*>(in), in_bytes,
                                                static_cast<char*>(out), bytes, src_offset,
                                                first, npeers);
  NCCL_CORE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace nccl_core::fast
