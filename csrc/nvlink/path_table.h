// Where each dist collective runs: our NVLink kernels (the fast path of
// engine.h, the push all-reduce of push.h) or NCCL, by world size,
// operation and size.  One table, each row with the measurement that set it
// (no size may be slower than backend nccl); a group's options
// (fast_path_max_bytes, push_min_bytes, push_max_bytes and their NCCL_CORE_*
// variables) override it for every operation, in both modes.  Sizes are what
// the fast path stages: the call's input bytes on each rank.  The fast path
// has two limits: one for calls captured into a CUDA graph, where a call
// costs the kernel alone, and one for eager calls, where a call costs its
// host time too (12.3 µs a call against NCCL's 8.5 on the GPU hosts
// measured, 5.2 µs of it launching our kernel: docs/performance.md).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <vector>

namespace nccl_core::nvlink {

enum class Coll : int { kAllReduce = 0, kReduceScatter, kAllGather, kBroadcast, kAllToAll };
constexpr int kColls = 5;
// torch's names: all_reduce, reduce_scatter_tensor, all_gather_into_tensor,
// broadcast, all_to_all_single.
const char* coll_name(Coll c);

// The push all-reduce: captured calls of [min_bytes, max_bytes], eager ones
// of [eager_min_bytes, max_bytes] (eager_min_bytes >= min_bytes), on at most
// `ctas` blocks; max_bytes 0 = off.
struct PushConfig {
  size_t min_bytes = 0;
  size_t eager_min_bytes = 0;
  size_t max_bytes = 0;
  int ctas = 32;
  // Either mode (the staging is set up for these sizes).
  bool covers(size_t bytes) const { return max_bytes > 0 && bytes >= min_bytes && bytes <= max_bytes; }
  bool covers(size_t bytes, bool captured) const {
    return covers(bytes) && (captured || bytes >= eager_min_bytes);
  }
};

// One row: groups of min_world..max_world ranks.
struct PathRow {
  int min_world;
  int max_world;
  std::array<size_t, kColls> fast_max_bytes;  // captured calls: fast path up to this; 0 = never
  std::array<size_t, kColls> eager_fast_max_bytes;  // eager calls: likewise (each mode its own)
  size_t push_min_bytes;        // all_reduce only: captured calls
  size_t eager_push_min_bytes;  // eager calls (at least the above)
  size_t push_max_bytes;        // 0 = never
  // Fast-path all_reduces from this size on take two shots (kernels.h); 0 = never.
  size_t two_shot_min_bytes;
  // Fast-path calls that send each peer at most this many bytes take the
  // one-way kernels (one_way.h): all_reduce, reduce_scatter, all_gather,
  // broadcast; 0 = never.
  size_t one_way_max_bytes;
  const char* measured;   // the run that set the row
};

const std::vector<PathRow>& path_table();

// A group's choice.
struct GroupPaths {
  std::array<size_t, kColls> fast_max_bytes{};        // captured calls
  std::array<size_t, kColls> eager_fast_max_bytes{};  // eager calls
  PushConfig push;
  size_t two_shot_min_bytes = 0;  // fast-path all_reduce; 0 = never
  size_t one_way_max_bytes = 0;   // bytes sent to each peer; 0 = never
  size_t fast_max(Coll c) const { return fast_max_bytes[static_cast<int>(c)]; }
  size_t eager_fast_max(Coll c) const { return eager_fast_max_bytes[static_cast<int>(c)]; }
  size_t largest_fast() const;  // what the scratch window holds (either mode)
  bool any() const { return largest_fast() > 0 || push.max_bytes > 0; }
};

// What a group's options set; unset ones come from the table.
struct PathOverrides {
  std::optional<size_t> fast_max_bytes;        // both modes
  std::optional<size_t> eager_fast_max_bytes;  // eager calls, where the above is unset
  std::optional<size_t> push_min_bytes;  // both modes
  std::optional<size_t> push_max_bytes;
  int push_ctas = 32;
  std::optional<size_t> two_shot_min_bytes;
  std::optional<size_t> one_way_max_bytes;
};

// The row for a group of `world` ranks (the last row beyond the table).
const PathRow& row_for(int world);
GroupPaths paths_for(int world, const PathOverrides& overrides);

}  // namespace nccl_core::nvlink
