#include "memory/mapped_host.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "nccl/api.h"

namespace nccl_core {

namespace {

// The smallest block: one cache line, so no two owners share a line the GPU
// writes.
constexpr size_t kMinBlock = 64;

size_t size_class_of(size_t bytes) {
  size_t size = kMinBlock;
  while (size < bytes) {
    NCCL_CORE_REQUIRE(size <= (SIZE_MAX >> 1), "mapped host block of ", bytes, " bytes");
    size <<= 1;
  }
  return size;
}

struct Block {
  void* host;
  void* device;
};

// Never destroyed: the process's exit returns its pinned memory, and no CUDA
// call may run in static destruction.
class BlockCache {
 public:
  static BlockCache& get() {
    static BlockCache* cache = new BlockCache();
    return *cache;
  }

  Block take(size_t size_class) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& free = free_[size_class];
      if (!free.empty()) {
        Block b = free.back();
        free.pop_back();
        return b;
      }
    }
    Block b{nullptr, nullptr};
    NCCL_CORE_CUDA_CHECK(
        cudaHostAlloc(&b.host, size_class, cudaHostAllocMapped | cudaHostAllocPortable));
    cudaError_t err = cudaHostGetDevicePointer(&b.device, b.host, 0);
    if (err != cudaSuccess) {
      (void)cudaFreeHost(b.host);  // never handed out: nothing on the device uses it
      api::cuda_check(err, "cudaHostGetDevicePointer");
    }
    return b;
  }

  void give_back(size_t size_class, Block b) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      free_[size_class].push_back(b);
    } catch (...) {
      // No room to keep it: the block stays pinned and unused (never freed
      // here, see the header).
    }
  }

  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const auto& entry : free_) {
      n += entry.second.size();
    }
    return n;
  }

 private:
  std::mutex mutex_;
  std::map<size_t, std::vector<Block>> free_;
};

}  // namespace

MappedHost::MappedHost(size_t bytes) : size_class_(size_class_of(bytes)) {
  Block b = BlockCache::get().take(size_class_);
  std::memset(b.host, 0, size_class_);
  host_ = b.host;
  device_ = b.device;
}

MappedHost::~MappedHost() {
  if (host_ != nullptr) {
    BlockCache::get().give_back(size_class_, Block{host_, device_});
  }
}

size_t MappedHost::cached_blocks() {
  return BlockCache::get().cached();
}

}  // namespace nccl_core
