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
// (python -m nccl_core_backend.bench; below 1 is faster).  Each row's reason
// names the results file that holds its measurements.
const std::vector<PathRow> kTable = {
    {1, 1, all(0), all(0), 0, 0, 0, 0, 0,
     "no kernel of ours at one rank: NCCL's one-rank path and the backend's copy beat our one-"
     "way kernel in graphs and eager (bench/results/path-table-h200-2026-11-29.md)"},
    {2, 2, all(MiB), all(0), 2 * MiB, 2 * MiB, 16 * MiB, 0, 512 * KiB,
     "2xH200: the fast path captured up to 1 MiB (0.33-0.48), one way up to 512 KiB, NCCL for "
     "eager small calls (the host's launch), the push from 2 MiB to 16 MiB "
     "(bench/results/path-table-h200-2026-11-29.md)"},
    {3, 4, all(MiB), all(0), 2 * MiB, 4 * MiB, 8 * MiB, MiB, 128 * KiB,
     "4xH200 (3 ranks taken from 4): the fast path captured up to 1 MiB, one way up to 128 KiB"
     " a peer, two shots from 1 MiB, the captured push from 2 MiB, eager push 4-8 MiB "
     "(bench/results/path-table-h200-2026-11-29.md)"},
    {5, INT_MAX, all(256 * KiB), all(0), 0, 0, 0, MiB, 0,
     "not measured beyond 4 ranks: captured calls keep the fast path's 256 KiB, eager calls "
     "NCCL, no push, no one-way kernels (bench/results/path-table-h200-2026-11-29.md)"},
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
  return std::max(*std::max_element(fast_max_bytes.begin(), fast_max_bytes.end()),
                  *std::max_element(eager_fast_max_bytes.begin(), eager_fast_max_bytes.end()));
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
  g.eager_fast_max_bytes = overrides.fast_max_bytes         ? all(*overrides.fast_max_bytes)
                           : overrides.eager_fast_max_bytes ? all(*overrides.eager_fast_max_bytes)
                                                            : row.eager_fast_max_bytes;
  g.push.min_bytes = overrides.push_min_bytes.value_or(row.push_min_bytes);
  g.push.eager_min_bytes = overrides.push_min_bytes.value_or(row.eager_push_min_bytes);
  g.push.max_bytes = overrides.push_max_bytes.value_or(row.push_max_bytes);
  g.push.ctas = overrides.push_ctas;
  g.two_shot_min_bytes = overrides.two_shot_min_bytes.value_or(row.two_shot_min_bytes);
  g.one_way_max_bytes = overrides.one_way_max_bytes.value_or(row.one_way_max_bytes);
  return g;
}

}  // namespace nccl_core::nvlink
