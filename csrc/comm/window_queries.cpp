#include "comm/window_queries.h"

#include <cuda_runtime_api.h>

#include <cstdint>

#include "comm/communicator.h"
#include "comm/device_scope.h"
#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/seam.h"

namespace nccl_core::window_queries {

namespace {

std::shared_ptr<Communicator> owner_of(const Window& w) {
  auto c = w.owner();
  NCCL_CORE_REQUIRE(c != nullptr && c->is_live(),
                    "the window's communicator is no longer live");
  return c;
}

void check_lsa_rank(const Window& w, int lsa_rank) {
  NCCL_CORE_REQUIRE(lsa_rank >= 0 && lsa_rank < w.lsa_size(), "lsa_rank ", lsa_rank,
                    " is outside the LSA team of ", w.lsa_size(), " ranks");
}

} // namespace

window_layout::Layout descriptor(const Window& w) {
  ncclWindow_t win = w.handle();  // raises if closed
  DeviceScope on_device(owner_of(w)->device());
  return window_layout::read_any(win);
}

void* descriptor_lsa_pointer(const Window& w, int lsa_rank, size_t offset) {
  check_lsa_rank(w, lsa_rank);
  auto d = descriptor(w);
  return window_layout::lsa_pointer(d.lsa_flat_base, d.stride_4g, lsa_rank, offset);
}

std::optional<void*> descriptor_peer_pointer(const Window& w, int peer, size_t offset) {
  auto d = descriptor(w);
  int nranks = owner_of(w)->nranks();
  NCCL_CORE_REQUIRE(peer >= 0 && peer < nranks, "peer ", peer,
                    " is outside the communicator of ", nranks, " ranks");
  // NCCL's device-side ncclGetPeerPointer: lsaRank + (peer - worldRank).
  int index = d.lsa_rank + (peer - d.world_rank);
  if (index < 0 || index >= w.lsa_size()) {
    return std::nullopt;
  }
  return window_layout::lsa_pointer(d.lsa_flat_base, d.stride_4g, index, offset);
}

void* nccl_lsa_pointer(const Window& w, int lsa_rank, size_t offset) {
  check_lsa_rank(w, lsa_rank);
  nccl().require("ncclGetLsaDevicePointer", "ncclGetLsaDevicePointer",
                 newer::kHostPointersVersion);
  void* out = nullptr;
  NCCL_CORE_CHECK(nullptr, nccl().GetLsaDevicePointer(w.handle(), offset, lsa_rank, &out));
  return out;
}

std::optional<void*> nccl_peer_pointer(const Window& w, int peer, size_t offset) {
  nccl().require("ncclGetPeerDevicePointer", "ncclGetPeerDevicePointer",
                 newer::kHostPointersVersion);
  int nranks = owner_of(w)->nranks();
  NCCL_CORE_REQUIRE(peer >= 0 && peer < nranks, "peer ", peer,
                    " is outside the communicator of ", nranks, " ranks");
  void* out = nullptr;
  NCCL_CORE_CHECK(nullptr, nccl().GetPeerDevicePointer(w.handle(), offset, peer, &out));
  if (out == nullptr) {
    return std::nullopt;  // not reachable by load/store
  }
  return out;
}

void* nccl_user_ptr(const Window& w) {
  nccl().require("ncclWinGetUserPtr", "ncclWinGetUserPtr", newer::kHostPointersVersion);
  auto comm = owner_of(w);
  ncclComm_t c = comm->get();
  void* out = nullptr;
  NCCL_CORE_CHECK(c, nccl().WinGetUserPtr(c, w.handle(), &out));
  return out;
}

void copy_from(const Window& w, const void* address, size_t bytes, void* dst,
               cudaStream_t stream) {
  auto comm = owner_of(w);
  auto a = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (int i = 0; i < w.lsa_size() && !inside; ++i) {
    // The LSA team is a contiguous block of world ranks around this one.
    int world = comm->rank() + (i - w.lsa_rank());
    auto base = reinterpret_cast<uintptr_t>(w.lsa_pointer(i, 0));
    size_t size = w.peer_size(world);
    inside = a >= base && a - base <= size && bytes <= size - (a - base);
  }
  NCCL_CORE_REQUIRE(inside, "address ", static_cast<unsigned long long>(a), " + ", bytes,
                    " bytes is not inside any LSA rank's copy of this window");
  if (bytes == 0) {
    return;
  }
  DeviceScope on_device(comm->device());
  NCCL_CORE_CUDA_CHECK(cudaMemcpyAsync(dst, address, bytes, cudaMemcpyDeviceToDevice, stream));
}

} // namespace nccl_core::window_queries
