// Facts about device memory that registration needs: whether an address was
// mapped through the CUDA VMM API (ncclMemAlloc / cuMemMap), which windows and
// symmetric kernels require, and the allocation that contains it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nccl_core::vmm {

// True when `ptr` lies in memory mapped with cuMemMap (ncclMemAlloc,
// expandable segments, ...); false for cudaMalloc memory and host memory.
bool is_vmm(const void* ptr);

// [base, base + size) of the device allocation containing `ptr`; {0, 0} when
// the driver does not know the address.
struct Range {
  uintptr_t base;
  size_t size;
};
Range allocation_range(const void* ptr);

} // namespace nccl_core::vmm
