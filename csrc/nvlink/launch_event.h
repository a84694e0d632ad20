// The engine's ordering event (engine.h, follow / mark_launched), for the
// launches its tickets cannot order: one without a ticket, or on a device
// without 64-bit stream waits.  A bare cudaEvent_t: at::cuda::CUDAEvent added
// a device guard and a stream wrapper to each record.
#pragma once

#include <cuda_runtime_api.h>

#include "nccl/api.h"

namespace nccl_core::nvlink {

class LaunchEvent {
 public:
  LaunchEvent() = default;
  ~LaunchEvent() {
    if (event_ != nullptr) {
      (void)cudaEventDestroy(event_);  // at exit the context may be gone already
    }
  }
  LaunchEvent(const LaunchEvent&) = delete;
  LaunchEvent& operator=(const LaunchEvent&) = delete;

  // Marks what `stream` has queued so far.  The event is created at the first
  // record, on the current device, which must be the stream's (the engine
  // runs under its group's device guard).
  void record(cudaStream_t stream) {
    if (event_ == nullptr) {
      NCCL_CORE_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    }
    NCCL_CORE_CUDA_CHECK(cudaEventRecord(event_, stream));
  }
  // `stream` waits for the last record (none yet: nothing to wait for).
  void block(cudaStream_t stream) const {
    if (event_ != nullptr) {
      NCCL_CORE_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
    }
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace nccl_core::nvlink
