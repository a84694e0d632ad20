#include "nvlink/one_way.h"

#include <cstdint>

#include "nvlink/call_state.cuh"
#include "nvlink/launcher.h"
#include "util/reduce.cuh"

namespace nccl_core::nvlink {

namespace {

// The slot rank `sender` writes in rank `owner`'s area, in the half of this
// call's parity.
__device__ __forceinline__ char* slot_of(const Shared& s, int owner, int sender,
                                         const BlockState& st) {
  size_t index = (st.call & 1) * static_cast<size_t>(s.nranks) + static_cast<size_t>(sender);
  return s.window[owner] + kFlagBytes + 2 * s.half + index * s.one_way_slot;
}

// A line: two 8-byte halves, {data word, flag}, each stored whole.
__device__ __forceinline__ void store_line(char* at, uint2 data, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(at), "r"(data.x),
               "r"(flag), "r"(data.y), "r"(flag)
               : "memory");
}

__device__ __forceinline__ uint4 load_line(const char* at) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(at)
               : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long load_word(const char* at) {
  unsigned long long v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(at) : "memory");
  return v;
}

__device__ __forceinline__ void store_word(char* at, unsigned long long v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(at), "l"(v) : "memory");
}

// Line `i` of a peer's slot once it carries this call's flags; zeros when
// the wait was given up (st.stop is then set).
__device__ __forceinline__ uint2 wait_line(const Shared& s, BlockState& st, const char* slot,
                                           size_t i, uint32_t flag) {
  const char* at = slot + 16 * (i + 1);  // line 0 is the header
  unsigned spins = 0;
  for (;;) {
    uint4 v = load_line(at);
    if (v.y == flag && v.w == flag) {
      return make_uint2(v.x, v.z);
    }
    if (should_stop(s, st, spins)) {
      return make_uint2(0, 0);
    }
  }
}

// Bytes [8i, 8i + 8) of `base` (of `bytes`), zeros past its end.
__device__ __forceinline__ uint2 load8(const char* base, size_t i, size_t bytes) {
  const char* at = base + kOneWayLineData * i;
  if ((reinterpret_cast<uintptr_t>(at) & 7) == 0 && kOneWayLineData * (i + 1) <= bytes) {
    return *reinterpret_cast<const uint2*>(at);
  }
  union { uint2 w; unsigned char b[8]; } u;
  u.w = make_uint2(0, 0);
  for (size_t k = 0; k < kOneWayLineData && kOneWayLineData * i + k < bytes; ++k) {
    u.b[k] = static_cast<unsigned char>(at[k]);
  }
  return u.w;
}

// Bytes [8i, 8i + 8) of `base` (of `bytes`), none past its end.
__device__ __forceinline__ void store8(char* base, size_t i, size_t bytes, uint2 v) {
  char* at = base + kOneWayLineData * i;
  if ((reinterpret_cast<uintptr_t>(at) & 7) == 0 && kOneWayLineData * (i + 1) <= bytes) {
    *reinterpret_cast<uint2*>(at) = v;
    return;
  }
  union { uint2 w; unsigned char b[8]; } u;
  u.w = v;
  for (size_t k = 0; k < kOneWayLineData && kOneWayLineData * i + k < bytes; ++k) {
    at[k] = static_cast<char>(u.b[k]);
  }
}

