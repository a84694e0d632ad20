// The operations of the nccl.core-style Communicator (Communicator.allreduce
// and friends), in the operations layer (nccl_calls.h).
//
// Each checks its arguments first (NcclInvalid, nothing enqueued), then
// enqueues one NCCL call on `stream` (a small all-reduce may run as our
// fast-path kernel instead: nvlink/raw.h).  Counts follow nccl.core: reductions
// and gathers take the send buffer's count, broadcast and scatter the
// receive buffer's; receive buffers may be larger than needed.  Between
// group_start() and group_end() calls only queue; group_end() waits for
// every communicator the group used.  `config` (null: none) is the call's
// NCCLCollConfig; a configured call is always NCCL's (path_choice.h).
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <optional>

#include "comm/buffer.h"

namespace nccl_core::collectives {
class CollConfig;
}

namespace nccl_core {

class Communicator;

namespace raw {

// root < 0: all-reduce (ncclAllReduce, never the fast path); else ncclReduce,
// `recv` needed on root only.
void reduce(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv,
            ncclRedOp_t op, int root, cudaStream_t stream,
            const collectives::CollConfig* config = nullptr);
// The all-reduce: outside any group (where NCCL only queues until
// group_end), a small call runs as our fast-path kernel (nvlink/raw.h), else
// as ncclAllReduce.
void all_reduce(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv,
                ncclRedOp_t op, cudaStream_t stream,
                const collectives::CollConfig* config = nullptr);
// The same checks, then the fast path alone, for a caller holding the GIL:
// whether it ran the call (nvlink::raw_all_reduce_now).  NCCL is never called
// (its waits must not hold the GIL).
bool all_reduce_now(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv,
                    ncclRedOp_t op, cudaStream_t stream);
void broadcast(Communicator& c, const std::optional<Buffer>& send, const Buffer& recv, int root,
               cudaStream_t stream,
               const collectives::CollConfig* config = nullptr);
// root < 0: all-gather; else ncclGather, `recv` needed on root only.
void gather(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv, int root,
            cudaStream_t stream,
            const collectives::CollConfig* config = nullptr);
void reduce_scatter(Communicator& c, const Buffer& send, const Buffer& recv, ncclRedOp_t op,
                    cudaStream_t stream,
                    const collectives::CollConfig* config = nullptr);
void alltoall(Communicator& c, const Buffer& send, const Buffer& recv, cudaStream_t stream,
              const collectives::CollConfig* config = nullptr);
void scatter(Communicator& c, const std::optional<Buffer>& send, const Buffer& recv, int root,
             cudaStream_t stream,
             const collectives::CollConfig* config = nullptr);
void send(Communicator& c, const Buffer& buf, int peer, cudaStream_t stream);
void recv(Communicator& c, const Buffer& buf, int peer, cudaStream_t stream);

// ncclGroupStart / ncclGroupEnd for this thread.
void group_start();
void group_end();
// ncclGroupSimulateEnd: ends the outermost group without launching it and
// returns NCCL's estimate of its time (ncclSimInfo_t.estimatedTime).
float group_simulate_end();
int group_depth();
// Keeps `t` alive until this thread's outermost group_end has launched the
// group (a grouped call only queues: NCCL reads its buffers at group_end).
void keep_for_group(at::Tensor t);
// Tensors kept for this thread's open group.
size_t kept_for_group();

} // namespace raw
} // namespace nccl_core
