// All-reduce in place as one kernel of ours that pushes through NVLink: the
// larger all-reduces, where NCCL's ring leaves NVLink bandwidth
// unused.  It touches no peer's tensor: every remote store lands in the
// peer's staging window (the engine's, nvlink/engine.h), whose size follows
// the call size alone.  So whether a call takes it, and where its stores
// land, depend only on the call's arguments (bytes, type, op) and the group,
// never on where the ranks' tensors live or how their allocators look:
// any memory, any offset, any alignment.
//
// Rank r, block b; every rank cuts each chunk into the same per-block
// slices, so blocks synchronise pairwise with their namesakes, never
// grid-wide, and the phases of different blocks overlap:
//   1. for every peer q: store slice b of chunk q of r's tensor into q's
//      input slot for r (remote stores), then raise flag 1 (r, b) on q;
//   2. wait for flag 1 (p, b) from every peer p; reduce slice b of chunk r
//      with the peers' staged slices; store the result into r's own tensor
//      and into every peer's result slot for r (remote stores); raise flag
//      2 (r, b) on each;
//   3. wait for flag 2 (p, b) from every peer, then copy slice b of each
//      peer's result (chunk p, in r's result slot for p) into r's tensor.
// Each byte crosses NVLink twice, as in a ring, but as posted stores with
// no pipeline steps; the last copy is local.  Remote *loads* cap near
// 220 GB/s on the same links (bench/results/two-shot-ctas-launch-4gpu-h200-2026-11-22.md), which is why
// nothing here pulls.
//
// Slots sit at fixed places of the window, whatever the call's size: the
// input slots in its first half, the result slots in its second, each slot
// `slot_bytes` long (the largest chunk the smallest window of the group
// holds, the same on every rank).  Slots are then reused safely by the next
// call: a peer's input slots are written again only after it raised flag 2
// (it read them all), its result slots only after its namesake block entered
// the next call (its previous kernel, copy-out included, had ended: calls run
// one after another, engine.h).  A layout cut from each call's own chunk
// would break that: a larger call's input slots cover a smaller previous
// call's result slots, which a slow peer may still be copying out after it
// raised flag 2 (DDP under GPU contention took a whole chunk of
// its 8 MB bucket from the next 31 MB bucket's inputs).
// Flags and per-block call counters make the kernel safe to replay from a
// CUDA graph and to follow itself on one stream; the communicator's abort
// flag and the progress stop word end it early (nvlink/progress.h).
//
// Ranks that make different calls never exchange bytes (hazard d of issue
// 47): a flag carries the call's signature (kernels.h) beside its count, and
// a block waiting for a peer must find exactly (count, signature) of its own
// call there.  Any other value, another call at the same count or a peer at
// a count no matched sequence can reach, is recorded in the fault words
// (the watchdog turns it into the group's error) and the call moves no data
// into the tensor.  A call whose chunk does not fit the slots is one that not
// every rank made: it is recorded the same way and stores nothing.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "nvlink/kernels.h"

namespace nccl_core::nvlink {

constexpr int kPushMaxBlocks = 128;
// Staging window layout: flags [phase 1, phase 2][source rank][block],
// then nranks - 1 input slots of one chunk each, then nranks - 1 result
// slots of one chunk each.
constexpr size_t kPushFlagBytes = sizeof(unsigned long long) * 2 * kMaxRanks * kPushMaxBlocks;
// After the slots, in the same memory: PushShared::calls (this rank's only).
constexpr size_t kPushCounterBytes = (sizeof(unsigned long long) * (kPushMaxBlocks + 1) + 15) / 16 * 16;

struct PushShared {
  char* data;                // this rank's tensor (any alignment of its type)
  int data_align;            // 16, 8, 4, 2 or 1: the widest access `data` allows
  char* staging[kMaxRanks];  // each rank's staging window
  // [kPushMaxBlocks] calls each block has completed, then the count of
  // blocks that have left the current call: at the end of this rank's own
  // staging memory (push_staging.h), so that a staging a graph keeps keeps
  // its counters too.
  unsigned long long* calls;
  unsigned long long* done;        // progress.h
  const unsigned long long* stop;  // progress.h
  unsigned long long* fault;       // progress.h: [mismatch, seq]
  // Bytes of one slot (a multiple of 16): a call whose chunk is larger was
  // not made by every rank (each grew its window to hold its calls).
  size_t slot_bytes;
  const volatile int* abort;       // the communicator's abort flag
  int nranks;
  int rank;
};

// Staging bytes one rank needs for an all-reduce of `bytes`.
size_t push_staging_bytes(size_t bytes, int nranks);

// Bytes of one slot in a group whose smallest staging window has
// `min_window` bytes (every rank computes the same).
size_t push_slot_bytes(size_t min_window, int nranks);

// Whether the kernel covers this call: whole 16-byte packs, and a type and
// op of util/reduce.cuh (ncclAvg: floating).  Arguments only: every rank
// answers alike.
bool push_covers(size_t bytes, ncclDataType_t type, int op);

// The widest access (16, 8, 4, 2 or 1 bytes) that `ptr` allows.
int push_alignment(const void* ptr);

// Launches the all-reduce of `count` elements of `type` at `s.data` on
// `stream`, on at most `blocks` blocks.  The tag's ticket (0: none) is
// stored in s.done when the last block leaves, completed, stopped or
// mismatched; its seq and signature identify the call to the peers.
void launch_push(const PushShared& s, size_t count, ncclDataType_t type, int op, int blocks,
                 const CallTag& tag, cudaStream_t stream);

}  // namespace nccl_core::nvlink
