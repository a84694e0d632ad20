// Collectives written with NCCL's device API, as proof that a device
// communicator does real work: every rank of the LSA team reads its peers'
// copies of a symmetric window through LSA pointers, between two LSA
// barriers (one before, so peers' inputs are complete; one after, so nobody
// overwrites an input a peer is still reading).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>

namespace nccl_core {

class DevComm;
class Window;

namespace device {

// out[i] = op over ranks of the `count` elements of `type` at byte `offset`
// in each rank's copy of `win`.  With `in` (may equal `out`), this rank's
// input is first copied there by the same kernel; nullptr: it is already in
// the window.  op is an ncclRedOp_t among Sum, Prod, Max, Min, Avg (Avg for
// floating types).  Enqueued on `stream`.
void all_reduce(const DevComm& dc, const Window& win, size_t offset, const void* in, void* out,
                size_t count, ncclDataType_t type, int op, cudaStream_t stream);

// out[r * bytes + j] = byte j at `offset` in rank r's copy of `win`.
void all_gather(const DevComm& dc, const Window& win, size_t offset, void* out, size_t bytes,
                cudaStream_t stream);

// NCCL version of the headers the kernels were compiled with.
int built_nccl_version();

} // namespace device
} // namespace nccl_core
