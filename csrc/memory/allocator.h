// NCCL-allocated device memory (ncclMemAlloc / ncclMemFree).
//
// ncclMemAlloc maps memory through the CUDA VMM API with the properties NCCL
// needs for zero-copy registration, windows and symmetric kernels.  Tensors
// from `empty` free their memory when their storage dies, once the work their
// releasing thread's current stream queued before has run; `caching_allocator`
// is the same memory behind torch's CUDAAllocator interface, for
// torch.cuda.MemPool and Backend::allocateTensor.
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>

namespace nccl_core::memory {

// ncclMemAlloc on `device` (at least one byte).
void* allocate(size_t bytes, int device);
// ncclMemFree on `device`; errors are ignored (called from deleters).
void release(void* ptr, int device) noexcept;
// release() once the work the current stream has queued so far has run (an
// event; at once under graph capture): what `empty` tensors' deleters call,
// since ncclMemFree itself is not ordered with the GPU.
void release_after_use(void* ptr, int device) noexcept;
// Releases what release_after_use deferred and the GPU has passed (also done
// by allocate and live_bytes).
void release_completed() noexcept;

// Zeroes `bytes` at `ptr`, memory from `allocate` or `empty` that no queued
// work uses yet, on a private stream, and waits for that alone: no user
// stream (which may hold another group's stuck kernel) is waited on.
void zero_fresh(void* ptr, size_t bytes);

// Uninitialised tensor in NCCL memory; `fortran` gives column-major strides.
at::Tensor empty(at::IntArrayRef sizes, at::ScalarType dtype, int device, bool fortran);

// Bytes currently allocated through this module (live tensors and pools).
size_t live_bytes();

// The allocation of this module that holds `ptr` (its base and size), if any.
struct Allocation {
  void* base;
  size_t size;
  int device;
};
std::optional<Allocation> find(const void* ptr);

// Pins the allocation at `base` and returns a storage over it whose end
// unpins it.  A pinned allocation outlives its owner: `release` only marks
// it released, and the storage's end frees it then.  What a window over the
// memory keeps, so that the memory every rank maps stays until the window is
// gone (deregistered, or its communicator ended), whenever the owner lets go.
c10::Storage pinned_storage(void* base);

// ncclMemAlloc/ncclMemFree as a torch CUDAAllocator (one per process).
std::shared_ptr<c10::cuda::CUDACachingAllocator::CUDAAllocator> caching_allocator();

} // namespace nccl_core::memory
