#include "nvlink/push.h"

#include <cuda/atomic>

#include <cstdint>

#include "nvlink/launcher.h"
#include "util/reduce.cuh"

namespace nccl_core::nvlink {

namespace {

constexpr int kThreads = 512;
// Packs each thread keeps in flight: NVLink latency is hidden by many
// outstanding accesses, not by more threads.
constexpr int kUnroll = 4;
constexpr size_t kStep = static_cast<size_t>(kThreads) * kUnroll;
// Flag polls between two reads of the (host-mapped, slow) abort flag.
constexpr unsigned kAbortEvery = 256;
// A block gets at least this many packs of each chunk (32 KiB): fewer blocks
// for smaller calls, where more would only add flags to wait on.
constexpr size_t kMinPacksPerBlock = 2048;

using SystemWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

// Cut of one call, the same on every rank (arguments only): chunk q is packs
// [q * chunk, q * chunk + len(q)) of the tensor.
struct Cut {
  size_t units;  // 16-byte packs in the tensor
  size_t chunk;
  __device__ size_t len(int q) const {
    size_t lo = q * chunk;
    return lo >= units ? 0 : (units - lo < chunk ? units - lo : chunk);
  }
  // This block's slice [lo, hi) within chunk q.
  __device__ void slice(int q, size_t& lo, size_t& hi) const {
    size_t n = len(q);
    lo = n * blockIdx.x / gridDim.x;
    hi = n * (blockIdx.x + 1) / gridDim.x;
  }
};

__device__ __forceinline__ unsigned long long* flag(const PushShared& s, int at, int phase,
                                                    int source) {
  auto* f = reinterpret_cast<unsigned long long*>(s.staging[at]);
  return f + (static_cast<size_t>(phase) * kMaxRanks + source) * kPushMaxBlocks + blockIdx.x;
}

// Rank `at`'s input slot for what `source` sends it (first half).
__device__ __forceinline__ uint4* slot(const PushShared& s, int at, int source) {
  int k = (source - at - 1 + s.nranks) % s.nranks;
  return reinterpret_cast<uint4*>(s.staging[at] + kPushFlagBytes + k * s.slot_bytes);
}

// Rank `at`'s result slot for chunk `source`, reduced by `source` (second
// half: never where any call's input lands).
__device__ __forceinline__ uint4* result_slot(const PushShared& s, int at, int source) {
  return slot(s, at, source) + (s.nranks - 1) * s.slot_bytes / 16;
}

// Pack i of this rank's tensor, read or written with the widest access its
// address allows (only this rank touches it, so its alignment is its own).
template <class W>
__device__ __forceinline__ uint4 load_as(const char* p) {
  uint4 v;
  auto* d = reinterpret_cast<W*>(&v);
  const auto* q = reinterpret_cast<const W*>(p);
#pragma unroll
  for (int k = 0; k < int(16 / sizeof(W)); ++k) d[k] = q[k];
  return v;
}

template <class W>
__device__ __forceinline__ void store_as(char* p, const uint4& v) {
  const auto* d = reinterpret_cast<const W*>(&v);
  auto* q = reinterpret_cast<W*>(p);
#pragma unroll
  for (int k = 0; k < int(16 / sizeof(W)); ++k) q[k] = d[k];
}

__device__ __forceinline__ uint4 load_mine(const PushShared& s, size_t i) {
  const char* p = s.data + i * 16;
  switch (s.data_align) {
    case 16: return __ldcg(reinterpret_cast<const uint4*>(p));
    case 8: return load_as<unsigned long long>(p);
    case 4: return load_as<unsigned>(p);
    case 2: return load_as<unsigned short>(p);
    default: return load_as<unsigned char>(p);
  }
}

__device__ __forceinline__ void store_mine(const PushShared& s, size_t i, const uint4& v) {
  char* p = s.data + i * 16;
  switch (s.data_align) {
    case 16: *reinterpret_cast<uint4*>(p) = v; break;
    case 8: store_as<unsigned long long>(p, v); break;
    case 4: store_as<unsigned>(p, v); break;
    case 2: store_as<unsigned short>(p, v); break;
    default: store_as<unsigned char>(p, v); break;
  }
}

// What one block knows of its call (shared memory).
struct BlockCall {
  unsigned long long call;  // this block's count for the call
  unsigned long long flag;  // (call << kSigBits) | signature: what peers must show
  unsigned long long seq;   // the call's sequence number, for the fault record
  int stop;                 // an abort: leave
  int mismatch;             // a peer made another call: move no data
};

__device__ void record_mismatch(const PushShared& s, BlockCall& b, int peer,
                                unsigned long long peer_sig) {
  *(volatile int*)&b.mismatch = 1;
  record_fault(s.fault, peer, peer_sig, b.flag & kSigMask, b.seq);
}

// This block's stores of the phase are issued (release) on every peer's flag;
// then it waits until every peer's namesake block has done the same here.
// False when the communicator is aborted meanwhile.  A peer's flag must read
// exactly this call's: a peer can be neither behind (we wait) nor ahead (it
// cannot pass this phase before our flag) on a matched sequence of calls.
__device__ bool exchange(const PushShared& s, int phase, BlockCall& b) {
  __syncthreads();
  const int peer = threadIdx.x;
  if (peer < s.nranks && peer != s.rank) {
    __threadfence_system();
    SystemWord(*flag(s, peer, phase, s.rank)).store(b.flag, cuda::memory_order_release);
    SystemWord f(*flag(s, s.rank, phase, peer));
    unsigned spins = 0;
    unsigned long long v;
    while (((v = f.load(cuda::memory_order_acquire)) >> kSigBits) < b.call) {
      if (++spins % kAbortEvery == 0 && (*s.abort != 0 || *(volatile int*)&b.stop != 0)) {
        b.stop = 1;
        break;
      }
      __nanosleep(64);
    }
    if (*(volatile int*)&b.stop == 0 && v != b.flag) {
      record_mismatch(s, b, peer, v & kSigMask);
    }
  }
  __syncthreads();
  return b.stop == 0;
}

// Packs [lo, hi) from load(i) to store(i, v), kUnroll loads in flight per
// thread before their stores.
template <class Load, class Store>
__device__ __forceinline__ void copy_packs(size_t lo, size_t hi, Load load, Store store) {
  for (size_t base = lo + threadIdx.x; base < hi; base += kStep) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * kThreads;
      if (i < hi) v[u] = load(i);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * kThreads;
      if (i < hi) store(i, v[u]);
    }
  }
}

