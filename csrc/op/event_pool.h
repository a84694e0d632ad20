// Reused CUDA events for the start and end of each operation.  Creating and
// destroying an event per collective costs a few µs of host time on every
// call; the pool hands back events that earlier (retired) works released.
// Timing events (op_timing.h) have a pool of their own: recording one costs
// more, so only timed ops take them.
#pragma once

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

namespace nccl_core {

// One pooled event, acquired on first record and returned to the pool by the
// destructor.  Same interface as the parts of at::cuda::CUDAEvent that Work
// uses.
class PooledEvent {
 public:
  PooledEvent() = default;  // cudaEventDisableTiming
  explicit PooledEvent(bool timing) : timing_(timing) {}
  ~PooledEvent();
  PooledEvent(const PooledEvent&) = delete;
  PooledEvent& operator=(const PooledEvent&) = delete;

  void record(const c10::cuda::CUDAStream& stream);
  // True once the GPU has passed the recorded point (or nothing was recorded).
  bool query() const;
  // Makes `stream` wait for the recorded point (no-op if never recorded).
  void block(const c10::cuda::CUDAStream& stream) const;
  // Before the first record: a timing event (elapsed_ms_since can read it).
  void enable_timing();
  // Milliseconds from `start` to this event, both timing events and
  // recorded; waits for this one if the GPU has not passed it yet.
  float elapsed_ms_since(const PooledEvent& start) const;
  bool recorded() const { return event_ != nullptr; }

 private:
  bool timing_ = false;
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

} // namespace nccl_core
