// CUDA driver entry points, reached through the runtime
// (cudaGetDriverEntryPointByVersion) so the extension links no libcuda of its
// own and imports on machines without a driver.  Part of the checked layer:
// a failing driver call becomes an NcclError naming the call.
#pragma once

#include <cuda.h>

#include "nccl/api.h"

namespace nccl_core::api {

// The driver's `name`, or an NcclError when this driver lacks it.
void* driver_symbol(const char* name);

template <class Fn>
Fn* driver_entry(const char* name) {
  return reinterpret_cast<Fn*>(driver_symbol(name));
}

// Throws NcclError(ncclUnhandledCudaError) naming `call` unless `result` is
// CUDA_SUCCESS.
void driver_check(CUresult result, const char* call);

} // namespace nccl_core::api
