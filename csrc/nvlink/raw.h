// The fast path for the raw API: a small Communicator.allreduce (Python,
// outside any group) runs as one fast-path kernel (kernels.h) instead of
// ncclAllReduce, as dist.all_reduce does.
//
// Both go through the communicator's one engine (shared_engine.h), and so
// through its paths: a group's (its options and the path table) for the
// communicator of a dist group, else the table with the process's
// NCCL_CORE_FAST_PATH_MAX_BYTES (both modes) and
// NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES (eager calls), read once.  The scratch
// window is created at the first eligible call, a call every rank makes.
// Eligibility depends on the call's arguments, whether it is captured, and
// the communicator alone, as in engine.h.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

#include "comm/buffer.h"

namespace nccl_core {
class Communicator;
}

namespace nccl_core::nvlink {

// True once the kernel is enqueued on `stream` (collectives/raw_ops.cpp).
bool raw_all_reduce(Communicator& c, const Buffer& send, void* out, ncclRedOp_t op,
                    cudaStream_t stream);

// The same for a caller holding the GIL: runs the call only where it costs
// a kernel launch, on an engine already set up and not busy; false with
// nothing done otherwise (raw_all_reduce then decides as it always does, so
// every rank still takes the same path).
bool raw_all_reduce_now(Communicator& c, const Buffer& send, void* out, ncclRedOp_t op,
                        cudaStream_t stream);

// Calls of `c`'s engine that took the fast path so far, dist.* and raw alike
// (tests: proof that it ran).
uint64_t raw_fast_path_calls(Communicator& c);

}  // namespace nccl_core::nvlink
