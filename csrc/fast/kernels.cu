#include "fast/kernels.h"

#include <cstdint>

#include "fast/device.cuh"
#include "nccl/api.h"
#include "util/reduce.cuh"

namespace nccl_core::fast {

namespace {

using dev::BlockState;
using dev::half_of;
using dev::smin;

constexpr int kThreads = 512;

// out[i] = op over ranks of their staged element src_offset + i, for i in
// [lo, hi) (Vec: 16-byte packs instead of elements).
template <class T, int Op, bool Vec>
__device__ void reduce_range(const Shared& s, const BlockState& st, size_t src_offset, T* out,
                             size_t lo, size_t hi, typename Acc<T>::type scale) {
  using A = typename Acc<T>::type;
  const T* src[kMaxRanks];
  for (int p = 0; p < s.nranks; ++p) {
    src[p] = reinterpret_cast<const T*>(half_of(s, p, st)) + src_offset;
  }
  size_t first = lo + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  if constexpr (Vec) {
    constexpr int V = 16 / sizeof(T);
    for (size_t i = first; i < hi; i += stride) {
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
    for (size_t i = first; i < hi; i += stride) {
      A acc = to_acc(src[0][i]);
      for (int p = 1; p < s.nranks; ++p) acc = combine<Op>(acc, to_acc(src[p][i]));
      out[i] = from_acc<T>(Op == ncclAvg ? acc * scale : acc);
    }
  }
}

// One shot: every rank reduces all `count` outputs from every peer.
// Two shot (all_reduce only, src_offset 0): rank r reduces its chunk of
// `chunk` units in place in its own half, crosses a second barrier, then
// copies every rank's reduced chunk: each byte crosses NVLink twice instead
// of nranks - 1 times, which wins for larger calls.
template <class T, int Op, bool Vec>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(Shared s, const char* in, size_t in_bytes, T* out, size_t count,
                  size_t src_offset, size_t chunk, typename Acc<T>::type scale) {
  __shared__ BlockState st;
  dev::begin(s, st);
  dev::copy_bytes(half_of(s, s.rank, st), in, in_bytes);
  if (!dev::barrier(s, st)) {
    return;
  }
  size_t units = Vec ? count / (16 / sizeof(T)) : count;
  if (chunk == 0) {
    reduce_range<T, Op, Vec>(s, st, src_offset, out, 0, units, scale);
  } else {
    size_t lo = smin(units, s.rank * chunk);
    size_t hi = smin(units, lo + chunk);
    T* mine = reinterpret_cast<T*>(half_of(s, s.rank, st));
    reduce_range<T, Op, Vec>(s, st, 0, mine, lo, hi, scale);
    if (!dev::barrier(s, st)) {
      return;
    }
    size_t unit_bytes = Vec ? 16 : sizeof(T);
    for (int p = 0; p < s.nranks; ++p) {
      size_t plo = smin(units, p * chunk);
      size_t phi = smin(units, plo + chunk);
      dev::copy_bytes(reinterpret_cast<char*>(out) + plo * unit_bytes,
                 half_of(s, p, st) + plo * unit_bytes, (phi - plo) * unit_bytes);
    }
  }
  dev::end(s, st);
}

__global__ void __launch_bounds__(kThreads)
    copy_kernel(Shared s, const char* in, size_t in_bytes, char* out, size_t bytes,
                size_t src_offset, int first_peer, int npeers) {
  __shared__ BlockState st;
  dev::begin(s, st);
  dev::copy_bytes(half_of(s, s.rank, st), in, in_bytes);
  if (!dev::barrier(s, st)) {
    return;
  }
  for (int q = 0; q < npeers; ++q) {
    dev::copy_bytes(out + static_cast<size_t>(q) * bytes, half_of(s, first_peer + q, st) + src_offset,
               bytes);
  }
  dev::end(s, st);
}

bool aligned16(uintptr_t v) { return (v & 15) == 0; }

// All-reduces from this size on, over more than two ranks, take two shots: one
// extra barrier (~2-3 µs) against reading (nranks - 1) / nranks of the data
// twice instead of nranks - 1 times; the crossover on NVLink is near 0.5 MiB.
constexpr size_t kTwoShotBytes = size_t(1) << 20;

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
    // Chunks are whole 16-byte packs and depend on the arguments only: every
    // rank must cut the same byte ranges whatever its local alignment.
    constexpr size_t V = 16 / sizeof(T);
    bool all_reduce = src_offset == 0 && in_count == count;
    size_t chunk_elems = 0;
    if (all_reduce && s.nranks > 2 && count * sizeof(T) >= kTwoShotBytes) {
      chunk_elems = ((count + s.nranks - 1) / s.nranks + V - 1) / V * V;
    }
    size_t chunk = vec ? chunk_elems / V : chunk_elems;
    launched = visit_op<T>(op, [&](auto ot) {
      constexpr int Op = decltype(ot)::value;
      const char* bytes_in = static_cast<const char*>(in);
      if (vec) {
        reduce_kernel<T, Op, true><<<kBlocks, kThreads, 0, stream>>>(
            s, bytes_in, in_count * sizeof(T), static_cast<T*>(out), count, src_offset, chunk,
            scale);
      } else {
        reduce_kernel<T, Op, false><<<kBlocks, kThreads, 0, stream>>>(
            s, bytes_in, in_count * sizeof(T), static_cast<T*>(out), count, src_offset, chunk,
            scale);
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
