#include "backend/profiling.h"

#include <ATen/record_function.h>

namespace nccl_core::profiling {

bool active() { return at::hasCallbacks(); }

const char* title(c10d::OpType type) {
  using c10d::OpType;
  switch (type) {
    case OpType::BROADCAST: return "nccl_core:broadcast";
    case OpType::ALLREDUCE: return "nccl_core:all_reduce";
    case OpType::ALLREDUCE_COALESCED: return "nccl_core:all_reduce_coalesced";
    case OpType::REDUCE: return "nccl_core:reduce";
    case OpType::ALLGATHER: return "nccl_core:all_gather";
    case OpType::_ALLGATHER_BASE: return "nccl_core:_all_gather_base";
    case OpType::ALLGATHER_COALESCED: return "nccl_core:all_gather_coalesced";
    case OpType::GATHER: return "nccl_core:gather";
    case OpType::SCATTER: return "nccl_core:scatter";
    case OpType::REDUCE_SCATTER: return "nccl_core:reduce_scatter";
    case OpType::_REDUCE_SCATTER_BASE: return "nccl_core:_reduce_scatter_base";
    case OpType::ALLTOALL_BASE: return "nccl_core:all_to_all_base";
    case OpType::ALLTOALL: return "nccl_core:all_to_all";
    case OpType::SEND: return "nccl_core:send";
    case OpType::RECV: return "nccl_core:recv";
    case OpType::BARRIER: return "nccl_core:barrier";
    case OpType::COALESCED: return "nccl_core:coalesced";
    default: return "nccl_core:unknown";
  }
}

}  // namespace nccl_core::profiling
