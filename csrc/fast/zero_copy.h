// All-reduce in place on memory that every rank maps (a window over the
// caller's NCCL allocation, backend/symmetric.h): two shots of our own over
// NVLink, nothing staged.
//
// Five kernels on the caller's stream: a barrier (every rank's input is
// ready); rank r reduces chunk r of every peer's buffer into its own; a
// barrier; rank r copies every other chunk from its owner; a barrier (no
// rank reads this rank's buffer any more, so the caller may overwrite it).
// Each byte crosses NVLink twice, as in NCCL's ring, but without the ring's
// pipeline steps and intermediate buffers, and with as many blocks as the
// caller gives (NCCL's ring runs a fixed number of channels).
//
// The barriers are the fast path's (Shared: flags in the engine's scratch
// window, counters in device memory), so these calls and the engine's
// staged calls share one order; graph replays advance the counters too.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>

#include "fast/kernels.h"

namespace nccl_core::fast {

// Each rank's copy of the tensor, at the same offset in every copy.
struct Peers {
  char* buf[kMaxRanks];
};

// op: ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg (floating types).  False
// (nothing launched) for a type or op the kernels do not cover.  `blocks`:
// blocks of each data kernel.
bool launch_zero_copy(const Shared& s, const Peers& peers, size_t count, ncclDataType_t type,
                      int op, int blocks, cudaStream_t stream);

}  // namespace nccl_core::fast