// Phase 1: slice of chunk q of this rank's tensor into q's input slot for us.
__device__ void stage(const PushShared& s, const Cut& c) {
  for (int step = 1; step < s.nranks; ++step) {
    const int q = (s.rank + step) % s.nranks;
    size_t lo, hi;
    c.slice(q, lo, hi);
    const size_t first = q * c.chunk;
    uint4* dst = slot(s, q, s.rank);
    copy_packs(lo, hi, [&](size_t i) { return load_mine(s, first + i); },
               [&](size_t i, const uint4& v) { dst[i] = v; });
  }
}

// Phase 2: reduce this rank's slice with the staged ones; the result into
// this rank's tensor and every peer's result slot for us.
template <class T, int Op>
__device__ void reduce_and_spread(const PushShared& s, const Cut& c,
                                  typename Acc<T>::type scale) {
  using A = typename Acc<T>::type;
  constexpr int V = 16 / sizeof(T);
  size_t lo, hi;
  c.slice(s.rank, lo, hi);
  const size_t first = s.rank * c.chunk;
  for (size_t base = lo + threadIdx.x; base < hi; base += kStep) {
    A acc[kUnroll][V];
    Pack<T> pk[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * kThreads;
      pk[u].raw = i < hi ? load_mine(s, first + i) : uint4{};
#pragma unroll
      for (int k = 0; k < V; ++k) acc[u][k] = to_acc(pk[u].v[k]);
    }
    for (int step = 1; step < s.nranks; ++step) {
      const uint4* staged = slot(s, s.rank, (s.rank + step) % s.nranks);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t i = base + u * kThreads;
        pk[u].raw = i < hi ? __ldcg(staged + i) : uint4{};
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int k = 0; k < V; ++k) acc[u][k] = combine<Op>(acc[u][k], to_acc(pk[u].v[k]));
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        pk[u].v[k] = from_acc<T>(Op == ncclAvg ? acc[u][k] * scale : acc[u][k]);
      }
    }
    for (int step = 1; step < s.nranks; ++step) {
      uint4* dst = result_slot(s, (s.rank + step) % s.nranks, s.rank);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t i = base + u * kThreads;
        if (i < hi) dst[i] = pk[u].raw;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * kThreads;
      if (i < hi) store_mine(s, first + i, pk[u].raw);
    }
  }
}

// Phase 3: every peer's reduced slice of its chunk, from our result slots
// into this rank's tensor (local copies).
__device__ void copy_out(const PushShared& s, const Cut& c) {
  for (int step = 1; step < s.nranks; ++step) {
    const int p = (s.rank + step) % s.nranks;
    size_t lo, hi;
    c.slice(p, lo, hi);
    const size_t first = p * c.chunk;
    const uint4* src = result_slot(s, s.rank, p);
    copy_packs(lo, hi, [&](size_t i) { return __ldcg(src + i); },
               [&](size_t i, const uint4& v) { store_mine(s, first + i, v); });
  }
}

