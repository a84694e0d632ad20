// The fast path for the raw API: a small Communicator.allreduce (Python,
// outside any group) runs as one fast-path kernel (kernels.h) instead of
// ncclAllReduce, as dist.all_reduce does through the backend's engine.
// NCCL's enqueue alone costs 8-13 µs of host time on the GPU hosts measured,
// a kernel launch 3.4-4.3 (bench/NOTES.md §10).
//
// Each communicator gets its own engine, attached to it at its first call
// (comm/communicator.h: closed with its resources; the scratch window is
// created at the first eligible call, a call every rank makes).  Eligibility
// depends on the call's arguments and the communicator alone, as in
// engine.h.  Calls up to NCCL_CORE_FAST_PATH_MAX_BYTES (default 256 KiB;
// 0 = off), read once per process.
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

// Raw calls of `c` that took the fast path so far (tests: proof that it ran).
uint64_t raw_fast_path_calls(Communicator& c);

}  // namespace nccl_core::nvlink
