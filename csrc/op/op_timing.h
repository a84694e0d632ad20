// Op timing (TORCH_NCCL_ENABLE_TIMING, `enable_timing`, or
// `_enable_collectives_timing()`): a timing CUDA event before the op's
// kernels on its stream, and the op's end event (Work) made a timing one, so
// `work._get_duration()` reports how long the GPU spent in the op, as backend
// nccl does.  Both events come from the pool (event_pool.h): nothing is
// created per call, and nothing on the call's path waits for the GPU; only
// reading the duration does, and only for an op not finished yet.  Off by
// default: recording a timing event costs more than the no-timing end event.
#pragma once

#include <c10/cuda/CUDAStream.h>

#include "op/event_pool.h"

namespace nccl_core {

class OpTimer {
 public:
  // Before the op's first kernel, on its stream.
  void start(const c10::cuda::CUDAStream& stream) { start_.record(stream); }
  // Milliseconds from the start to `end` (the op's end event, timing);
  // waits for `end` if the GPU has not passed it yet.  Raises if either was
  // never recorded.
  float elapsed_ms(const PooledEvent& end) const;

 private:
  PooledEvent start_{true};
};

}  // namespace nccl_core
