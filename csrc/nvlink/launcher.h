// Launches of the fast path's kernels through the driver's cuLaunchKernel.
// The fast path's host time is mostly its kernel launch, and on the GPU hosts
// measured (4×H200 under KVM; the prototype that measured it is
// `git show 17dbab4:bench/launch_cost.cu`) the driver's launch costs 0.3-0.5 µs
// less than the runtime's <<<>>> (3.7-4.0 against 4.2-4.3 µs).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace nccl_core::nvlink {

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

// Whether `device` runs 64-bit stream waits (cuStreamWaitValue64); asked
// once per device.
bool can_wait_on_values(int device);

// `stream` waits, in its front end (no SM held), until the 64-bit word at
// `addr` (device-visible; host-mapped is fine) is at least `value`.
void wait_at_least(cudaStream_t stream, const unsigned long long* addr, uint64_t value);

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

}  // namespace nccl_core::nvlink
