#include "memory/allocator.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>

#include <map>
#include <mutex>
#include <vector>

#include "nccl/api.h"
#include "nccl/seam.h"
#include "util/checked.h"

namespace nccl_core::memory {

namespace {

struct Entry {
  size_t size;
  int device;
  int pins = 0;  // windows that map it (pinned_storage): freed once none does
  bool released = false;
};

std::atomic<size_t> g_live{0};
// Allocations by base address (ordered: `find` looks up interior pointers).
// Both are leaked on purpose: tensors and pools may be freed during static
// destruction.
std::mutex& table_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::map<void*, Entry>& table() {
  static auto* m = new std::map<void*, Entry>();
  return *m;
}

// `device` current for a scope, errors ignored (deleters must not throw,
// which rules out c10's CUDAGuard).
struct OnDevice {
  explicit OnDevice(int device) : device_(device) {
    (void)cudaGetDevice(&previous_);
    if (previous_ != device_) {
      (void)cudaSetDevice(device_);
    }
  }
  ~OnDevice() {
    if (previous_ >= 0 && previous_ != device_) {
      (void)cudaSetDevice(previous_);
    }
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int device_;
  int previous_ = -1;
};

void free_now(void* ptr, int device) noexcept {
  OnDevice on(device);
  (void)nccl().MemFree(ptr);
}

// Frees waiting for the GPU work queued before them (release_after_use).
struct Deferred {
  cudaEvent_t done;
  void* ptr;
  int device;
};
std::mutex& deferred_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::vector<Deferred>& deferred() {
  static auto* v = new std::vector<Deferred>();
  return *v;
}

} // namespace

void release_completed() noexcept {
  std::vector<Deferred> ready;
  {
    std::lock_guard<std::mutex> lock(deferred_mutex());
    auto& pending = deferred();
    for (size_t i = 0; i < pending.size();) {
      cudaError_t state = cudaEventQuery(pending[i].done);
      if (state == cudaErrorNotReady) {
        ++i;
        continue;
      }
      (void)cudaGetLastError();  // an error here frees anyway: the work is gone
      ready.push_back(pending[i]);
      pending[i] = pending.back();
      pending.pop_back();
    }
  }
  for (auto& d : ready) {
    (void)cudaEventDestroy(d.done);
    release(d.ptr, d.device);
  }
}

void release_after_use(void* ptr, int device) noexcept {
  if (ptr == nullptr) {
    return;
  }
  // ncclMemFree is not stream-ordered: a tensor dropped right after the
  // program queued work on it (a plain collective's input, a kernel) must
  // keep its memory until that work ran.  The event marks the end of what
  // the releasing thread's current stream has queued, as torch's caching
  // allocator assumes for its own blocks.  Under graph capture nothing can
  // be waited for: the memory goes at once, as before.
  cudaEvent_t done = nullptr;
  bool deferred_ok = false;
  {
    OnDevice on(device);
    cudaStream_t stream =
        c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    deferred_ok = cudaStreamIsCapturing(stream, &capture) == cudaSuccess &&
                  capture == cudaStreamCaptureStatusNone &&
                  cudaEventCreateWithFlags(&done, cudaEventDisableTiming) == cudaSuccess &&
                  cudaEventRecord(done, stream) == cudaSuccess;
  }
  if (!deferred_ok) {
    (void)cudaGetLastError();
    if (done != nullptr) {
      (void)cudaEventDestroy(done);
    }
    release(ptr, device);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(deferred_mutex());
    deferred().push_back(Deferred{done, ptr, device});
  }
  release_completed();
}

void* allocate(size_t bytes, int device) {
  release_completed();  // memory whose last use has run goes back first
  size_t n = bytes == 0 ? 1 : bytes;
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  void* ptr = nullptr;
  NCCL_CORE_CHECK(nullptr, nccl().MemAlloc(&ptr, n));
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    table()[ptr] = Entry{n, device};
  }
  g_live += n;
  return ptr;
}

void release(void* ptr, int device) noexcept {
  if (ptr == nullptr) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    auto it = table().find(ptr);
    if (it != table().end()) {
      if (it->second.pins > 0) {
        it->second.released = true;  // freed by unpin
        return;
      }
      g_live -= it->second.size;
      table().erase(it);
    }
  }
  free_now(ptr, device);
}

