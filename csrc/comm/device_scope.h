// Makes a CUDA device current for a scope and restores the caller's device
// on exit.  Every CUDA call that names a stream runs under one: the legacy
// default stream's handle (0) is the same on every device, so the runtime
// resolves it through the current device, and a caller whose current device
// is not the tensors' (no torch.cuda.set_device) would otherwise order the
// wrong device's stream.
#pragma once

#include <cuda_runtime_api.h>

#include "nccl/api.h"

namespace nccl_core {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (device < 0) {
      return;  // no CUDA device: a communicator of the lab's fake NCCL (csrc/testing)
    }
    NCCL_CORE_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) {
      NCCL_CORE_CUDA_CHECK(cudaSetDevice(device));
      changed_ = true;
    }
  }
  ~DeviceScope() {
    if (changed_) {
      (void)cudaSetDevice(previous_);
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

} // namespace nccl_core
