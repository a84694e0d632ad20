#include "registration/symmetric.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraphsUtils.cuh>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "memory/allocator.h"
#include "nccl/api.h"

namespace nccl_core {

namespace {

constexpr int kCollSymmetric = 0x1;  // NCCL_WIN_COLL_SYMMETRIC (2.27+)
// NCCL maps every window into one symmetric address range per communicator;
// past this many live windows the cache stops registering (the same call on
// every rank, since every rank holds the same windows).
constexpr size_t kMaxWindows = 64;
// Larger allocations are not mapped for the push all-reduce: each window
// takes its size of every peer's address space.
constexpr size_t kMaxPushAllocation = size_t(2) << 30;

}  // namespace

SymmetricCache::~SymmetricCache() {
  // Memory that NCCL may still map stays pinned (leaked) rather than freed
  // under a live window; the communicator's end closes them all first.
  for (auto& e : entries_) {
    if (e.window && !e.window->is_valid()) {
      memory::unpin(e.base);
    }
  }
}

const SymmetricCache::Entry* SymmetricCache::admit(Communicator& comm, const void* ptr,
                                                    size_t bytes, cudaStream_t stream) {
  if (disabled_ || bytes == 0) {
    return nullptr;
  }
  if (!comm.lsa_spans_all()) {
    disabled_ = true;  // both uses need one NVLink domain
    return nullptr;
  }
  auto alloc = memory::find(ptr);
  if (!alloc || alloc->device != comm.device()) {
    return nullptr;
  }
  for (const auto& e : entries_) {
    if (e.base == alloc->base) {
      // The steady state: registered at an earlier call (or refused then).
      return e.window ? &e : nullptr;
    }
  }
  const bool symmetric = alloc->size <= max_bytes_;
  if (!symmetric && !(pushes_(bytes) && alloc->size <= kMaxPushAllocation)) {
    return nullptr;
  }
  // Registration is a collective host call: not while capturing a graph (every
  // rank captures the same calls, so none registers).
  if (at::cuda::currentStreamCaptureStatusMayInitCtx() != at::cuda::CaptureStatus::None) {
    return nullptr;
  }
  sweep(comm, stream);
  if (entries_.size() >= kMaxWindows) {
    return nullptr;
  }
  // Every rank's allocation size, before registering: the same vector on
  // every rank, so every rank decides alike.  Sizes that differ are refused
  // (remembered, so later calls do not ask again): NCCL's symmetric kernels
  // and the push all-reduce address every peer's copy at this rank's offset.
  auto sizes = comm.all_gather_sizes(alloc->size, "ncclAllGather (allocation sizes)");
  for (size_t s : sizes) {
    if (s != alloc->size) {
      entries_.push_back(Entry{alloc->base, alloc->size, nullptr, {}});
      return nullptr;
    }
  }
  auto window = Window::create(comm.shared_from_this(), alloc->base, alloc->size,
                               symmetric ? kCollSymmetric : 0, c10::Storage(), std::move(sizes));
  if (!window) {
    disabled_ = true;  // no windows on this system
    return nullptr;
  }
  memory::pin(alloc->base);
  Entry entry{alloc->base, alloc->size, std::move(window), {}};
  for (int r = 0; r < comm.nranks(); ++r) {
    auto p = entry.window->peer_pointer(r, 0);
    if (!p) {
      entry.peers.clear();  // not mapped everywhere: NCCL's kernels only
      break;
    }
    entry.peers.push_back(static_cast<char*>(*p));
  }
  entries_.push_back(std::move(entry));
  return &entries_.back();
}

void SymmetricCache::sweep(Communicator& comm, cudaStream_t stream) {
  if (entries_.empty()) {
    return;
  }
  // 1 where this rank has released the memory; MIN over the ranks leaves 1
  // only where every rank has.
  std::vector<int32_t> dead(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    dead[i] = memory::released(entries_[i].base) ? 1 : 0;
  }
  auto flags = at::tensor(dead, at::kInt).to(at::Device(at::kCUDA, comm.device()));
  comm.call(ncclAllReduce(flags.data_ptr(), flags.data_ptr(), dead.size(), ncclInt32, ncclMin,
                          comm.get(), stream),
            "ncclAllReduce (symmetric window sweep)");
  NCCL_CORE_CUDA_CHECK(cudaMemcpyAsync(dead.data(), flags.data_ptr(),
                                       dead.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                                       stream));
  comm.wait_stream(stream, "ncclAllReduce (symmetric window sweep)");
  std::vector<Entry> kept;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (dead[i] == 0) {
      kept.push_back(std::move(entries_[i]));
      continue;
    }
    if (!entries_[i].window) {
      continue;  // a refused allocation: nothing registered, nothing pinned
    }
    entries_[i].window->close();  // collective, in registration order everywhere
    memory::unpin(entries_[i].base);
  }
  entries_ = std::move(kept);
}

void SymmetricCache::clear() {
  for (auto& e : entries_) {
    if (e.window) {
      e.window->close();
      memory::unpin(e.base);
    }
  }
  entries_.clear();
}

}  // namespace nccl_core
