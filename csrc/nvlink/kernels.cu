#include "nvlink/kernels.h"

#include <cstdint>
#include <type_traits>

#include "nvlink/call_state.cuh"
#include "nvlink/launcher.h"
#include "nvlink/one_way.h"
#include "nccl/api.h"
#include "util/reduce.cuh"

namespace nccl_core::nvlink {

namespace {

__device__ __forceinline__ size_t smin(size_t a, size_t b) { return a < b ? a : b; }

// 16-byte packs a thread loads before it stores or combines any of them, in
// the wide kernels.  A read of a peer's window over NVLink waits a round
// trip; with one pack in flight per thread a large call is bound by that
// latency, not by NVLink's bandwidth (the 512 KiB - 1 MiB rows ran faster
// with 64 blocks than 32 for the same reason).  A call whose threads get
// one pack each has nothing to overlap and pays for the wide loop's
// registers and bounds checks (+0.5-0.7 us a call at 64-256 KiB on 2xH200,
// 2026-11-28), so it takes the narrow kernel (wide_for below).
constexpr int kInFlight = 4;

template <bool Wide>
__device__ void copy_bytes(char* dst, const char* src, size_t n) {
  constexpr int U = Wide ? kInFlight : 1;
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t packs = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    packs = n / 16;
    const uint4* from = reinterpret_cast<const uint4*>(src);
    uint4* to = reinterpret_cast<uint4*>(dst);
    for (size_t base = first; base < packs; base += U * stride) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        size_t i = base + u * stride;
        if (i < packs) v[u] = from[i];
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        size_t i = base + u * stride;
        if (i < packs) to[i] = v[u];
      }
    }
  }
  for (size_t i = packs * 16 + first; i < n; i += stride) {
    dst[i] = src[i];
  }
}

