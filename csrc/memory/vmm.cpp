#include "memory/vmm.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "nccl/driver.h"

namespace nccl_core::vmm {

namespace {

using RetainFn = CUresult CUDAAPI(CUmemGenericAllocationHandle*, void*);
using ReleaseFn = CUresult CUDAAPI(CUmemGenericAllocationHandle);
using RangeFn = CUresult CUDAAPI(CUdeviceptr*, size_t*, CUdeviceptr);

struct Driver {
  RetainFn* retain;
  ReleaseFn* release;
  RangeFn* range;
};

const Driver& driver() {
  static const Driver d{api::driver_entry<RetainFn>("cuMemRetainAllocationHandle"),
                        api::driver_entry<ReleaseFn>("cuMemRelease"),
                        api::driver_entry<RangeFn>("cuMemGetAddressRange")};
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
