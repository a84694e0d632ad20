// NCCL memory through torch's allocator interfaces: `mem_allocator` for
// torch.cuda.MemPool, and `allocate_tensor`, which caches in a pool of its own.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include "backend/backend.h"
#include "op/errors.h"
#include "memory/allocator.h"

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

} // namespace nccl_core