// Block 0 sends every peer this call's header; every block then waits for
// every peer's header of this call and compares signatures.  False when the
// block must write nothing: a peer's call differs (recorded), or an abort.
__device__ bool exchange_headers(const Shared& s, BlockState& st, const CallTag& tag,
                                 uint32_t flag) {
  const int t = threadIdx.x;
  const unsigned long long header = (static_cast<unsigned long long>(flag) << 32) | st.sig;
  if (blockIdx.x == 0 && t < s.nranks && t != s.rank) {
    store_word(slot_of(s, t, s.rank, st), header);
  }
  if (t < s.nranks && t != s.rank) {
    const char* at = slot_of(s, s.rank, t, st);
    unsigned spins = 0;
    unsigned long long v;
    while (((v = load_word(at)) >> 32) != flag) {
      if (should_stop(s, st, spins)) {
        break;
      }
    }
    if ((v >> 32) == flag && (v & kSigMask) != st.sig) {
      *(volatile int*)&st.mismatch = 1;
      record_fault(s.fault, t, v & kSigMask, st.sig, tag.seq);
    }
  }
  __syncthreads();
  return st.stop == 0 && st.mismatch == 0;
}

// The lines' flag: which of its half's calls this is, plus one (never the
// zeros the area starts with), modulo 2^32 (one_way.h).
__device__ __forceinline__ uint32_t flag_of(const BlockState& st) {
  return static_cast<uint32_t>((st.call >> 1) + 1);
}

template <class T, int Op>
__global__ void __launch_bounds__(kThreads)
    one_way_reduce_kernel(Shared s, const char* in, T* out, size_t count, size_t stride_bytes,
                          typename Acc<T>::type scale, CallTag tag) {
  using A = typename Acc<T>::type;
  constexpr int V = kOneWayLineData / sizeof(T);
  __shared__ BlockState st;
  const size_t bytes = count * sizeof(T);
  const size_t lines = (bytes + kOneWayLineData - 1) / kOneWayLineData;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t step = static_cast<size_t>(gridDim.x) * blockDim.x;
  const char* own = in + s.rank * stride_bytes;
  // The thread's first own line, loaded while begin() reads the counters,
  // then sent (all_reduce) and combined from the register.
  const uint2 own_first = first < lines ? load8(own, first, bytes) : make_uint2(0, 0);
  if (!begin(s, st, tag)) {
    leave(s, st, false, tag.ticket);
    return;
  }
  const uint32_t flag = flag_of(st);
  for (size_t i = first; i < lines; i += step) {
    const uint2 mine = i == first ? own_first : load8(own, i, bytes);
    for (int p = 0; p < s.nranks; ++p) {
      if (p == s.rank) {
        continue;
      }
      uint2 d = stride_bytes == 0 ? mine : load8(in + p * stride_bytes, i, bytes);
      store_line(slot_of(s, p, s.rank, st) + 16 * (i + 1), d, flag);
    }
  }
  if (!exchange_headers(s, st, tag, flag)) {
    leave(s, st, st.stop == 0, tag.ticket);
    return;
  }
  for (size_t i = first; i < lines && !*(volatile int*)&st.stop; i += step) {
    A acc[V];
    // Every rank combines in rank order, so all get the same bits.
    for (int q = 0; q < s.nranks; ++q) {
      union { uint2 w; T v[V]; } u;
      if (q == s.rank) {
        u.w = i == first ? own_first : load8(own, i, bytes);
      } else {
        u.w = wait_line(s, st, slot_of(s, s.rank, q, st), i, flag);
      }
#pragma unroll
      for (int k = 0; k < V; ++k) {
        acc[k] = q == 0 ? to_acc(u.v[k]) : combine<Op>(acc[k], to_acc(u.v[k]));
      }
    }
    if (*(volatile int*)&st.stop) {
      break;
    }
    union { uint2 w; T v[V]; } r;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      r.v[k] = from_acc<T>(Op == ncclAvg ? acc[k] * scale : acc[k]);
    }
    store8(reinterpret_cast<char*>(out), i, bytes, r.w);
  }
  __syncthreads();
  leave(s, st, st.stop == 0, tag.ticket);
}

