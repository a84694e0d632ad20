// Can a two-shot all_reduce that *pushes* (remote stores through NVLink) beat
// NCCL's ring at 4–64 MiB?  Issue 6 wants 1.1x there on NCCL memory; a pull
// kernel (remote loads) lost, capped at ~220 GB/s (bench/NOTES.md §9).
//
// One process drives every visible GPU (peer access, so the same NVLink
// stores a symmetric window gives), float32 SUM in place, GPU µs per call in a
// back-to-back loop, against ncclAllReduce on a communicator of the same GPUs.
//
// The kernel, block b of rank r (each block owns the same slice of every
// chunk on every rank, so blocks synchronise pairwise, never grid-wide):
//   1. push slice b of chunk q to rank q's scratch slot r, for every q != r;
//      raise flag1[r][b] on q;
//   2. wait for flag1[p][b] from every p; reduce own slice b of chunk r with
//      the n-1 scratch slices; store it locally and into every peer's data;
//      raise flag2[r][b] on every peer;
//   3. wait for flag2[p][b] from every p (results landed; scratch free again).
//
//   nvcc -O3 -arch=sm_90 bench/push_allreduce.cu -o /tmp/push -lnccl
//   /tmp/push [max_mib]
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kMaxRanks = 8;
constexpr int kMaxBlocks = 256;
constexpr int kThreads = 512;
constexpr int kUnroll = 4;

struct Ranks {
  float* data[kMaxRanks];
  float* scratch[kMaxRanks];             // n slots of one chunk each
  unsigned long long* flags[kMaxRanks];  // [2][kMaxRanks][kMaxBlocks]
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

void check(ncclResult_t e, const char* what) {
  if (e != ncclSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, ncclGetErrorString(e));
    std::exit(1);
  }
}

__device__ __forceinline__ void signal(unsigned long long* f, unsigned long long v) {
  __threadfence_system();
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(f), "l"(v) : "memory");
}

__device__ __forceinline__ void wait_at_least(unsigned long long* f, unsigned long long v) {
  unsigned long long x;
  do {
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(x) : "l"(f) : "memory");
  } while (x < v);
}

__device__ __forceinline__ float4 add(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// `chunk` in float4 units; the slice of block b is [lo, hi) of each chunk.
__global__ void __launch_bounds__(kThreads)
    push_two_shot(Ranks rk, int n, int r, size_t chunk, unsigned long long epoch) {
  const size_t lo = chunk * blockIdx.x / gridDim.x;
  const size_t hi = chunk * (blockIdx.x + 1) / gridDim.x;
  const size_t step = static_cast<size_t>(kThreads) * kUnroll;
  unsigned long long* f1 = rk.flags[r];
  unsigned long long* f2 = rk.flags[r] + kMaxRanks * kMaxBlocks;
  auto* mine = reinterpret_cast<float4*>(rk.data[r]);

  // 1. scatter
  for (int s = 1; s < n; ++s) {
    int q = (r + s) % n;
    const float4* src = mine + q * chunk;
    float4* dst = reinterpret_cast<float4*>(rk.scratch[q]) + r * chunk;
    for (size_t base = lo + threadIdx.x; base < hi; base += step) {
      float4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t i = base + u * kThreads;
        if (i < hi) v[u] = __ldcg(src + i);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t i = base + u * kThreads;
        if (i < hi) dst[i] = v[u];
      }
    }
  }
  __syncthreads();
  if (threadIdx.x < n && threadIdx.x != r) {
    signal(rk.flags[threadIdx.x] + r * kMaxBlocks + blockIdx.x, epoch);
  }
  if (threadIdx.x < n && threadIdx.x != r) {
    wait_at_least(f1 + threadIdx.x * kMaxBlocks + blockIdx.x, epoch);
  }
  __syncthreads();

  // 2. reduce own chunk, push the result everywhere
  const float4* slots = reinterpret_cast<const float4*>(rk.scratch[r]);
  for (size_t base = r * chunk + lo + threadIdx.x; base < r * chunk + hi; base += step) {
    float4 acc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * kThreads;
      if (i < r * chunk + hi) acc[u] = mine[i];
    }
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      const float4* sl = slots + (p - r) * static_cast<long long>(chunk);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t i = base + u * kThreads;
        if (i < r * chunk + hi) acc[u] = add(acc[u], __ldcg(sl + i));
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      size_t i = base + u * kThreads;
      if (i < r * chunk + hi) mine[i] = acc[u];
    }
    for (int s = 1; s < n; ++s) {
      auto* dst = reinterpret_cast<float4*>(rk.data[(r + s) % n]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t i = base + u * kThreads;
        if (i < r * chunk + hi) dst[i] = acc[u];
      }
    }
  }
  __syncthreads();
  if (threadIdx.x < n && threadIdx.x != r) {
    signal(rk.flags[threadIdx.x] + kMaxRanks * kMaxBlocks + r * kMaxBlocks + blockIdx.x, epoch);
  }
  if (threadIdx.x < n && threadIdx.x != r) {
    wait_at_least(f2 + threadIdx.x * kMaxBlocks + blockIdx.x, epoch);
  }
}

