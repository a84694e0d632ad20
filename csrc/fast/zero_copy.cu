#include "fast/zero_copy.h"

#include <cstdint>

#include "fast/device.cuh"
#include "nccl/api.h"
#include "util/reduce.cuh"

namespace nccl_core::fast {

namespace {

constexpr int kThreads = 512;
// Loads each thread keeps in flight per peer: NVLink latency is hidden by
// many outstanding loads, not by more threads.
constexpr int kUnroll = 4;

// Bounds of the data kernels' work, in units (16-byte packs, or elements /
// bytes when the tensor is not 16-byte aligned): this rank's chunk is
// [lo, hi) of [0, units).
struct Range {
  size_t units;
  size_t lo;
  size_t hi;
};

// One block: every rank's kernels before it on this stream are done here
// and, after it, everywhere.  Not a call of its own for the counters.
__global__ void barrier_kernel(Shared s) {
  __shared__ dev::BlockState st;
  dev::begin(s, st);
  dev::barrier(s, st);
  dev::end(s, st, /*count_call=*/false);
}

// Peers' memory is read through L2 only: L1 is not coherent with other GPUs.
__device__ __forceinline__ uint4 load_peer(const uint4* p) { return __ldcg(p); }

template <size_t N> struct BitsOf;
template <> struct BitsOf<1> { using type = unsigned char; };
template <> struct BitsOf<2> { using type = unsigned short; };
template <> struct BitsOf<4> { using type = unsigned int; };
template <> struct BitsOf<8> { using type = unsigned long long; };

// One element, bypassing L1 (a volatile load of its bits).
template <class T>
__device__ __forceinline__ T load_peer(const T* p) {
  using B = typename BitsOf<sizeof(T)>::type;
  B b = *reinterpret_cast<const volatile B*>(p);
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}

// Own chunk, 16-byte packs: buf[rank][i] = op over ranks q of buf[q][i].
// Peers are visited starting after this rank so that the ranks spread their
// first reads over different links.
template <class T, int Op>
__global__ void __launch_bounds__(kThreads)
    reduce_packs(Peers p, int nranks, int rank, Range r, typename Acc<T>::type scale) {
  using A = typename Acc<T>::type;
  constexpr int V = 16 / sizeof(T);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  auto* mine = reinterpret_cast<uint4*>(p.buf[rank]);
  for (size_t base = r.lo + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       base < r.hi; base += kUnroll * stride) {
    A acc[kUnroll][V];
    uint4 raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * stride;
      raw[u] = i < r.hi ? mine[i] : uint4{};
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      Pack<T> pk;
      pk.raw = raw[u];
#pragma unroll
      for (int k = 0; k < V; ++k) acc[u][k] = to_acc(pk.v[k]);
    }
    for (int step = 1; step < nranks; ++step) {
      const auto* src = reinterpret_cast<const uint4*>(p.buf[(rank + step) % nranks]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t i = base + u * stride;
        raw[u] = i < r.hi ? load_peer(src + i) : uint4{};
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        Pack<T> pk;
        pk.raw = raw[u];
#pragma unroll
        for (int k = 0; k < V; ++k) acc[u][k] = combine<Op>(acc[u][k], to_acc(pk.v[k]));
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * stride;
      if (i < r.hi) {
        Pack<T> pk;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          pk.v[k] = from_acc<T>(Op == ncclAvg ? acc[u][k] * scale : acc[u][k]);
        }
        mine[i] = pk.raw;
      }
    }
  }
}

// Own chunk, element by element (a tensor that is not 16-byte aligned).
template <class T, int Op>
__global__ void __launch_bounds__(kThreads)
    reduce_elements(Peers p, int nranks, int rank, Range r, typename Acc<T>::type scale) {
  using A = typename Acc<T>::type;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  T* mine = reinterpret_cast<T*>(p.buf[rank]);
  for (size_t i = r.lo + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < r.hi;
       i += stride) {
    A acc = to_acc(mine[i]);
    for (int step = 1; step < nranks; ++step) {
      const T* src = reinterpret_cast<const T*>(p.buf[(rank + step) % nranks]);
      acc = combine<Op>(acc, to_acc(load_peer(src + i)));
    }
    mine[i] = from_acc<T>(Op == ncclAvg ? acc * scale : acc);
  }
}

// Every other chunk from its owner: unit i of [0, units) outside [lo, hi)
// comes from rank i / chunk.  U: uint4 (packs) or unsigned char (bytes).
template <class U>
__global__ void __launch_bounds__(kThreads)
    gather_chunks(Peers p, int rank, Range r, size_t chunk) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t others = r.units - (r.hi - r.lo);
  U* mine = reinterpret_cast<U*>(p.buf[rank]);
  for (size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; base < others;
       base += kUnroll * stride) {
    U v[kUnroll];
    size_t at[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t j = base + u * stride;
      at[u] = j < r.lo ? j : j + (r.hi - r.lo);
      if (j < others) {
        const U* src = reinterpret_cast<const U*>(p.buf[at[u] / chunk]) + at[u];
        v[u] = load_peer(src);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * stride < others) {
        mine[at[u]] = v[u];
      }
    }
  }
}

