#include "registration/pool_agreement.h"

#include <cstdint>

#include "comm/communicator.h"
#include "nccl/api.h"
#include "util/concat.h"

namespace nccl_core::segments {

namespace {

// Order-sensitive digest of the segment sizes (FNV-1a over 64-bit words).
size_t digest(const std::vector<size_t>& sizes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t s : sizes) {
    h ^= static_cast<uint64_t>(s);
    h *= 0x100000001b3ull;
  }
  return static_cast<size_t>(h);
}

}  // namespace

void agree_on_segments(Communicator& comm, const std::vector<size_t>& sizes,
                       const std::string& pool) {
  auto counts = comm.all_gather_sizes(sizes.size(), "ncclAllGather (MemPool segment counts)");
  auto digests = comm.all_gather_sizes(digest(sizes), "ncclAllGather (MemPool segment sizes)");
  for (size_t r = 0; r < counts.size(); ++r) {
    NCCL_CORE_REQUIRE(counts[r] == sizes.size(), "register_mem_pool(symm=True): MemPool ",
                      pool, " holds ", sizes.size(), " segments on rank ", comm.rank(),
                      " but ", counts[r], " on rank ", r,
                      "; symmetric windows need the same segments on every rank (allocate "
                      "the same tensors in the pool on every rank before registering it)");
  }
  for (size_t r = 0; r < digests.size(); ++r) {
    NCCL_CORE_REQUIRE(digests[r] == digest(sizes), "register_mem_pool(symm=True): MemPool ",
                      pool, " holds ", sizes.size(), " segments on every rank, but of other "
                      "sizes on rank ", r, " than on rank ", comm.rank(),
                      "; symmetric windows need segments of the same sizes in the same order "
                      "on every rank (allocate the same tensors in the same order)");
  }
}

void agree_none_freed(Communicator& comm, bool freed_here, const std::string& pool) {
  auto freed = comm.all_gather_sizes(freed_here ? 1 : 0,
                                     "ncclAllGather (MemPool segments freed meanwhile)");
  for (size_t r = 0; r < freed.size(); ++r) {
    NCCL_CORE_REQUIRE(freed[r] == 0, "register_mem_pool(symm=True): a segment of MemPool ",
                      pool, " was freed on rank ", r, " while the pool was being registered; "
                      "register it while no other thread frees its memory");
  }
}

}  // namespace nccl_core::segments
