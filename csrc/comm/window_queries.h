// A window's peer pointers from both sources, side by side: NCCL's host-side
// queries (ncclGetLsaDevicePointer, ncclGetPeerDevicePointer,
// ncclWinGetUserPtr; NCCL >= 2.29.2) and the computation NCCL 2.28 needs,
// from the window's device-side descriptor (window_layout.h), on any release
// whose descriptor head nccl_core mirrors.  Window itself answers through the
// first where the loaded NCCL has it and through the second otherwise; this
// file lets a check compare the two on one release (tests/gpu/cases).
#pragma once

#include <cstddef>
#include <optional>

#include "comm/resources.h"
#include "comm/window_layout.h"

namespace nccl_core::window_queries {

// The descriptor head, read now.
window_layout::Layout descriptor(const Window& w);
// LSA rank `lsa_rank`'s copy (+offset), as NCCL's device code computes it.
void* descriptor_lsa_pointer(const Window& w, int lsa_rank, size_t offset);
// World rank `peer`'s copy (+offset); nullopt outside this rank's LSA team.
std::optional<void*> descriptor_peer_pointer(const Window& w, int peer, size_t offset);

// NCCL's host answers; NcclUnsupported naming 2.29.2 before that release.
void* nccl_lsa_pointer(const Window& w, int lsa_rank, size_t offset);
std::optional<void*> nccl_peer_pointer(const Window& w, int peer, size_t offset);
void* nccl_user_ptr(const Window& w);

// Copies `bytes` from `address` into `dst` (device memory of the window's
// device) on `stream`, after checking that [address, address + bytes) lies
// in one LSA rank's copy of the window as Window reports it; NcclInvalid
// otherwise (no address outside the window is ever read).
void copy_from(const Window& w, const void* address, size_t bytes, void* dst,
               cudaStream_t stream);

} // namespace nccl_core::window_queries