__global__ void __launch_bounds__(kThreads)
    one_way_copy_kernel(Shared s, const char* in, char* out, size_t bytes, int send, int first_peer,
                        int npeers, CallTag tag) {
  __shared__ BlockState st;
  const size_t lines = (bytes + kOneWayLineData - 1) / kOneWayLineData;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t step = static_cast<size_t>(gridDim.x) * blockDim.x;
  // The thread's first line of input, loaded while begin() reads the counters.
  const uint2 in_first = send && first < lines ? load8(in, first, bytes) : make_uint2(0, 0);
  if (!begin(s, st, tag)) {
    leave(s, st, false, tag.ticket);
    return;
  }
  const uint32_t flag = flag_of(st);
  if (send) {
    for (size_t i = first; i < lines; i += step) {
      uint2 d = i == first ? in_first : load8(in, i, bytes);
      for (int p = 0; p < s.nranks; ++p) {
        if (p != s.rank) store_line(slot_of(s, p, s.rank, st) + 16 * (i + 1), d, flag);
      }
    }
  }
  if (!exchange_headers(s, st, tag, flag)) {
    leave(s, st, st.stop == 0, tag.ticket);
    return;
  }
  for (int q = first_peer; q < first_peer + npeers && !*(volatile int*)&st.stop; ++q) {
    char* dst = out + static_cast<size_t>(q - first_peer) * bytes;
    if (q == s.rank && dst == in) {
      continue;  // in place
    }
    for (size_t i = first; i < lines; i += step) {
      uint2 d = q == s.rank ? (i == first && send ? in_first : load8(in, i, bytes))
                            : wait_line(s, st, slot_of(s, s.rank, q, st), i, flag);
      if (*(volatile int*)&st.stop) {
        break;
      }
      store8(dst, i, bytes, d);
    }
  }
  __syncthreads();
  leave(s, st, st.stop == 0, tag.ticket);
}

// One thread a line, at most the group's one-way cap (kOneWayMaxBlocks, or
// fewer where the GPU has fewer multiprocessors: every block resident, since
// a block waits on peers, never on another block of its rank, but peers'
// blocks wait on it).  More blocks than the barrier kernels' 32: a thread
// waits out one line's trip at a time, so 256 KiB - 512 KiB calls ran 14-24 %
// faster with 128 blocks (bench/results/path-table-h200-2026-11-29.md).
// Ranks need not agree on the grid: nothing counts blocks across ranks.
unsigned blocks_for_lines(const Shared& s, size_t bytes) {
  size_t lines = (bytes + kOneWayLineData - 1) / kOneWayLineData;
  size_t blocks = (lines + kThreads - 1) / kThreads;
  size_t cap = static_cast<size_t>(s.one_way_max_blocks);
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks < cap ? blocks : cap);
}

}  // namespace

bool launch_one_way_reduce(const Shared& s, const void* in, void* out, size_t count,
                           size_t stride, ncclDataType_t type, int op, const CallTag& tag,
                           cudaStream_t stream) {
  bool launched = false;
  visit_type(type, [&](auto tt) {
    using T = typename decltype(tt)::type;
    using A = typename Acc<T>::type;
    A scale = static_cast<A>(1.0 / s.nranks);
    const unsigned blocks = blocks_for_lines(s, count * sizeof(T));
    launched = visit_op<T>(op, [&](auto ot) {
      constexpr int Op = decltype(ot)::value;
      launch_kernel<one_way_reduce_kernel<T, Op>>(blocks, kThreads, stream, s,
                                                  static_cast<const char*>(in),
                                                  static_cast<T*>(out), count,
                                                  stride * sizeof(T), scale, tag);
    });
  });
  return launched;
}

void launch_one_way_copy(const Shared& s, const void* in, void* out, size_t bytes, bool send,
                         int first, int npeers, const CallTag& tag, cudaStream_t stream) {
  launch_kernel<one_way_copy_kernel>(blocks_for_lines(s, bytes), kThreads, stream, s,
                                     static_cast<const char*>(in), static_cast<char*>(out), bytes,
                                     send ? 1 : 0, first, npeers, tag);
}

}  // namespace nccl_core::nvlink
