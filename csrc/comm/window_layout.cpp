#include "comm/window_layout.h"

#include <cuda_runtime_api.h>

#include "nccl/api.h"

namespace nccl_core::window_layout {

namespace {
// The head of NCCL 2.28's struct ncclWindow_vidmem.
struct Vidmem228 {
  void* win_host;
  char* lsa_flat_base;
  int lsa_rank;
  int world_rank;
  uint32_t stride_4g;
};
} // namespace

Layout read(ncclWindow_t win) {
  int v = api::loaded_version();
  if (v < api::version_code(2, 28, 0) || v >= api::version_code(2, 29, 0)) {
    throw NcclUnsupported("window pointer queries need NCCL 2.28.x (device-side descriptor) or "
                          "NCCL 2.29.2+ (ncclGetLsaDevicePointer); the loaded NCCL is " +
                          api::version_string(v));
  }
  Vidmem228 d{};
  // The descriptor lives in device memory: copy it on a private stream so no
  // user stream is synchronised.
  cudaStream_t s = nullptr;
  NCCL_CORE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaError_t err = cudaMemcpyAsync(&d, win, sizeof(d), cudaMemcpyDefault, s);
  if (err == cudaSuccess) {
    err = cudaStreamSynchronize(s);
  }
  (void)cudaStreamDestroy(s);
  NCCL_CORE_CUDA_CHECK(err);
  return Layout{reinterpret_cast<uintptr_t>(d.lsa_flat_base), d.lsa_rank, d.world_rank,
                d.stride_4g};
}

uintptr_t lsa_address(uintptr_t base, uint32_t stride_4g, int lsa_rank, size_t offset) {
  uint64_t b = static_cast<uint64_t>(base);
  uint32_t hi = static_cast<uint32_t>(b >> 32) + static_cast<uint32_t>(lsa_rank) * stride_4g;
  uint64_t addr = (static_cast<uint64_t>(hi) << 32) | (b & 0xffffffffull);
  return static_cast<uintptr_t>(addr + offset);
}

} // namespace nccl_core::window_layout
