// Makes a CUDA device current for a scope and restores the caller's device
// on exit (communicator creation, finalize and destroy run on the
// communicator's device whatever the caller's is).
#pragma once

#include <cuda_runtime_api.h>

#include "nccl/api.h"

namespace nccl_core {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    NCCL_CORE_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) {
      NCCL_CORE_CUDA_CHECK(cudaSetDevice(device));
    }
  }
  ~DeviceScope() { (void)cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

} // namespace nccl_core
