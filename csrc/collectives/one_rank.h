// Reductions over a group of one rank, decided here for both surfaces.
//
// NCCL 2.28.9's one-rank path leaves the tail of larger odd-sized AVG and
// PREMUL_SUM calls unwritten and refuses AVG on float8, so no reduction over
// one rank reaches NCCL as AVG or as PREMUL_SUM outside a group:
//   - dist.* reduces nothing at all: the output is the input, times
//     PREMUL_SUM's factor, on the call's stream (backend/collectives.cpp);
//   - the raw API gives NCCL a SUM (a plain copy, or nothing in place) for
//     AVG (collectives/raw_ops.cpp), and runs a PreMulSum outside a group as
//     a SUM followed by the scaling of its output on the same stream
//     (python/raw_ops.cpp).  Inside a group the scaling's order with NCCL's
//     call would not hold, so NCCL's own PreMulSum runs there.
#pragma once

#include <nccl.h>

namespace nccl_core::one_rank {

// dist.*: a reduction over `nranks` ranks is made without NCCL.
inline bool reduces_without_nccl(int nranks) { return nranks == 1; }

// The raw API: the operator NCCL is given for `op` over `nranks` ranks.
inline ncclRedOp_t nccl_op(int nranks, ncclRedOp_t op) {
  return nranks == 1 && op == ncclAvg ? ncclSum : op;
}

// The raw API: a PreMulSum over `nranks` ranks, `group_depth` NCCL groups
// deep, runs as a SUM and then scales the output.
inline bool premul_runs_as_sum_then_scale(int nranks, int group_depth) {
  return nranks == 1 && group_depth == 0;
}

}  // namespace nccl_core::one_rank
