// Host memory the GPU can write (pinned, mapped into the device's address
// space): how a kernel tells the host something without the host waiting on
// the GPU.  The host reads it with plain volatile loads; the kernels' stores
// reach it over the bus.  One owner.
//
// Blocks come from a process-wide cache and go back to it, never to CUDA:
// cudaFreeHost waits for the whole device, and the last owner of a block can
// be anything that outlives its communicator (a Work a program drops later,
// say) while a kernel of another group waits on the device for its peers;
// that wait would then never end.  The cache holds as many blocks as were
// ever alive at once, each a few words (progress words, abort flags).  An
// owner lets go only after the kernels that write its block have left.
#pragma once

#include <cstddef>

namespace nccl_core {

class MappedHost {
 public:
  // `bytes` zeroed, portable to every device's context.
  explicit MappedHost(size_t bytes);
  ~MappedHost();
  MappedHost(const MappedHost&) = delete;
  MappedHost& operator=(const MappedHost&) = delete;

  void* host() const { return host_; }
  void* device() const { return device_; }  // the same bytes, as kernels see them

  // Blocks in the cache that no owner holds (what tests check).
  static size_t cached_blocks();

 private:
  size_t size_class_ = 0;
  void* host_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace nccl_core