// Every block of every rank: this block tells each rank it has arrived
// (release, after the block's stores), then waits until every block of every
// rank has (acquire).  False when the communicator was aborted meanwhile.
// A flag at this barrier's count with another call's signature is recorded
// (st.mismatch, s.fault) and the barrier completes as usual.
__device__ bool barrier(const Shared& s, BlockState& st, const CallTag& tag) {
  __syncthreads();
  const unsigned long long epoch = st.barriers + 1;
  if (threadIdx.x < s.nranks) {
    unsigned long long* f = flags_of(s, threadIdx.x) + s.rank * kMaxBlocks + blockIdx.x;
    __threadfence_system();
    SystemWord(*f).store((epoch << kSigBits) | st.sig, cuda::memory_order_release);
  }
  unsigned long long* mine = flags_of(s, s.rank);
  const int blocks = gridDim.x;
  for (int i = threadIdx.x; i < s.nranks * blocks; i += blockDim.x) {
    const int peer = i / blocks;
    SystemWord f(mine[peer * kMaxBlocks + i % blocks]);
    unsigned spins = 0;
    unsigned long long v;
    while (((v = f.load(cuda::memory_order_acquire)) >> kSigBits) < epoch) {
      if (should_stop(s, st, spins)) {
        break;
      }
    }
    if ((v >> kSigBits) == epoch && (v & kSigMask) != st.sig) {
      *(volatile int*)&st.mismatch = 1;
      record_fault(s.fault, peer, v & kSigMask, st.sig, tag.seq);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    st.barriers = epoch;  // every thread has read the old value above
  }
  __syncthreads();
  return st.stop == 0;
}

// out[i] = op over ranks of their staged element src_offset + i, for i in
// [lo, hi) (Vec: 16-byte packs instead of elements).  ToPeers: the result
// also goes to element i of every peer's staged copy (the two-shot's
// exchange; src_offset 0).
template <class T, int Op, bool Vec, bool Wide, bool ToPeers>
__device__ void reduce_range(const Shared& s, const BlockState& st, size_t src_offset, T* out,
                             size_t lo, size_t hi, typename Acc<T>::type scale) {
  using A = typename Acc<T>::type;
  T* src[kMaxRanks];
  for (int p = 0; p < s.nranks; ++p) {
    src[p] = reinterpret_cast<T*>(half_of(s, p, st)) + src_offset;
  }
  size_t first = lo + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  if constexpr (Vec) {
    constexpr int V = 16 / sizeof(T);
    // Half as many packs in flight for 1-byte types: 16 accumulators a pack.
    constexpr int U = !Wide ? 1 : V > 8 ? kInFlight / 2 : kInFlight;
    for (size_t base = first; base < hi; base += U * stride) {
      A acc[U][V];
      Pack<T> pk[U];
      // Every rank combines in rank order, so all get the same bits.
      for (int p = 0; p < s.nranks; ++p) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          size_t i = base + u * stride;
          pk[u].raw = i < hi ? reinterpret_cast<const uint4*>(src[p])[i] : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          for (int k = 0; k < V; ++k) {
            acc[u][k] = p == 0 ? to_acc(pk[u].v[k]) : combine<Op>(acc[u][k], to_acc(pk[u].v[k]));
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        size_t i = base + u * stride;
        if (i >= hi) {
          continue;
        }
        for (int k = 0; k < V; ++k) {
          pk[u].v[k] = from_acc<T>(Op == ncclAvg ? acc[u][k] * scale : acc[u][k]);
        }
        reinterpret_cast<uint4*>(out)[i] = pk[u].raw;
        if constexpr (ToPeers) {
          for (int p = 0; p < s.nranks; ++p) {
            if (p != s.rank) reinterpret_cast<uint4*>(src[p])[i] = pk[u].raw;
          }
        }
      }
    }
  } else {
    for (size_t i = first; i < hi; i += stride) {
      A acc = to_acc(src[0][i]);
      for (int p = 1; p < s.nranks; ++p) acc = combine<Op>(acc, to_acc(src[p][i]));
      T v = from_acc<T>(Op == ncclAvg ? acc * scale : acc);
      out[i] = v;
      if constexpr (ToPeers) {
        for (int p = 0; p < s.nranks; ++p) {
          if (p != s.rank) src[p][i] = v;
        }
      }
    }
  }
}

// One shot: every rank reduces all `count` outputs from every peer.
// Two shot (all_reduce only, src_offset 0): rank r reduces its chunk of
// `chunk` units from every rank's staged copy, writes the result to its
// output and stores it into every peer's copy at the same place, crosses a
// second barrier, then copies the other chunks out of its own copy.  A byte
// is loaded over NVLink once and stored once, instead of loaded nranks - 1
// times, which wins for larger calls.  The halves stay safe: between the two
// barriers chunk r of every copy is read and written by rank r alone, and a
// rank stages into a half again only after a barrier every peer reached
// once done with it.
template <class T, int Op, bool Vec, bool Wide>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(Shared s, const char* in, size_t in_bytes, T* out, size_t count,
                  size_t src_offset, size_t chunk, typename Acc<T>::type scale, CallTag tag) {
  __shared__ BlockState st;
  if (!begin(s, st, tag)) {
    leave(s, st, false, tag.ticket);
    return;
  }
  copy_bytes<Wide>(half_of(s, s.rank, st), in, in_bytes);
  if (!barrier(s, st, tag)) {
    leave(s, st, false, tag.ticket);
    return;
  }
  size_t units = Vec ? count / (16 / sizeof(T)) : count;
  if (chunk == 0) {
    if (!st.mismatch) {
      reduce_range<T, Op, Vec, Wide, false>(s, st, src_offset, out, 0, units, scale);
    }
  } else {
    size_t lo = smin(units, s.rank * chunk);
    size_t hi = smin(units, lo + chunk);
    if (!st.mismatch) {
      reduce_range<T, Op, Vec, Wide, true>(s, st, 0, out, lo, hi, scale);
    }
    // Crossed even after a mismatch: peers that did not see it wait here.
    if (!barrier(s, st, tag)) {
      leave(s, st, false, tag.ticket);
      return;
    }
    size_t unit_bytes = Vec ? 16 : sizeof(T);
    const char* mine = half_of(s, s.rank, st);
    for (int p = 0; p < s.nranks && !st.mismatch; ++p) {
      if (p == s.rank) {
        continue;  // written by the reduction
      }
      size_t plo = smin(units, p * chunk);
      size_t phi = smin(units, plo + chunk);
      copy_bytes<Wide>(reinterpret_cast<char*>(out) + plo * unit_bytes, mine + plo * unit_bytes,
                 (phi - plo) * unit_bytes);
    }
  }
  leave(s, st, true, tag.ticket);
}

template <bool Wide>
__global__ void __launch_bounds__(kThreads)
    copy_kernel(Shared s, const char* in, size_t in_bytes, char* out, size_t bytes,
                size_t src_offset, int first_peer, int npeers, CallTag tag) {
  __shared__ BlockState st;
  if (!begin(s, st, tag)) {
    leave(s, st, false, tag.ticket);
    return;
  }
  copy_bytes<Wide>(half_of(s, s.rank, st), in, in_bytes);
  if (!barrier(s, st, tag)) {
    leave(s, st, false, tag.ticket);
    return;
  }
  for (int q = 0; q < npeers && !st.mismatch; ++q) {
    copy_bytes<Wide>(out + static_cast<size_t>(q) * bytes,
                     half_of(s, first_peer + q, st) + src_offset, bytes);
  }
  leave(s, st, true, tag.ticket);
}

bool aligned16(uintptr_t v) { return (v & 15) == 0; }

// The grid of a call that moves `bytes` (the same on every rank: the
// barrier counts blocks).  Larger calls need more loads in flight over
// NVLink; small ones pay for every block at the barrier.  Measured on 2xH200
// (NVLink), 100 bf16 all_reduces in a CUDA graph, µs a call at 16 / 32 / 64
// blocks: 128 KiB 7.0 / 7.4 / 8.3, 256 KiB 8.8 / 7.8 / 8.9, 512 KiB
// 12.9 / 10.2 / 9.1, 1 MiB 19.7 / 13.7 / 11.2 (2026-11-27;
// beyond 2 ranks taken from 2).  Not 64: two of six graphs of 512 KiB -
// 1 MiB calls at 64 blocks took 54-57 µs a call, not yet understood (a
// guess: every block polls every peer block's flag, blocks squared).
unsigned blocks_for(const Shared& s, size_t bytes) {
  constexpr size_t KiB = 1024;
  int blocks = bytes <= 128 * KiB ? 16 : kMaxBlocks;
  return static_cast<unsigned>(blocks < s.max_blocks ? blocks : s.max_blocks);
}

// The wide kernels where a thread of `blocks` blocks gets two or more of the
// call's 16-byte packs (the stage of `bytes`); the narrow ones otherwise.
// Either kernel gives the same bits, so ranks need not agree on it.
bool wide_for(size_t bytes, unsigned blocks) {
  return bytes / 16 >= 2 * static_cast<size_t>(blocks) * kThreads;
}

// Launches fn's kernel template at Wide = wide.
template <class Fn>
void with_width(bool wide, Fn&& fn) {
  if (wide) {
    fn(std::true_type{});
  } else {
    fn(std::false_type{});
  }
}

}  // namespace

