#include "nccl/agreements.h"
#include "nccl/seam.h"

namespace nccl_core::agreements {

ncclResult_t sum_one_float(float* value, ncclComm_t comm, cudaStream_t stream) {
  return nccl().AllReduce(value, value, 1, ncclFloat32, ncclSum, comm, stream);
}

ncclResult_t gather_one_word(uint64_t* words, int rank, ncclComm_t comm, cudaStream_t stream) {
  return nccl().AllGather(words + rank, words, 1, ncclUint64, comm, stream);
}

}  // namespace nccl_core::agreements
