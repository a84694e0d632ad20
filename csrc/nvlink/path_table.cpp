#include "nvlink/path_table.h"

#include <algorithm>
#include <climits>

namespace nccl_core::nvlink {

namespace {

constexpr size_t KiB = size_t(1) << 10;
constexpr size_t MiB = size_t(1) << 20;

// Every operation alike.
constexpr std::array<size_t, kColls> all(size_t bytes) { return {bytes, bytes, bytes, bytes, bytes}; }

// Ratios are nccl_core time / backend nccl time in the same job
// (python -m nccl_core_backend.bench; below 1 is faster).  Rows not yet
// measured keep the settings from before the table, and say so.
const std::vector<PathRow> kTable = {
    {1, 1, all(256 * KiB), 0, 0,
     "not measured at one rank: the fast path's earlier default (256 KiB for every "
     "operation); no push (nothing to push to)"},
    {2, 2, all(256 * KiB), 2 * MiB, 16 * MiB,
     "4xH200 (NVLink), torch 2.11, NCCL 2.28.9, python -m nccl_core_backend.bench (per-call "
     "events, back to back), fp32, b26a96d, 2026-11-27: push all_reduce 512 KiB 1.37-1.41, "
     "1 MiB 1.18-1.20 (NCCL there), 2 MiB 0.74, 4 MiB 0.87, 8 MiB 0.91, 16 MiB 0.94, 32 MiB "
     "1.00 (NCCL from there). Fast path kept up to 256 KiB from the graph runs (df2ed55: 100 "
     "all_reduces 1 KiB-4 MiB 0.35-0.65), although this bench measured it 1.10-1.63 eager "
     "(issue 48: to be explained)"},
    {3, 4, all(256 * KiB), 4 * MiB, 8 * MiB,
     "4xH200 (NVLink), torch 2.11, NCCL 2.28.9, python -m nccl_core_backend.bench (per-call "
     "events, back to back), fp32, b26a96d, 2026-11-27, at 4 ranks (3 not measured: taken "
     "from 4): push all_reduce 512 KiB 1.44-1.48, 1 MiB 1.23-1.27, 2 MiB 1.03-1.05 (NCCL "
     "there), 4 MiB 0.91, 8 MiB 0.97, 16 MiB 1.10 (df2ed55; NCCL from there). Fast path kept "
     "up to 256 KiB from the graph runs (df2ed55: 0.41-0.58), although this bench measured "
     "it 1.06-1.77 eager (issue 48: to be explained)"},
    {5, INT_MAX, all(256 * KiB), 0, 0,
     "not measured beyond 4 ranks: the fast path's earlier default (256 KiB for every "
     "operation), no push (its staging and peer count grow with the group)"},
};

}  // namespace

const char* coll_name(Coll c) {
  switch (c) {
    case Coll::kAllReduce: return "all_reduce";
    case Coll::kReduceScatter: return "reduce_scatter_tensor";
    case Coll::kAllGather: return "all_gather_into_tensor";
    case Coll::kBroadcast: return "broadcast";
    case Coll::kAllToAll: return "all_to_all_single";
  }
  return "?";
}

const std::vector<PathRow>& path_table() { return kTable; }

size_t GroupPaths::largest_fast() const {
  return *std::max_element(fast_max_bytes.begin(), fast_max_bytes.end());
}

GroupPaths GroupPaths::uniform(size_t max_bytes) {
  GroupPaths g;
  g.fast_max_bytes = all(max_bytes);
  return g;
}

const PathRow& row_for(int world) {
  for (const auto& row : kTable) {
    if (world >= row.min_world && world <= row.max_world) {
      return row;
    }
  }
  return kTable.back();
}

GroupPaths paths_for(int world, const PathOverrides& overrides) {
  const PathRow& row = row_for(world);
  GroupPaths g;
  g.fast_max_bytes = overrides.fast_max_bytes ? all(*overrides.fast_max_bytes) : row.fast_max_bytes;
  g.push.min_bytes = overrides.push_min_bytes.value_or(row.push_min_bytes);
  g.push.max_bytes = overrides.push_max_bytes.value_or(row.push_max_bytes);
  g.push.ctas = overrides.push_ctas;
  return g;
}

}  // namespace nccl_core::nvlink
