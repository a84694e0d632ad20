// Reused CUDA events for the end of each operation.  Creating and destroying
// an event per collective costs a few µs of host time on every call; the pool
// hands back events that earlier (retired) works released.
#pragma once

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

namespace nccl_core {

// One pooled event (cudaEventDisableTiming), acquired on first record and
// returned to the pool by the destructor.  Same interface as the parts of
// at::cuda::CUDAEvent that Work uses.
class PooledEvent {
 public:
  PooledEvent() = default;
  ~PooledEvent();
  PooledEvent(const PooledEvent&) = delete;
  PooledEvent& operator=(const PooledEvent&) = delete;

  void record(const c10::cuda::CUDAStream& stream);
  // True once the GPU has passed the recorded point (or nothing was recorded).
  bool query() const;
  // Makes `stream` wait for the recorded point (no-op if never recorded).
  void block(const c10::cuda::CUDAStream& stream) const;

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

} // namespace nccl_core
