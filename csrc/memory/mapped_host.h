// Host memory the GPU can write (pinned, mapped into the device's address
// space): how a kernel tells the host something without the host waiting on
// the GPU.  The host reads it with plain volatile loads; the kernels' stores
// reach it over the bus.  One owner; freed with the object.
#pragma once

#include <cstddef>

namespace nccl_core {

class MappedHost {
 public:
  // `bytes` zeroed, on the current device's context (portable to all).
  explicit MappedHost(size_t bytes);
  ~MappedHost();
  MappedHost(const MappedHost&) = delete;
  MappedHost& operator=(const MappedHost&) = delete;

  void* host() const { return host_; }
  void* device() const { return device_; }  // the same bytes, as kernels see them

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace nccl_core