int grid_for(size_t units, int blocks) {
  size_t per_block = static_cast<size_t>(kThreads) * kUnroll;
  size_t want = (units + per_block - 1) / per_block;
  return static_cast<int>(want < 1 ? 1 : (want < static_cast<size_t>(blocks) ? want : blocks));
}

// Chunks depend on the arguments only, so every rank cuts the same ranges;
// whole kilobytes keep each rank's reads in full cache lines.
size_t chunk_units(size_t units, int nranks, size_t unit_bytes) {
  size_t align = unit_bytes >= 1024 ? 1 : 1024 / unit_bytes;
  size_t per = (units + nranks - 1) / nranks;
  return (per + align - 1) / align * align;
}

Range range_of(size_t units, size_t chunk, int rank) {
  size_t lo = units < rank * chunk ? units : rank * chunk;
  size_t hi = units < lo + chunk ? units : lo + chunk;
  return Range{units, lo, hi};
}

}  // namespace

bool launch_zero_copy(const Shared& s, const Peers& peers, size_t count, ncclDataType_t type,
                      int op, int blocks, cudaStream_t stream) {
  bool launched = false;
  visit_type(type, [&](auto tt) {
    using T = typename decltype(tt)::type;
    using A = typename Acc<T>::type;
    const A scale = static_cast<A>(1.0 / s.nranks);
    const size_t bytes = count * sizeof(T);
    // The offset of the tensor in its allocation is the same on every rank,
    // and so is this choice.
    const bool vec = (reinterpret_cast<uintptr_t>(peers.buf[s.rank]) & 15) == 0 && bytes % 16 == 0;
    launched = visit_op<T>(op, [&](auto ot) {
      constexpr int Op = decltype(ot)::value;
      barrier_kernel<<<1, 32, 0, stream>>>(s);
      if (vec) {
        size_t units = bytes / 16;
        size_t chunk = chunk_units(units, s.nranks, 16);
        Range r = range_of(units, chunk, s.rank);
        int grid = grid_for(chunk, blocks);
        reduce_packs<T, Op><<<grid, kThreads, 0, stream>>>(peers, s.nranks, s.rank, r, scale);
        barrier_kernel<<<1, 32, 0, stream>>>(s);
        gather_chunks<uint4><<<grid_for(units - (r.hi - r.lo), blocks), kThreads, 0, stream>>>(
            peers, s.rank, r, chunk);
      } else {
        size_t chunk = chunk_units(count, s.nranks, sizeof(T));
        Range r = range_of(count, chunk, s.rank);
        reduce_elements<T, Op>
            <<<grid_for(chunk, blocks), kThreads, 0, stream>>>(peers, s.nranks, s.rank, r, scale);
        barrier_kernel<<<1, 32, 0, stream>>>(s);
        Range rb{bytes, r.lo * sizeof(T), r.hi * sizeof(T)};
        gather_chunks<unsigned char>
            <<<grid_for(bytes - (rb.hi - rb.lo), blocks), kThreads, 0, stream>>>(
                peers, s.rank, rb, chunk * sizeof(T));
      }
      barrier_kernel<<<1, 32, 0, stream>>>(s);
    });
  });
  if (launched) {
    NCCL_CORE_CUDA_CHECK(cudaGetLastError());
  }
  return launched;
}

}  // namespace nccl_core::fast
