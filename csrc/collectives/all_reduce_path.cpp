#include "collectives/all_reduce_path.h"

#include "comm/communicator.h"
#include "nvlink/engine.h"

namespace nccl_core::collectives {

AllReducePath all_reduce_on_a_path(const On& on, nvlink::Engine* engine, const Reduction& r,
                                   const std::function<bool()>& alone) {
  if (engine != nullptr &&
      engine->all_reduce(on.comm, r.in, r.out, r.count, r.type, r.op, on.stream)) {
    return AllReducePath::kFast;
  }
  if (alone && alone()) {
    return AllReducePath::kAlone;
  }
  if (engine != nullptr && r.in == r.out &&
      engine->all_reduce_pushed(on.comm, r.out, r.count, r.type, r.op, on.stream)) {
    return AllReducePath::kPush;
  }
  all_reduce(on, r.in, r.out, r.count, r.type, r.op);
  return AllReducePath::kNccl;
}

}  // namespace nccl_core::collectives
