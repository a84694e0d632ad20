#include "nccl/driver.h"

#include <cuda_runtime_api.h>

#include <string>

namespace nccl_core::api {

void* driver_symbol(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  NCCL_CORE_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault,
                                                        &status));
  if (fn == nullptr || status != cudaDriverEntryPointSuccess) {
    throw NcclError(ncclUnhandledCudaError,
                    std::string("CUDA driver entry point ") + name + " is unavailable");
  }
  return fn;
}

void driver_check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) {
    return;
  }
  using ErrorStringFn = CUresult CUDAAPI(CUresult, const char**);
  static ErrorStringFn* error_string = driver_entry<ErrorStringFn>("cuGetErrorString");
  const char* text = nullptr;
  if (error_string(result, &text) != CUDA_SUCCESS || text == nullptr) {
    text = "unknown CUDA driver error";
  }
  throw NcclError(ncclUnhandledCudaError, std::string(call) + " failed: " + text +
                                               " (CUresult " + std::to_string(result) + ")");
}

} // namespace nccl_core::api