bool launch_reduce(const Shared& s, const void* in, size_t in_count, void* out, size_t count,
                   size_t src_offset, ncclDataType_t type, int op, size_t two_shot_min_bytes,
                   const CallTag& tag, cudaStream_t stream) {
  bool launched = false;
  // The chunk each peer gets: the whole input (all_reduce) or its own
  // (reduce_scatter).
  const bool all_reduce = src_offset == 0 && in_count == count;
  const bool scatter = in_count == count * static_cast<size_t>(s.nranks) &&
                       src_offset == static_cast<size_t>(s.rank) * count;
  visit_type(type, [&](auto tt) {
    using T = typename decltype(tt)::type;
    using A = typename Acc<T>::type;
    if ((all_reduce || scatter) && one_way_covers(s, count * sizeof(T))) {
      launched = launch_one_way_reduce(s, in, out, count, all_reduce ? 0 : count, type, op, tag,
                                       stream);
      return;
    }
    A scale = static_cast<A>(1.0 / s.nranks);
    // Wide loads need 16-byte alignment of every pointer the kernel forms.
    bool vec = aligned16(reinterpret_cast<uintptr_t>(out)) && aligned16(count * sizeof(T)) &&
               aligned16(src_offset * sizeof(T)) && aligned16(s.half);
    // Chunks are whole 16-byte packs and depend on the arguments only: every
    // rank must cut the same byte ranges whatever its local alignment.
    constexpr size_t V = 16 / sizeof(T);
    size_t chunk_elems = 0;
    if (all_reduce && s.nranks > 1 && two_shot_min_bytes > 0 &&
        count * sizeof(T) >= two_shot_min_bytes) {
      chunk_elems = ((count + s.nranks - 1) / s.nranks + V - 1) / V * V;
    }
    size_t chunk = vec ? chunk_elems / V : chunk_elems;
    const unsigned blocks = blocks_for(s, in_count * sizeof(T));
    const bool wide = wide_for(in_count * sizeof(T), blocks);
    launched = visit_op<T>(op, [&](auto ot) {
      constexpr int Op = decltype(ot)::value;
      const char* bytes_in = static_cast<const char*>(in);
      with_width(wide, [&](auto wt) {
        constexpr bool Wide = decltype(wt)::value;
        if (vec) {
          launch_kernel<reduce_kernel<T, Op, true, Wide>>(blocks, kThreads, stream, s, bytes_in,
                                                          in_count * sizeof(T), static_cast<T*>(out),
                                                          count, src_offset, chunk, scale, tag);
        } else {
          launch_kernel<reduce_kernel<T, Op, false, Wide>>(blocks, kThreads, stream, s, bytes_in,
                                                           in_count * sizeof(T), static_cast<T*>(out),
                                                           count, src_offset, chunk, scale, tag);
        }
      });
    });
  });
  return launched;
}

void launch_copy(const Shared& s, const void* in, size_t in_bytes, void* out, size_t bytes,
                 size_t src_offset, int first, int npeers, const CallTag& tag, cudaStream_t stream) {
  // One way where every rank sends its whole input or nothing (all_gather,
  // broadcast); not all_to_all, whose in-place call would overwrite chunks
  // before they are sent.
  if ((in_bytes == 0 || (in_bytes == bytes && src_offset == 0)) && one_way_covers(s, bytes)) {
    launch_one_way_copy(s, in, out, bytes, in_bytes > 0, first, npeers, tag, stream);
    return;
  }
  // Equal on every rank (a broadcast's root stages, the others read).
  size_t moved = bytes * static_cast<size_t>(npeers > 1 ? npeers : 1);
  const unsigned blocks = blocks_for(s, moved);
  // The stage moves in_bytes, the read `moved`: wide when the larger does.
  with_width(wide_for(in_bytes > moved ? in_bytes : moved, blocks), [&](auto wt) {
    launch_kernel<copy_kernel<decltype(wt)::value>>(blocks, kThreads, stream, s,
                                                    static_cast<const char*>(in), in_bytes,
                                                    static_cast<char*>(out), bytes, src_offset,
                                                    first, npeers, tag);
  });
}

}  // namespace nccl_core::nvlink
