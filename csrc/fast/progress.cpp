#include "fast/progress.h"

#include <cuda_runtime_api.h>

#include "nccl/api.h"

namespace nccl_core::fast {

Progress::Progress() {
  void* host = nullptr;
  NCCL_CORE_CUDA_CHECK(cudaHostAlloc(&host, sizeof(unsigned long long),
                                     cudaHostAllocMapped | cudaHostAllocPortable));
  host_ = static_cast<volatile unsigned long long*>(host);
  *host_ = 0;
  void* dev = nullptr;
  cudaError_t err = cudaHostGetDevicePointer(&dev, host, 0);
  if (err != cudaSuccess) {
    cudaFreeHost(host);
    api::cuda_check(err, "cudaHostGetDevicePointer");
  }
  device_ = static_cast<unsigned long long*>(dev);
}

Progress::~Progress() {
  // Its holders (the engine, the watchdog, tracked works) let go after the
  // backend drained or aborted the kernels that store here.
  cudaFreeHost(const_cast<unsigned long long*>(host_));
}

}  // namespace nccl_core::fast
