// Launches of the fast path's kernels through the driver's cuLaunchKernel.
// The fast path's host time is mostly its kernel launch, and on the GPU hosts
// measured (bench/launch_cost.cu, 4×H200 under KVM) the driver's launch costs
// 0.3-0.5 µs less than the runtime's <<<>>> (3.7-4.0 against 4.2-4.3 µs).
#pragma once

#include <cuda_runtime_api.h>

namespace nccl_core::fast {

class Launcher {
 public:
  // One of this library's __global__ functions (resolved once, here).
  explicit Launcher(const void* kernel);

  // Launches it on `stream`; `params` point at its arguments, in order.
  void operator()(unsigned blocks, unsigned threads, void** params, cudaStream_t stream) const;

 private:
  const void* kernel_;
  void* function_;  // its CUfunction
};

// Launches `Kernel` with `args` converted to its parameter types (the driver
// reads each argument through a pointer, so the types must be exact).
template <class T>
struct Exactly {
  using type = T;
};

template <auto Kernel, class... P>
void launch_kernel_with(void (*)(P...), unsigned blocks, unsigned threads, cudaStream_t stream,
                        typename Exactly<P>::type... args) {
  static const Launcher launcher(reinterpret_cast<const void*>(Kernel));
  void* params[] = {static_cast<void*>(&args)...};
  launcher(blocks, threads, params, stream);
}

template <auto Kernel, class... A>
void launch_kernel(unsigned blocks, unsigned threads, cudaStream_t stream, A... args) {
  launch_kernel_with<Kernel>(Kernel, blocks, threads, stream, args...);
}

}  // namespace nccl_core::fast
