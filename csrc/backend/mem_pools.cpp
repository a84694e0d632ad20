// The group and torch's memory: NCCL memory through torch's allocator
// interfaces (`mem_allocator` for torch.cuda.MemPool, and `allocate_tensor`,
// which caches in a pool of its own), and register_mem_pool /
// deregister_mem_pool: the segments of a torch MemPool registered with the
// group's communicator, as torch's ProcessGroupNCCL does
// (registration/segment_registry.h keeps them in step with the allocator).
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include "backend/backend.h"
#include "memory/allocator.h"
#include "op/errors.h"
#include "registration/segment_registry.h"

namespace nccl_core {

std::shared_ptr<c10::Allocator> Backend::getMemAllocator() {
  return memory::caching_allocator();
}

bool Backend::supportsTensorAlloc(c10::DeviceIndex /*device*/) {
  return true; // ncclMemAlloc works on every CUDA device NCCL can use
}

at::Tensor Backend::allocateTensor(long size, at::TensorOptions options) {
  NCCL_CORE_CHECK_VALUE(size >= 0, "nccl_core allocate_tensor: negative size ", size);
  at::Device device = options.has_device() ? options.device() : pick_device(nullptr);
  NCCL_CORE_CHECK_VALUE(device.is_cuda(), "nccl_core allocate_tensor: device must be CUDA, got ",
                        device.str());
  if (!device.has_index()) {
    device = at::Device(at::kCUDA, c10::cuda::current_device());
  }
  c10::cuda::CUDAGuard guard(device);
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (!pool_) {
    pool_ = std::make_unique<at::cuda::MemPool>(memory::caching_allocator());
  }
  auto id = pool_->id();
  // Route this thread's allocations on `device` to the pool for one empty().
  c10::cuda::CUDACachingAllocator::beginAllocateToPool(device.index(), id,
                                                       [](cudaStream_t) { return true; });
  at::Tensor t;
  try {
    t = at::empty({size}, options.device(device));
  } catch (...) {
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device.index(), id);
    throw;
  }
  c10::cuda::CUDACachingAllocator::endAllocateToPool(device.index(), id);
  return t;
}

namespace {

constexpr const char* kNoCommunicator =
    "has no NCCL communicator yet: pass device_id=torch.device('cuda', local_rank) to "
    "init_process_group (or new_group), or run a first collective on the group, before "
    "registering a MemPool";

}  // namespace

std::shared_ptr<Communicator> Backend::pool_communicator(at::cuda::MemPool* pool,
                                                         const char* what) {
  NCCL_CORE_CHECK_TYPE(pool != nullptr, "nccl_core ", what,
                       ": expected a torch.cuda.MemPool, got None");
  if (!comm_) {
    C10_THROW_ERROR(DistBackendError,
                    concat("nccl_core ", what, ": group ", info_->label, " ", kNoCommunicator));
  }
  check_healthy();
  NCCL_CORE_CHECK_VALUE(pool->device() == device_->index(), "nccl_core ", what,
                        ": the MemPool is on device cuda:", static_cast<int>(pool->device()),
                        " but this group's communicator is on device ", *device_,
                        " (create the pool with that device current)");
  return comm_;
}

void Backend::register_mem_pool(at::cuda::MemPool* pool, bool symm) {
  auto comm = pool_communicator(pool, "register_mem_pool");
  // Window registration is collective: it cannot join NCCL's open group.
  NCCL_CORE_CHECK_VALUE(!coalescing_,
                        "nccl_core register_mem_pool: not inside a coalescing block");
  c10::cuda::CUDAGuard guard(*device_);
  surface_errors([&] {
    segments::Registry::get().add_pool(comm, pool->id(), device_->index(), symm);
  });
}

void Backend::deregister_mem_pool(at::cuda::MemPool* pool) {
  NCCL_CORE_CHECK_TYPE(pool != nullptr,
                       "nccl_core deregister_mem_pool: expected a torch.cuda.MemPool, got None");
  if (!comm_) {
    C10_THROW_ERROR(DistBackendError,
                    concat("nccl_core deregister_mem_pool: group ", info_->label,
                           " has no NCCL communicator, so no MemPool was registered with it"));
  }
  // After shutdown or abort the registrations went with the communicator.
  check_healthy();
  c10::cuda::CUDAGuard guard(*device_);
  surface_errors([&] { segments::Registry::get().remove_pool(comm_, pool->id()); });
}

std::tuple<size_t, size_t, size_t> Backend::registered_segments(at::cuda::MemPool* pool) const {
  if (!comm_) {
    return {0, 0, 0};
  }
  std::optional<segments::PoolId> id;
  if (pool != nullptr) {
    id = pool->id();
  }
  auto c = segments::Registry::get().counts(comm_.get(), id);
  return {c.segments, c.bytes, c.windows};
}

}  // namespace nccl_core
