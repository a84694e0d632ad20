#include "fast/launcher.h"

#include <cuda.h>

#include "nccl/driver.h"

namespace nccl_core::fast {

namespace {

using LaunchFn = CUresult CUDAAPI(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);

LaunchFn* driver_launch() {
  static LaunchFn* fn = api::driver_entry<LaunchFn>("cuLaunchKernel");
  return fn;
}

}  // namespace

Launcher::Launcher(const void* kernel) : kernel_(kernel), function_(nullptr) {
  cudaFunction_t fn = nullptr;
  NCCL_CORE_CUDA_CHECK(cudaGetFuncBySymbol(&fn, kernel));
  function_ = fn;  // a cudaFunction_t is the driver's CUfunction
  (void)driver_launch();
}

void Launcher::operator()(unsigned blocks, unsigned threads, void** params,
                          cudaStream_t stream) const {
  CUresult r = driver_launch()(static_cast<CUfunction>(function_), blocks, 1, 1, threads, 1, 1,
                               0, stream, params, nullptr);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    // No runtime call on this thread has made the device's context current
    // yet; the runtime's launch does that.
    NCCL_CORE_CUDA_CHECK(
        cudaLaunchKernel(kernel_, dim3(blocks), dim3(threads), params, 0, stream));
    return;
  }
  api::driver_check(r, "cuLaunchKernel");
}

}  // namespace nccl_core::fast
