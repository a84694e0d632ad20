// The two one-word collectives a communicator runs for its own bookkeeping,
// on a private stream, below the operations layer (csrc/collectives), which
// makes every collective of dist.* and of the raw API: a sum before NCCL
// 2.29's first window, and the all-gather of one word per rank that window
// registration agrees on.  Each returns NCCL's result for the caller to check
// (comm/communicator.cpp runs them bounded by the communicator's timeout).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

namespace nccl_core::agreements {

// `value` (one float on the device) summed over every rank, in place.
ncclResult_t sum_one_float(float* value, ncclComm_t comm, cudaStream_t stream);

// words[r] = rank r's words[rank] for every r; `words` holds nranks words on
// the device, this rank's at `rank`.
ncclResult_t gather_one_word(uint64_t* words, int rank, ncclComm_t comm, cudaStream_t stream);

}  // namespace nccl_core::agreements
