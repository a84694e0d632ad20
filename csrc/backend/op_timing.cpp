#include "backend/op_timing.h"

#include <c10/cuda/CUDAGuard.h>

#include "backend/errors.h"

namespace nccl_core {

OpTimer::OpTimer() : start_(cudaEventDefault), end_(cudaEventDefault) {}

void OpTimer::start(const c10::cuda::CUDAStream& stream) {
  start_.record(stream);
  started_ = true;
}

void OpTimer::end(const c10::cuda::CUDAStream& stream) {
  end_.record(stream);
  ended_ = true;
}

float OpTimer::elapsed_ms() {
  NCCL_CORE_CHECK_STATE(started_ && ended_,
                        "nccl_core: getDuration() on an op whose kernels were not timed "
                        "(an op inside an unfinished coalescing block)");
  end_.synchronize();
  return start_.elapsed_time(end_);
}

}  // namespace nccl_core
