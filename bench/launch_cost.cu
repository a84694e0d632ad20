// Host µs of the CUDA calls one small collective makes, on this host, alone
// (issue 6: is a kernel launch the floor of the host path?).  One process, one
// GPU, no NCCL.  Each row times `iters` calls back to back in batches of 500,
// synchronising between batches outside the timed part (the launch queue never
// fills), and prints the median batch.
//   nvcc -O2 -arch=sm_90 bench/launch_cost.cu -o /tmp/launch_cost -lcuda
//   /tmp/launch_cost [device]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// As large as the fast path's launch arguments (fast::Shared and the rest).
struct Args {
  char* window[16];
  unsigned long long* epoch;
  const volatile int* abort;
  size_t half, in_bytes, count, chunk;
  int nranks, rank;
};

__global__ void empty_kernel() {}

// Keeps the stream busy for about `cycles` GPU clocks.
__global__ void spin_kernel(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void args_kernel(Args a) {
  if (a.rank < 0) a.window[0][threadIdx.x] = 0;  // keeps the argument alive
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

void check(CUresult e, const char* what) {
  if (e != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s: CUresult %d\n", what, static_cast<int>(e));
    std::exit(1);
  }
}

// `before` runs ahead of each timed batch, outside the timing.
template <class Fn, class Before>
double us_per_call(Fn fn, cudaStream_t stream, Before before) {
  constexpr int kBatch = 500, kBatches = 40;
  for (int i = 0; i < 200; ++i) fn();
  check(cudaStreamSynchronize(stream), "sync");
  std::vector<double> per;
  for (int b = 0; b < kBatches; ++b) {
    before();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) fn();
    auto t1 = std::chrono::steady_clock::now();
    check(cudaStreamSynchronize(stream), "sync");
    per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBatch);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

template <class Fn>
double us_per_call(Fn fn, cudaStream_t stream) {
  return us_per_call(fn, stream, [] {});
}

}  // namespace

int main(int argc, char** argv) {
  int device = argc > 1 ? std::atoi(argv[1]) : 0;
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t event;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  Args args{};
  args.rank = 0;
  void* params[] = {&args};
  cudaFunction_t fn_runtime;
  check(cudaGetFuncBySymbol(&fn_runtime, reinterpret_cast<const void*>(args_kernel)),
        "cudaGetFuncBySymbol");
  CUfunction fn = reinterpret_cast<CUfunction>(fn_runtime);

  std::printf("| call | host µs |\n|---|---:|\n");
  auto row = [&](const char* name, double us) { std::printf("| %s | %.2f |\n", name, us); };
  row("empty kernel <<<1, 32>>>", us_per_call([&] { empty_kernel<<<1, 32, 0, stream>>>(); }, stream));
  row("kernel <<<16, 512>>>, 200-byte argument",
      us_per_call([&] { args_kernel<<<16, 512, 0, stream>>>(args); }, stream));
  // A launch queued behind unfinished work, as in a loop whose GPU waits for
  // the slowest rank (each batch of 500 queues behind ~20 ms of spinning).
  row("same, queued behind a running kernel",
      us_per_call([&] { args_kernel<<<16, 512, 0, stream>>>(args); }, stream,
                  [&] { spin_kernel<<<1, 1, 0, stream>>>(40'000'000); }));
  row("cudaLaunchKernel, same",
      us_per_call([&] {
        check(cudaLaunchKernel(reinterpret_cast<const void*>(args_kernel), dim3(16), dim3(512),
                               params, 0, stream), "cudaLaunchKernel");
      }, stream));
  row("cuLaunchKernel (driver), same",
      us_per_call([&] {
        check(cuLaunchKernel(fn, 16, 1, 1, 512, 1, 1, 0, stream, params, nullptr),
              "cuLaunchKernel");
      }, stream));
  row("cudaEventRecord", us_per_call([&] { check(cudaEventRecord(event, stream), "record"); }, stream));
  row("cudaStreamWaitEvent", us_per_call([&] {
        check(cudaStreamWaitEvent(stream, event, 0), "wait");
      }, stream));
  row("cudaEventQuery", us_per_call([&] { (void)cudaEventQuery(event); }, stream));
  row("cudaStreamGetCaptureInfo", us_per_call([&] {
        cudaStreamCaptureStatus st;
        check(cudaStreamGetCaptureInfo(stream, &st), "capture info");
      }, stream));
  row("cudaGetDevice", us_per_call([&] {
        int d;
        check(cudaGetDevice(&d), "cudaGetDevice");
      }, stream));
  row("cudaGetLastError", us_per_call([&] { (void)cudaGetLastError(); }, stream));
  return 0;
}
