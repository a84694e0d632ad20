// All-reduce in place on NCCL memory that every rank maps (a window over the
// caller's allocation, backend/symmetric.h), as one kernel of ours that
// pushes through NVLink: the larger all-reduces of issue 6, where NCCL's
// ring and its symmetric kernels leave NVLink bandwidth unused.
//
// Rank r, block b; every rank cuts each chunk into the same per-block
// slices, so blocks synchronise pairwise with their namesakes, never
// grid-wide, and the phases of different blocks overlap:
//   1. for every peer q: store slice b of chunk q of r's tensor into q's
//      staging slot for r (remote stores), then raise flag 1 (r, b) on q;
//   2. wait for flag 1 (p, b) from every peer p; reduce slice b of chunk r
//      with the peers' staged slices; store the result into r's own tensor
//      and into every peer's (remote stores); raise flag 2 (r, b) on each;
//   3. wait for flag 2 (p, b) from every peer: this rank's tensor holds every
//      result of slice b, and the peers are done with its staging slots.
// Each byte crosses NVLink twice, as in a ring, but as posted stores with
// no pipeline steps: on 2×H200 1.25–1.4× NCCL's ring at 16–64 MiB
// (bench/push_allreduce.cu).  Remote *loads* cap near 220 GB/s on the same
// links (bench/NOTES.md §9), which is why nothing here pulls.
//
// Flags and per-block call counters make the kernel safe to replay from a
// CUDA graph and to follow itself on one stream; the communicator's abort
// flag and the progress stop word end it early (fast/progress.h).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "fast/kernels.h"

namespace nccl_core::fast {

constexpr int kPushMaxBlocks = 128;
// Staging window layout: flags [phase 1, phase 2][source rank][block],
// then nranks - 1 slots of one chunk each.
constexpr size_t kPushFlagBytes = sizeof(unsigned long long) * 2 * kMaxRanks * kPushMaxBlocks;

struct PushShared {
  char* data[kMaxRanks];     // each rank's copy of the tensor
  char* staging[kMaxRanks];  // each rank's staging window
  // [kPushMaxBlocks] calls each block has completed, then the count of
  // blocks that have left the current call (device memory).
  unsigned long long* calls;
  unsigned long long* done;        // progress.h
  const unsigned long long* stop;  // progress.h
  const volatile int* abort;       // the communicator's abort flag
  int nranks;
  int rank;
};

// Staging bytes one rank needs for an all-reduce of `bytes`.
size_t push_staging_bytes(size_t bytes, int nranks);

// Whether the kernel covers this call: 16-byte aligned tensor of whole
// 16-byte packs, and a type and op of util/reduce.cuh (ncclAvg: floating).
bool push_covers(const void* ptr, size_t bytes, ncclDataType_t type, int op);

// Launches the all-reduce of `count` elements of `type` at every rank's
// `data` on `stream`, on at most `blocks` blocks.  `ticket` (0: none) is
// stored in s.done when the last block leaves, completed or stopped.
void launch_push(const PushShared& s, size_t count, ncclDataType_t type, int op, int blocks,
                 uint64_t ticket, cudaStream_t stream);

}  // namespace nccl_core::fast