// Pure pushes of (n-1)/n of the buffer to the peers: the ceiling of phase 1.
__global__ void __launch_bounds__(kThreads) push_only(Ranks rk, int n, int r, size_t chunk) {
  const size_t lo = chunk * blockIdx.x / gridDim.x;
  const size_t hi = chunk * (blockIdx.x + 1) / gridDim.x;
  const auto* mine = reinterpret_cast<const float4*>(rk.data[r]);
  for (int s = 1; s < n; ++s) {
    int q = (r + s) % n;
    float4* dst = reinterpret_cast<float4*>(rk.scratch[q]) + r * chunk;
    for (size_t i = lo + threadIdx.x; i < hi; i += kThreads) dst[i] = __ldcg(mine + q * chunk + i);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  check(cudaGetDeviceCount(&n), "count");
  if (n < 2 || n > kMaxRanks) {
    std::fprintf(stderr, "need 2..8 GPUs, have %d\n", n);
    return 1;
  }
  size_t max_mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  size_t max_bytes = max_mib << 20;
  std::vector<int> devs(n);
  Ranks rk{};
  std::vector<cudaStream_t> streams(n);
  std::vector<ncclComm_t> comms(n);
  for (int d = 0; d < n; ++d) devs[d] = d;
  check(ncclCommInitAll(comms.data(), n, devs.data()), "ncclCommInitAll");
  for (int d = 0; d < n; ++d) {
    check(cudaSetDevice(d), "set");
    for (int p = 0; p < n; ++p) {
      if (p != d) check(cudaDeviceEnablePeerAccess(p, 0), "peer");
    }
    check(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking), "stream");
    check(cudaMalloc(&rk.data[d], max_bytes), "data");
    check(cudaMalloc(&rk.scratch[d], max_bytes), "scratch");
    size_t fb = 2 * kMaxRanks * kMaxBlocks * sizeof(unsigned long long);
    check(cudaMalloc(&rk.flags[d], fb), "flags");
    check(cudaMemset(rk.flags[d], 0, fb), "flags0");
  }
  unsigned long long epoch = 0;
  auto sync_all = [&] {
    for (int d = 0; d < n; ++d) {
      check(cudaSetDevice(d), "set");
      check(cudaStreamSynchronize(streams[d]), "sync");
    }
  };
  auto nccl_call = [&](size_t count) {
    check(ncclGroupStart(), "gs");
    for (int d = 0; d < n; ++d) {
      check(ncclAllReduce(rk.data[d], rk.data[d], count, ncclFloat, ncclSum, comms[d], streams[d]),
            "ar");
    }
    check(ncclGroupEnd(), "ge");
  };
  auto push_call = [&](size_t count, int blocks) {
    ++epoch;
    for (int d = 0; d < n; ++d) {
      check(cudaSetDevice(d), "set");
      push_two_shot<<<blocks, kThreads, 0, streams[d]>>>(rk, n, d, count / n / 4, epoch);
    }
  };
  auto push_only_call = [&](size_t count, int blocks) {
    for (int d = 0; d < n; ++d) {
      check(cudaSetDevice(d), "set");
      push_only<<<blocks, kThreads, 0, streams[d]>>>(rk, n, d, count / n / 4);
    }
  };
  // GPU µs per call on device 0, after a warm-up, all devices synchronised.
  auto time_it = [&](auto call, int iters) {
    for (int i = 0; i < 5; ++i) call();
    sync_all();
    cudaEvent_t a, b;
    check(cudaSetDevice(0), "set");
    check(cudaEventCreate(&a), "ev");
    check(cudaEventCreate(&b), "ev");
    check(cudaEventRecord(a, streams[0]), "rec");
    for (int i = 0; i < iters; ++i) call();
    check(cudaSetDevice(0), "set");
    check(cudaEventRecord(b, streams[0]), "rec");
    sync_all();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    return 1000.0 * ms / iters;
  };
  // Every element: data[d][i] = d + 1 + (i % 13) * 0.25, so the sum is exact.
  auto fill = [&](size_t count) {
    std::vector<float> h(count);
    for (int d = 0; d < n; ++d) {
      for (size_t i = 0; i < count; ++i) h[i] = d + 1 + (i % 13) * 0.25f;
      check(cudaSetDevice(d), "set");
      check(cudaMemcpy(rk.data[d], h.data(), count * 4, cudaMemcpyHostToDevice), "h2d");
    }
  };
  auto verify = [&](size_t count) {
    std::vector<float> h(count);
    for (int d = 0; d < n; ++d) {
      check(cudaSetDevice(d), "set");
      check(cudaMemcpy(h.data(), rk.data[d], count * 4, cudaMemcpyDeviceToHost), "d2h");
      for (size_t i = 0; i < count; ++i) {
        float want = n * (n + 1) / 2.0f + n * (i % 13) * 0.25f;
        if (h[i] != want) {
          std::printf("WRONG rank %d element %zu: %g, want %g\n", d, i, h[i], want);
          return false;
        }
      }
    }
    return true;
  };
  const int block_counts[] = {16, 32, 64, 96, 128};
  std::printf("%d GPUs; GPU us per float32 SUM all_reduce in place; ratio = nccl / push\n", n);
  std::printf("%10s %10s %8s", "bytes", "nccl", "busbw");
  for (int b : block_counts) std::printf("  push%-4d ratio", b);
  std::printf("  | push-only(64) GB/s\n");
  for (size_t bytes = 1 << 20; bytes <= max_bytes; bytes *= 2) {
    size_t count = bytes / 4;
    int iters = bytes <= (16u << 20) ? 50 : 10;
    fill(count);
    for (int b : block_counts) {
      fill(count);
      push_call(count, b);
      sync_all();
      if (!verify(count)) return 2;
    }
    double t_nccl = time_it([&] { nccl_call(count); }, iters);
    double busbw = 2.0 * (n - 1) / n * bytes / t_nccl / 1e3;
    std::printf("%10zu %10.1f %8.1f", bytes, t_nccl, busbw);
    for (int b : block_counts) {
      double t = time_it([&] { push_call(count, b); }, iters);
      std::printf("  %8.1f %5.2f", t, t_nccl / t);
    }
    double t_push = time_it([&] { push_only_call(count, 64); }, iters);
    std::printf("  | %6.1f\n", (n - 1.0) / n * bytes / t_push / 1e3);
    std::fflush(stdout);
  }
  for (int d = 0; d < n; ++d) ncclCommDestroy(comms[d]);
  return 0;
}
