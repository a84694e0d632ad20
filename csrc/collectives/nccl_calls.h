// The operations layer (csrc/collectives/): each NCCL collective and
// point-to-point call of nccl_core is made here and nowhere else, for both
// surfaces: the c10d Backend (csrc/backend) and the nccl.core-style
// Communicator API (raw_ops.h).  A surface checks its own arguments (torch's
// errors or nccl.core's), picks our kernels where they run the call
// (csrc/nvlink), and otherwise enqueues through one of these functions.
//
// Counts are NCCL's: elements per rank where NCCL says so.  Every enqueue is
// checked through the communicator (the call's name and ncclGetLastError's
// text in the error); `Check` says how.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>

namespace nccl_core {

class Communicator;

namespace collectives {

enum class Check {
  // Communicator::call: the result checked, ncclInProgress waited out.
  kWait,
  // Communicator::run: as kWait, the enqueue itself bounded by the
  // communicator's timeout (the raw API outside a group).
  kBounded,
  // Inside an NCCL group the caller ends: the result only; NCCL reports and
  // waits at ncclGroupEnd.
  kGrouped,
};

class CollConfig;

// Where a call goes: the communicator, the stream, how it is checked, and
// the per-call config of a collective (coll_config.h; null: NCCL's plain
// call).  Point-to-point calls take no config.
struct Target {
  Communicator& comm;
  cudaStream_t stream;
  Check check;
  const CollConfig* config = nullptr;
};

void all_reduce(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
                ncclRedOp_t op);
// `out` matters on `root` only.
void reduce(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
            ncclRedOp_t op, int root);
// `in` matters on `root` only.
void broadcast(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
               int root);
// `count` elements from each rank.
void all_gather(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type);
void gather(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type, int root);
// `count` elements to each rank.
void reduce_scatter(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
                    ncclRedOp_t op);
// `count` elements from each rank to each rank.
void all_to_all(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type);
void scatter(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
             int root);
void send(const Target& on, const void* buf, size_t count, ncclDataType_t type, int peer);
void recv(const Target& on, void* buf, size_t count, ncclDataType_t type, int peer);

}  // namespace collectives
}  // namespace nccl_core
