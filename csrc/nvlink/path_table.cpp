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
    {1, 1, all(0), all(0), 0, 0, 0, 0, 0,
     "no kernel of ours at one rank: 1xH200, torch 2.11, NCCL 2.28.9, every operation 8 B-1 "
     "MiB, graphs of 100 calls and eager, 3 rounds (session 16, 2026-11-29): in graphs our "
     "one-way kernel took 2.1-3.4 us a call against NCCL's 0.15 us (in-place all_reduce, "
     "broadcast) and 1-1.9 us (the copies): 1.7-18.8x; eager it was 0.59-0.86. With the row "
     "off (session 18, same host, fp32 8 B-1 MiB) graphs measured 0.68-1.51 at 0.09-2.2 us a "
     "call on both sides (every row above 1.02 a 0.12-0.15 us graph node against 0.09-0.14 "
     "on the same NCCL call) and eager 0.44-1.19: reductions take the backend's own copy "
     "(nothing at all in place), copies NCCL's one-rank path"},
    {2, 2, all(MiB), all(0), 2 * MiB, 2 * MiB, 16 * MiB, 0, 512 * KiB,
     "Captured all_reduce: 100 bf16 calls in a CUDA graph, 2 and 4xH200 (NVLink), torch "
     "2.11, NCCL 2.28.9, the grid by size (kernels.cu): 64 KiB-256 KiB 0.39-0.43, 512 KiB "
     "0.40-0.48, 1 MiB 0.45-0.46 (6.9-13.7 us a call against nccl's 16-30), session 7, "
     "2026-11-27; the other operations, graphs of 100 fp32 calls on 2xH200, 64 KiB-1 MiB: "
     "all_gather 0.40, reduce_scatter 0.41-0.47, broadcast 0.33-0.44, all_to_all 0.34-0.40 "
     "(5.5-10.9 us a call), session 8, 2026-11-27. Eager: the fast path 1.13-1.45 (all_reduce) and 1.24-1.65 "
     "(broadcast) at 8 B-256 KiB on 4xH200 (12.3 us a call, of which 5.2 us host time "
     "launching the kernel, against nccl's 7.3-12.6 us), so NCCL there (on a 2xH200 host "
     "whose nccl took 46 us a call the fast path was 0.53-0.68: the host decides). Push "
     "all_reduce (both modes) 512 KiB 1.37-1.41, 1 MiB 1.18-1.20 (NCCL there), 2 MiB 0.74, "
     "4 MiB 0.87, 8 MiB 0.91, 16 MiB 0.94, 32 MiB 1.00 (NCCL from there), b26a96d. One "
     "shot at every size: the two-shot that stores took 1.23-1.65x the one-shot's time at "
     "64 KiB-1 MiB (graphs, 2xH200, session 8). One way up to 512 KiB: graphs of 100 calls, "
     "2xH200, bf16 all_reduce 8 B-128 KiB 3.9-4.8 us against the barrier kernels' 5.8-7.1 "
     "(torch's symm_mem two-shot 6.1-7.3), all_gather, reduce_scatter and broadcast 1-256 "
     "KiB 3.3-5.0 against 5.1-7.6 (session 12, 2026-11-28); with up to 128 blocks, all_reduce "
     "256 KiB 5.36 and 512 KiB 7.09 us (the barrier kernels 7.5 / 9.7, torch's two-shot "
     "7.26 / 8.06), 512 KiB all_gather 6.07 and reduce_scatter 5.95 (barrier kernels 6.00 / "
     "5.89), broadcast 5.64 (7.53) (session 13, 2026-11-28); 1 MiB stays with the barrier "
     "kernels (one way 11.9-15.7 us against their 11.4)"},
    {3, 4, all(MiB), all(0), 2 * MiB, 4 * MiB, 8 * MiB, MiB, 128 * KiB,
     "4xH200 (NVLink), torch 2.11, NCCL 2.28.9, python -m nccl_core_backend.bench (per-call "
     "events, back to back), at 4 ranks (3 not measured: taken from 4). Captured all_reduce, "
     "100 bf16 calls in a graph: 64 KiB-256 KiB 0.37-0.50 (9.2-11.3 us a call), 512 KiB "
     "0.52 and 1 MiB 0.59 on the fast path (15.9 / 22.7 us against 30.6 / 38.4; NCCL "
     "there before: 0.93-1.03), session 7, 2026-11-27; the other operations captured, "
     "graphs of 100 calls, 64 KiB-1 MiB: 0.30-0.65 (the limit forced to 1 MiB, 1ce482d, "
     "session 9, 2026-11-28). Eager: the fast path 1.06-1.77 at every "
     "op 8 B-256 KiB (b26a96d; the host's launch as at 2 ranks), so NCCL there. Push "
     "all_reduce 512 KiB 1.44-1.48, 1 MiB 1.23-1.27, 2 MiB 1.03-1.05 (NCCL there), 4 MiB "
     "0.91, 8 MiB 0.97, 16 MiB 1.10 (df2ed55; NCCL from there), b26a96d. Two shots from "
     "1 MiB: the crossover of the earlier two-shot, which loaded every chunk twice (the one "
     "that stores: 15.0-17.2 us at 64-512 KiB against one shot's 10.2-15.8, 19.8 against "
     "20.0 at 1 MiB, session 9). Captured push from 2 MiB: 2 MiB 26.2 us a call against "
     "nccl's 52.3 (0.50; NCCL there took 51.5, 1.03), 1 MiB 22.5 against the fast path's "
     "19.7 (session 10, 2026-11-28, 4xH200); eager calls keep 4 MiB, where the push at 2 "
     "MiB measured 1.03-1.05 (df2ed55). One way up to 128 KiB a peer: graphs of 100 "
     "calls, 4xH200, bf16 all_reduce 8 B-128 KiB 4.95-7.49 us against the barrier "
     "kernels' 7.6-8.8 (256 KiB 10.9 against 10.8, 512 KiB 18.0 against 15.9); fp32 "
     "all_gather and reduce_scatter 1-512 KiB 5.3-8.6 against 6.8-11.1, broadcast 1-256 "
     "KiB 3.8-6.8 against 6.0-8.6 (512 KiB 11.7 against 10.9), session 14, 2026-11-28"},
    {5, INT_MAX, all(256 * KiB), all(0), 0, 0, 0, MiB, 0,
     "not measured beyond 4 ranks: captured calls keep the fast path's earlier default (256 "
     "KiB for every operation); eager calls go to NCCL as at 2-4 ranks (the host's launch "
     "does not shrink with the group); no push (its staging and peer count grow with the "
     "group); two shots from 1 MiB as at 3-4 ranks (where a group's limit reaches it); no "
     "one-way kernels (not measured)"},
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