template <class T, int Op>
__global__ void __launch_bounds__(kThreads)
    push_kernel(PushShared s, Cut c, typename Acc<T>::type scale, CallTag tag) {
  __shared__ BlockCall b;
  if (threadIdx.x == 0) {
    b.call = s.calls[blockIdx.x] + 1;
    b.flag = (b.call << kSigBits) | (tag.sig & kSigMask);
    b.seq = tag.seq;
    b.stop = *s.stop != 0;  // an abort is under way: leave before touching any window
    b.mismatch = 0;
  }
  __syncthreads();
  // A chunk larger than the slots: some rank's window never grew for this
  // call, so not every rank made it.  Store nothing anywhere.
  if (threadIdx.x == 0 && c.chunk * 16 > s.slot_bytes && s.nranks > 1) {
    record_mismatch(s, b, s.rank, 0);
  }
  __syncthreads();
  bool completed = false;
  if (b.stop == 0) {
    if (b.mismatch == 0) {
      stage(s, c);
    }
    // Flags are crossed whatever a block found, so that no peer waits in
    // vain; data moves only while every peer showed this very call.
    if (exchange(s, 0, b)) {
      if (b.mismatch == 0) {
        reduce_and_spread<T, Op>(s, c, scale);
      }
      if (exchange(s, 1, b)) {
        if (b.mismatch == 0) {
          copy_out(s, c);
        }
        completed = true;
      }
    }
  }
  // The last block to leave reports the ticket: from then on the kernel
  // touches neither the windows nor the tensor.  (A block stopped after
  // phase 2 leaves the peers' result slots for a call no one completes.)
  // Every thread of this block is past copy_out first: a call that follows
  // on another stream waits for the ticket alone, and its peers overwrite
  // our result slots as soon as it starts.
  __syncthreads();
  if (threadIdx.x == 0) {
    if (completed) {
      s.calls[blockIdx.x] = b.call;
    }
    unsigned long long* left = s.calls + kPushMaxBlocks;
    __threadfence();
    if (atomicAdd(left, 1ull) == gridDim.x - 1) {
      *left = 0;  // the next call starts after this kernel: no race
      if (tag.ticket != 0) {
        __threadfence_system();
        SystemWord(*s.done).store(tag.ticket, cuda::memory_order_release);
      }
    }
  }
}

Cut cut_of(size_t bytes, int nranks) {
  size_t units = bytes / 16;
  return Cut{units, (units + nranks - 1) / nranks};
}

}  // namespace

size_t push_staging_bytes(size_t bytes, int nranks) {
  // Flags, then input and result slots: 2 (nranks - 1) chunks.
  return kPushFlagBytes + 2 * static_cast<size_t>(nranks - 1) * cut_of(bytes, nranks).chunk * 16;
}

size_t push_slot_bytes(size_t min_window, int nranks) {
  if (nranks < 2 || min_window <= kPushFlagBytes) {
    return 0;
  }
  return (min_window - kPushFlagBytes) / (2 * static_cast<size_t>(nranks - 1)) / 16 * 16;
}

bool push_covers(size_t bytes, ncclDataType_t type, int op) {
  if (bytes % 16 != 0 || bytes == 0) {
    return false;
  }
  bool ok = false;
  visit_type(type, [&](auto tt) {
    using T = typename decltype(tt)::type;
    ok = visit_op<T>(op, [](auto) {});
  });
  return ok;
}

int push_alignment(const void* ptr) {
  auto a = reinterpret_cast<uintptr_t>(ptr);
  for (int w = 16; w > 1; w /= 2) {
    if (a % w == 0) {
      return w;
    }
  }
  return 1;
}

void launch_push(const PushShared& s, size_t count, ncclDataType_t type, int op, int blocks,
                 const CallTag& tag, cudaStream_t stream) {
  visit_type(type, [&](auto tt) {
    using T = typename decltype(tt)::type;
    using A = typename Acc<T>::type;
    const A scale = static_cast<A>(1.0 / s.nranks);
    const Cut c = cut_of(count * sizeof(T), s.nranks);
    size_t want = (c.chunk + kMinPacksPerBlock - 1) / kMinPacksPerBlock;
    unsigned grid = static_cast<unsigned>(want < static_cast<size_t>(blocks) ? want : blocks);
    grid = grid < 1 ? 1 : grid;
    visit_op<T>(op, [&](auto ot) {
      constexpr int Op = decltype(ot)::value;
      launch_kernel<push_kernel<T, Op>>(grid, kThreads, stream, s, c, scale, tag);
    });
  });
}

}  // namespace nccl_core::nvlink
