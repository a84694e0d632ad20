// Ranks emulated on one GPU: the fast path's and the push's kernels (kernels.h,
// push.h) run for `nranks` ranks whose windows are buffers of this one GPU,
// each rank's calls on a stream of its own.  The kernels take plain peer
// pointers, so they cannot tell these buffers from NVLink peers' windows.
//
// What it is for: checking the kernels' own logic on a one-GPU host (every
// type, operator, size, grid and kernel width, one and two shots,
// back-to-back calls, the push's slots, the signatures that catch ranks
// making different calls), and trying a kernel change before a multi-GPU
// host is lent.  What it cannot show: anything that needs separate GPUs
// (NVLink timing, the fences between one GPU's L2 and another's), nor a rank
// that trails its peers by a whole call (halves that never alternated went
// unnoticed here).  The engine, windows and NCCL are not
// involved.
//
// Every rank's kernel of a call must be resident at once (the barriers wait
// for every block), so the grids are capped at the GPU's multiprocessors
// split between the ranks: max_blocks() per rank for the fast path, and the
// push's `blocks` is capped the same way.  A call whose ranks never meet
// (a test that gives one rank another grid) is ended by synchronize()'s
// timeout through the abort flag, as a watchdog ends a real one.
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "memory/mapped_host.h"
#include "nvlink/kernels.h"
#include "nvlink/push.h"

namespace nccl_core::nvlink {

class EmulatedRanks {
 public:
  // On `device`: fast-path windows whose halves hold `max_bytes`, and push
  // staging for all-reduces of up to `push_max_bytes` (0: no push).
  // `max_blocks` (0: as many as fit) caps the fast path's grids lower: a
  // small grid gives each thread many iterations, so a rank whose stores
  // stall (outputs in host memory) runs behind its peers.  Calls that send
  // each peer at most `one_way_max_bytes` (0: none) take the one-way kernels
  // (one_way.h), as a group's path table says.
  EmulatedRanks(int nranks, size_t max_bytes, size_t push_max_bytes, int device,
                int max_blocks = 0, size_t one_way_max_bytes = 0);
  ~EmulatedRanks();
  EmulatedRanks(const EmulatedRanks&) = delete;
  EmulatedRanks& operator=(const EmulatedRanks&) = delete;

  int nranks() const { return nranks_; }
  int device() const { return device_; }
  int max_blocks() const { return max_blocks_; }
  int max_push_blocks() const { return max_push_blocks_; }
  // The stream rank `rank`'s calls run on (tensors it uses record it).
  c10::cuda::CUDAStream stream(int rank) const { return streams_.at(rank); }

  // Rank `rank`'s part of one call, queued on its stream after the work the
  // caller's current stream holds so far (kernels.h gives
  // the arguments' meaning; `seq` goes into the call's signature, so ranks
  // given different ones make mismatched calls).  False: the kernels do not
  // cover this type and operator, nothing was queued.
  bool reduce(int rank, const void* in, size_t in_count, void* out, size_t count,
              size_t src_offset, ncclDataType_t type, int op, size_t two_shot_min_bytes,
              uint64_t seq);
  void copy(int rank, const void* in, size_t in_bytes, void* out, size_t bytes,
            size_t src_offset, int first, int npeers, uint64_t seq);
  // In place on `data`: `count` elements, at most `blocks` blocks.
  void push(int rank, void* data, size_t count, ncclDataType_t type, int op, int blocks,
            uint64_t seq);

  // Waits until every rank's queued calls have ended, at most `timeout_s`;
  // past it, raises the abort flag (the kernels leave at their next poll),
  // waits for them and throws: the ranks are then unusable.
  void synchronize(double timeout_s);
  // Per rank: [the first mismatch its kernels recorded (pack_fault, 0 while
  // none), that call's seq].
  std::vector<std::pair<uint64_t, uint64_t>> faults() const;

 private:
  void check_rank(int rank) const;
  // Rank `rank`'s stream waits for the caller's current stream (the inputs'
  // copies, the outputs' fills), as a collective follows its caller's stream.
  void follow_caller(int rank);
  void check_usable() const;
  Shared shared_for(int rank) const;

  const int nranks_;
  const int device_;
  int max_blocks_ = 0;
  int one_way_max_blocks_ = 0;
  int max_push_blocks_ = 0;
  bool broken_ = false;
  size_t half_ = 0;
  size_t one_way_slot_ = 0;
  size_t window_bytes_ = 0;   // each rank's
  size_t push_capacity_ = 0;  // bytes of flags and slots per rank
  at::Tensor windows_;        // [nranks][window_bytes_]
  at::Tensor epochs_;         // [nranks][3]
  at::Tensor staging_;        // [nranks][push_capacity_ + kPushCounterBytes]
  at::Tensor stop_;           // one zero word all ranks read
  std::unique_ptr<MappedHost> abort_;    // one int: nonzero, the kernels leave
  std::unique_ptr<MappedHost> reports_;  // per rank: [done, fault, fault seq, unused]
  std::vector<c10::cuda::CUDAStream> streams_;
};

}  // namespace nccl_core::nvlink
