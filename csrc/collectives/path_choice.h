// Which path each collective takes, written once for both surfaces: dist.*
// (csrc/backend) and the raw Communicator API (raw_ops.cpp).  A call first
// goes to the fast path of the communicator's NVLink engine, then (where
// given) to the caller's one-rank reduction, then, for an all_reduce in
// place, to the engine's push, and otherwise to NCCL (nccl_calls.h).  Which
// sizes the engine takes is the path table's (nvlink/path_table.h), for the
// group that made the engine, so a raw call on a group's communicator goes
// where the group's dist.* call of the same size goes.
//
// `engine`: the communicator's, armed and held by the caller for this call
// (dist.*: backend/op_call.h; raw: nvlink::RawEngineCall); null: NCCL only.
// A call with a per-call config (coll_config.h) is NCCL's, its config tuning
// NCCL's kernels: both surfaces pass no engine for it (raw_ops.cpp,
// Backend::fast_path), so that none is armed.
// Counts are NCCL's, in elements of `type`.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <functional>

#include "collectives/nccl_calls.h"

namespace nccl_core {

namespace nvlink {
class Engine;
}

namespace collectives {

// Where a call ran.
enum class Path { kFast, kOneRank, kPush, kNccl };

// The caller's reduction for a group of one rank (one_rank.h): whether it
// ran the call.
using OneRankFallback = std::function<bool()>;

// `in == out`: in place.  The push takes either (an out-of-place call is
// copied into `out` first): each rank may choose, as with NCCL.
Path all_reduce_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                          size_t count, ncclDataType_t type, ncclRedOp_t op,
                          const OneRankFallback& one_rank_fallback = {});
// `count` elements to each rank.
Path reduce_scatter_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                              size_t count, ncclDataType_t type, ncclRedOp_t op,
                              const OneRankFallback& one_rank_fallback = {});
// `count` elements from each rank.
Path all_gather_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                          size_t count, ncclDataType_t type);
// `count` elements from each rank to each rank.
Path all_to_all_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                          size_t count, ncclDataType_t type);
// `in` matters on `root` only (it may be `out`).
Path broadcast_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                         size_t count, ncclDataType_t type, int root);

}  // namespace collectives
}  // namespace nccl_core
