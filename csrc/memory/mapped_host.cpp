#include "memory/mapped_host.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "nccl/api.h"

namespace nccl_core {

MappedHost::MappedHost(size_t bytes) {
  NCCL_CORE_CUDA_CHECK(cudaHostAlloc(&host_, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(host_, 0, bytes);
  cudaError_t err = cudaHostGetDevicePointer(&device_, host_, 0);
  if (err != cudaSuccess) {
    (void)cudaFreeHost(host_);
    host_ = nullptr;
    api::cuda_check(err, "cudaHostGetDevicePointer");
  }
}

MappedHost::~MappedHost() {
  if (host_ != nullptr) {
    (void)cudaFreeHost(host_);
  }
}

}  // namespace nccl_core
