// Window pointers on NCCL 2.28, which has no host-side pointer queries.
//
// There a window handle (ncclWindow_t) points at NCCL's device-side window
// descriptor, which the device API reads (nccl_device/core.h): the LSA team's
// buffers sit at `lsa_flat_base + i * stride_4g * 4 GiB` for LSA rank i.  The
// descriptor is read once at registration.  Only used when the loaded NCCL
// is 2.28.x, whose layout this mirrors; 2.29+ answers through its own host
// functions (nccl/newer_than_2_28.h).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

namespace nccl_core::window_layout {

// The head of NCCL's struct ncclWindow_vidmem (nccl_device/impl/core__types.h),
// unchanged from 2.28 to 2.32; device/layout_checks.cu checks it against the
// headers of every build.  Only read where the loaded NCCL is 2.28.x.
struct VidmemHead {
  void* win_host;
  char* lsa_flat_base;
  int lsa_rank;
  int world_rank;
  uint32_t stride_4g;
};

struct Layout {
  uintptr_t lsa_flat_base;
  int lsa_rank;
  int world_rank;
  uint32_t stride_4g;
};

// Reads the descriptor of `win`; NcclUnsupported on an NCCL other than 2.28.
Layout read(ncclWindow_t win);
// The same on any release whose descriptor head nccl_core mirrors (2.28.3 to
// 2.32.x, features.h): to compare NCCL's host answers of 2.29.2+ with the
// computation 2.28 relies on.  NcclUnsupported elsewhere.
Layout read_any(ncclWindow_t win);

// Address of LSA rank `lsa_rank`'s window + offset (NCCL's add4G rule: the
// rank's stride is added to the upper 32 bits only).
uintptr_t lsa_address(uintptr_t base, uint32_t stride_4g, int lsa_rank, size_t offset);

inline void* lsa_pointer(uintptr_t base, uint32_t stride_4g, int lsa_rank, size_t offset) {
  return reinterpret_cast<void*>(lsa_address(base, stride_4g, lsa_rank, offset));
}

} // namespace nccl_core::window_layout
