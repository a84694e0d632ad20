// Op timing (TORCH_NCCL_ENABLE_TIMING, `enable_timing`, or
// `_enable_collectives_timing()`): a pair of timing CUDA events around the
// op's kernels on its stream, so `work._get_duration()` reports how long the
// GPU spent in the op, as backend nccl does.  Off by default: timing events
// cost more to record than the pooled no-timing end events.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

namespace nccl_core {

class OpTimer {
 public:
  OpTimer();
  // Before the op's first kernel, on its stream.
  void start(const c10::cuda::CUDAStream& stream);
  // After its last kernel, on the same stream.
  void end(const c10::cuda::CUDAStream& stream);
  // Milliseconds between the two; waits for the end event if the GPU has not
  // passed it yet.  Raises if either was never recorded.
  float elapsed_ms();

 private:
  at::cuda::CUDAEvent start_;
  at::cuda::CUDAEvent end_;
  bool started_ = false;
  bool ended_ = false;
};

}  // namespace nccl_core
