#include "nvlink/launcher.h"

#include <cuda.h>

#include <atomic>

#include "nccl/driver.h"

namespace nccl_core::nvlink {

namespace {

using LaunchFn = CUresult CUDAAPI(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);

LaunchFn* driver_launch() {
  static LaunchFn* fn = api::driver_entry<LaunchFn>("cuLaunchKernel");
  return fn;
}

using AttributeFn = CUresult CUDAAPI(int*, CUdevice_attribute, CUdevice);
using WaitFn = CUresult CUDAAPI(CUstream, CUdeviceptr, cuuint64_t, unsigned);

constexpr int kMaxDevices = 64;
// Per device: 0 unknown, 1 yes, 2 no.
std::atomic<int> g_can_wait[kMaxDevices];

}  // namespace

bool can_wait_on_values(int device) {
  if (device < 0 || device >= kMaxDevices) {
    return false;
  }
  int known = g_can_wait[device].load(std::memory_order_relaxed);
  if (known == 0) {
    static AttributeFn* attribute = api::driver_entry<AttributeFn>("cuDeviceGetAttribute");
    int v = 0;
    api::driver_check(attribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device),
                      "cuDeviceGetAttribute(CAN_USE_64_BIT_STREAM_MEM_OPS)");
    known = v != 0 ? 1 : 2;
    g_can_wait[device].store(known, std::memory_order_relaxed);
  }
  return known == 1;
}

void wait_at_least(cudaStream_t stream, const unsigned long long* addr, uint64_t value) {
  static WaitFn* wait = api::driver_entry<WaitFn>("cuStreamWaitValue64");
  api::driver_check(wait(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(addr),
                         value, CU_STREAM_WAIT_VALUE_GEQ),
                    "cuStreamWaitValue64");
}

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

}  // namespace nccl_core::nvlink
