#include "op/op_timing.h"

#include "op/errors.h"

namespace nccl_core {

float OpTimer::elapsed_ms(const PooledEvent& end) const {
  NCCL_CORE_CHECK_STATE(start_.recorded() && end.recorded(),
                        "nccl_core: getDuration() on an op whose kernels were not timed "
                        "(an op inside an unfinished coalescing block)");
  return end.elapsed_ms_since(start_);
}

}  // namespace nccl_core