std::optional<Allocation> find(const void* ptr) {
  auto* p = const_cast<void*>(ptr);
  std::lock_guard<std::mutex> lock(table_mutex());
  auto it = table().upper_bound(p);
  if (it == table().begin()) {
    return std::nullopt;
  }
  --it;
  auto* base = static_cast<char*>(it->first);
  if (it->second.released || static_cast<char*>(p) >= base + it->second.size) {
    return std::nullopt;
  }
  return Allocation{it->first, it->second.size, it->second.device};
}

namespace {

// Ends a pin (pinned_storage's deleter); frees the allocation if its owner
// released it meanwhile.
void unpin(void* base) {
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    auto it = table().find(base);
    if (it == table().end()) {
      return;
    }
    if (--it->second.pins > 0 || !it->second.released) {
      return;
    }
    device = it->second.device;
    g_live -= it->second.size;
    table().erase(it);
  }
  free_now(base, device);
}

}  // namespace

c10::Storage pinned_storage(void* base) {
  size_t size = 0;
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    auto it = table().find(base);
    NCCL_CORE_REQUIRE(it != table().end() && !it->second.released,
                      "pinned_storage: not the start of a live allocation of nccl_core_backend");
    ++it->second.pins;
    size = it->second.size;
    device = it->second.device;
  }
  c10::DataPtr data(base, base, [](void* ctx) { unpin(ctx); },
                    c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device)));
  return c10::Storage(c10::Storage::use_byte_size_t(), size, std::move(data), nullptr, false);
}

size_t live_bytes() {
  release_completed();
  return g_live.load();
}

void zero_fresh(void* ptr, size_t bytes) {
  cudaStream_t s = nullptr;
  NCCL_CORE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaError_t err = cudaMemsetAsync(ptr, 0, bytes, s);
  if (err == cudaSuccess) {
    err = cudaStreamSynchronize(s);
  }
  (void)cudaStreamDestroy(s);
  NCCL_CORE_CUDA_CHECK(err);
}

at::Tensor empty(at::IntArrayRef sizes, at::ScalarType dtype, int device, bool fortran) {
  std::vector<int64_t> strides(sizes.size());
  // Sizes are user numbers: the element count, the strides and the bytes
  // must not wrap (a wrapped size would allocate too little).
  size_t numel = 1;
  for (int64_t s : sizes) {
    NCCL_CORE_REQUIRE(s >= 0, "empty: negative dimension ", s);
    numel = checked::mul(numel, static_cast<size_t>(s), "empty: the element count");
  }
  size_t step = 1;
  for (size_t k = 0; k < sizes.size(); ++k) {
    size_t i = fortran ? k : sizes.size() - 1 - k; // innermost first
    strides[i] = checked::narrow<int64_t>(step, "empty: a stride");
    step = checked::mul(step, static_cast<size_t>(std::max<int64_t>(sizes[i], 1)),
                        "empty: a stride");
  }
  checked::narrow<int64_t>(numel, "empty: the element count");
  size_t bytes = checked::bytes(numel, c10::elementSize(dtype), "empty: the size in bytes");
  void* ptr = allocate(bytes, device);
  auto options = at::TensorOptions()
                     .dtype(dtype)
                     .device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)));
  return at::from_blob(
      ptr, sizes, strides, [device](void* p) { release_after_use(p, device); }, options);
}

std::shared_ptr<c10::cuda::CUDACachingAllocator::CUDAAllocator> caching_allocator() {
  static auto alloc = torch::cuda::CUDAPluggableAllocator::createCustomAllocator(
      [](size_t bytes, int device, cudaStream_t) { return allocate(bytes, device); },
      [](void* ptr, size_t, int device, cudaStream_t) { release(ptr, device); });
  return alloc;
}

} // namespace nccl_core::memory
