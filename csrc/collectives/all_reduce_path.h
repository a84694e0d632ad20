// Which path an all_reduce takes, written once for both surfaces: dist.*
// (backend/collectives.cpp) and the raw Communicator.allreduce
// (raw_ops.cpp).  The paths are tried in one order: the fast path of the
// communicator's NVLink engine, the caller's one-rank reduction, the
// engine's push (in place only), then NCCL.  Which sizes the engine takes
// is the path table's (nvlink/path_table.h), for the group that made the
// engine, so a raw call on a group's communicator goes where the group's
// dist.all_reduce of the same size goes.
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

// One all_reduce: counts in elements of `type`; `in == out` is in place.
struct Reduction {
  const void* in;
  void* out;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
};

// Where all_reduce_on_a_path ran the call.
enum class AllReducePath { kFast, kAlone, kPush, kNccl };

// Runs `r` on `on`'s stream.  `engine`: the communicator's, armed and held
// by the caller for this call (null: our kernels are not tried).  `alone`:
// the caller's own reduction for a group of one rank, which returns whether
// it ran the call (empty: NCCL's).
AllReducePath all_reduce_on_a_path(const On& on, nvlink::Engine* engine, const Reduction& r,
                                   const std::function<bool()>& alone = {});

}  // namespace collectives
}  // namespace nccl_core
