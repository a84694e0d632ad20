#include "comm/window_layout.h"

#include <cuda_runtime_api.h>

#include "nccl/api.h"
#include "nccl/features.h"

namespace nccl_core::window_layout {

namespace {

Layout copy_head(ncclWindow_t win) {
  VidmemHead d{};
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

} // namespace

Layout read(ncclWindow_t win) {
  const auto& f = features::kWindowPointers;
  if (features::status(f, api::loaded_version()) != features::Status::NcclCore) {
    throw NcclUnsupported("window pointer queries need NCCL 2.28.x (device-side descriptor) or "
                          "NCCL " + api::version_string(f.native_since) +
                          "+ (ncclGetLsaDevicePointer); the loaded NCCL is " +
                          api::version_string(api::loaded_version()));
  }
  return copy_head(win);
}

Layout read_any(ncclWindow_t win) {
  int loaded = api::loaded_version();
  if (loaded < features::kWindowDescriptorSince || loaded >= features::kWindowDescriptorUntil) {
    throw NcclUnsupported(
        "reading a window's device descriptor needs an NCCL release whose layout nccl_core "
        "mirrors (" + api::version_string(features::kWindowDescriptorSince) + " up to, not "
        "including, " + api::version_string(features::kWindowDescriptorUntil) +
        "); the loaded NCCL is " + api::version_string(loaded));
  }
  return copy_head(win);
}

uintptr_t lsa_address(uintptr_t base, uint32_t stride_4g, int lsa_rank, size_t offset) {
  uint64_t b = static_cast<uint64_t>(base);
  uint32_t hi = static_cast<uint32_t>(b >> 32) + static_cast<uint32_t>(lsa_rank) * stride_4g;
  uint64_t addr = (static_cast<uint64_t>(hi) << 32) | (b & 0xffffffffull);
  return static_cast<uintptr_t>(addr + offset);
}

} // namespace nccl_core::window_layout
