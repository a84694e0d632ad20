// The argument checks of torch.distributed's contract, for the dist.* calls
// (backend/): each collective's rules on its tensors and lists, written once,
// raising torch's ValueError / TypeError before anything is enqueued.  The
// raw Communicator API checks nccl.core's own contract (other rules, other
// errors: NcclInvalid) in raw_ops.cpp; numbers that become bytes or narrower
// integers go through util/checked.h on both surfaces.
#pragma once

#include <ATen/ATen.h>
#include <nccl.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace nccl_core::torch_checks {

// One tensor per call (one GPU per process).
void one_tensor(const std::vector<at::Tensor>& tensors, const char* op);
// Input and output of one dtype.
void same_dtype(const at::Tensor& in, const at::Tensor& out, const char* op);
// A tensor NCCL can take: defined, CUDA, on the group's device (where it has
// one yet), dense and contiguous.
void usable(const at::Tensor& t, const char* op, const std::optional<at::Device>& device);
// The root rank inside the group, as the int NCCL takes (range-checked as
// the 64-bit value torch passes: 2**32 must not become 0).
int root(int64_t root, int size, const char* op);
// send / recv: one tensor, a peer rank inside the group.
void point_to_point(const std::vector<at::Tensor>& tensors, int peer, int size, const char* op);

// The NCCL reduction for a c10d reduce op on `t` (of NCCL type `type`): bool
// SUM / PRODUCT as MAX / MIN (logical OR / AND); refused where torch's
// contract or NCCL has none.  PREMUL_SUM: its factor and type are checked
// and nullopt returned: the caller makes the op on its communicator.
std::optional<ncclRedOp_t> reduce_op(const c10d::ReduceOp& op, const at::Tensor& t,
                                     ncclDataType_t type, const char* what);

void allreduce_coalesced(const std::vector<at::Tensor>& tensors);
void reduce_scatter_tensor(const at::Tensor& input, const at::Tensor& output, int size);
// Returns whether every input has the output's size (one NCCL call) or not
// (a group of reduces).
bool reduce_scatter(const std::vector<at::Tensor>& outputs,
                    const std::vector<std::vector<at::Tensor>>& inputs, int size, int rank);
void reduce_scatter_tensor_coalesced(const std::vector<at::Tensor>& outputs,
                                     const std::vector<at::Tensor>& inputs, int size);

void all_gather_into_tensor(const at::Tensor& input, const at::Tensor& output, int size);
// Returns whether every output has the input's size (one NCCL call) or not.
bool all_gather(const std::vector<std::vector<at::Tensor>>& outputs,
                const std::vector<at::Tensor>& inputs, int size, int rank);
void allgather_coalesced(const std::vector<std::vector<at::Tensor>>& outputs,
                         const std::vector<at::Tensor>& inputs, int size);
void allgather_into_tensor_coalesced(const std::vector<at::Tensor>& outputs,
                                     const std::vector<at::Tensor>& inputs, int size);
// The root's output list (world size tensors like the input); none elsewhere.
void gather(const std::vector<std::vector<at::Tensor>>& outputs, const at::Tensor& input,
            int size, bool is_root);
// gather_single: the root's flat output holds world size x the input's
// elements, of its dtype, contiguous; elsewhere the output is not read.
void gather_single(const at::Tensor& input, const at::Tensor& output, int size, bool is_root);
// The root's input list (world size tensors like the output).
void scatter(const std::vector<std::vector<at::Tensor>>& inputs, const at::Tensor& output,
             int size, bool is_root);

// all_to_all_single: dtypes, and each side's split sizes against its dim 0
// (none: dim 0 divisible by the world size).  Returns whether both sides are
// even (no split sizes).
bool all_to_all_single(const at::Tensor& input, const at::Tensor& output,
                       const std::vector<int64_t>& input_splits,
                       const std::vector<int64_t>& output_splits, int size);
void all_to_all(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                int size);

}  // namespace nccl_core::torch_checks
