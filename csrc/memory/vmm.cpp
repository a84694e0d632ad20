#include "memory/vmm.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "nccl/api.h"

namespace nccl_core::vmm {

namespace {

// Driver entry points through the runtime, so the extension needs no
// libcuda link of its own.
template <class Fn>
Fn* driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  NCCL_CORE_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault,
                                                        &status));
  if (fn == nullptr || status != cudaDriverEntryPointSuccess) {
    throw NcclError(ncclUnhandledCudaError,
                    std::string("CUDA driver entry point ") + name + " is unavailable");
  }
  return reinterpret_cast<Fn*>(fn);
}

using RetainFn = CUresult CUDAAPI(CUmemGenericAllocationHandle*, void*);
using ReleaseFn = CUresult CUDAAPI(CUmemGenericAllocationHandle);
using RangeFn = CUresult CUDAAPI(CUdeviceptr*, size_t*, CUdeviceptr);

struct Driver {
  RetainFn* retain;
  ReleaseFn* release;
  RangeFn* range;
};

const Driver& driver() {
  static const Driver d{driver_entry<RetainFn>("cuMemRetainAllocationHandle"),
                        driver_entry<ReleaseFn>("cuMemRelease"),
                        driver_entry<RangeFn>("cuMemGetAddressRange")};
  return d;
}

} // namespace

bool is_vmm(const void* ptr) {
  CUmemGenericAllocationHandle handle{};
  if (driver().retain(&handle, const_cast<void*>(ptr)) != CUDA_SUCCESS) {
    return false; // not a cuMemMap'ed address
  }
  (void)driver().release(handle); // drop the reference we just took
  return true;
}

Range allocation_range(const void* ptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (driver().range(&base, &size, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) {
    return Range{0, 0};
  }
  return Range{static_cast<uintptr_t>(base), size};
}

} // namespace nccl_core::vmm
