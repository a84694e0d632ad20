#include "collectives/torch_checks.h"

#include <string>

#include "nccl/types.h"
#include "util/checked.h"
#include "util/concat.h"
#include "util/torch_errors.h"

namespace nccl_core::torch_checks {

namespace {

// Split sizes of one side of all_to_all_single against its dim 0.
void splits(const std::vector<int64_t>& splits, const at::Tensor& t, int size,
            const char* which) {
  if (splits.empty()) {
    NCCL_CORE_CHECK_VALUE(t.dim() > 0 && t.size(0) % size == 0,
                          "nccl_core all_to_all_single: ", which, " dim 0 (",
                          t.dim() > 0 ? t.size(0) : 0, ") must be divisible by the world size ",
                          size);
    return;
  }
  NCCL_CORE_CHECK_VALUE(splits.size() == static_cast<size_t>(size),
                        "nccl_core all_to_all_single: ", which, " split sizes have ",
                        splits.size(), " entries, expected world size ", size);
  // The sum must not wrap: [2**63 - 1, 2**63 - 1, 4] would sum to 2.
  int64_t total = 0;
  for (int64_t s : splits) {
    NCCL_CORE_CHECK_VALUE(s >= 0, "nccl_core all_to_all_single: negative split size ", s);
    total = checked::add_signed<raise_value_error>(
        total, s, "nccl_core all_to_all_single: the split sizes' sum");
  }
  NCCL_CORE_CHECK_VALUE(t.dim() > 0 && total == t.size(0), "nccl_core all_to_all_single: ",
                        which, " split sizes sum to ", total, " but dim 0 is ",
                        t.dim() > 0 ? t.size(0) : 0);
}

// Which side of a call holds world size x the other's elements.
enum class Whole { kInput, kOutput };

// "nccl_core <op>: <part> numel x world size", the product's name.
std::string product_name(const char* op, Whole whole) {
  return concat("nccl_core ", op, ": ", whole == Whole::kInput ? "output" : "input",
                " numel x world size");
}

// The `whole` side of (input, output) holds world size x the other's
// elements, the product refused where it would wrap.
void world_times(const at::Tensor& input, const at::Tensor& output, Whole whole, int size,
                 const char* op) {
  same_dtype(input, output, op);
  const at::Tensor& part = whole == Whole::kInput ? output : input;
  const at::Tensor& full = whole == Whole::kInput ? input : output;
  int64_t want = checked::mul_signed<raise_value_error>(part.numel(), size,
                                                        product_name(op, whole).c_str());
  NCCL_CORE_CHECK_VALUE(full.numel() == want, "nccl_core ", op, ": ",
                        whole == Whole::kInput ? "input" : "output", " has ", full.numel(),
                        " elements, expected ", whole == Whole::kInput ? "output" : "input",
                        " numel x world size = ", want);
}

// The coalesced form: pair i of the lists, named by its index.
void world_times_pairs(const std::vector<at::Tensor>& inputs,
                       const std::vector<at::Tensor>& outputs, Whole whole, int size,
                       const char* op) {
  NCCL_CORE_CHECK_VALUE(!inputs.empty() && outputs.size() == inputs.size(), "nccl_core ", op,
                        ": expects as many outputs as inputs");
  const std::string what = product_name(op, whole);
  for (size_t i = 0; i < inputs.size(); ++i) {
    same_dtype(inputs[i], outputs[i], op);
    const at::Tensor& part = whole == Whole::kInput ? outputs[i] : inputs[i];
    const at::Tensor& full = whole == Whole::kInput ? inputs[i] : outputs[i];
    NCCL_CORE_CHECK_VALUE(
        full.numel() == checked::mul_signed<raise_value_error>(part.numel(), size, what.c_str()),
        "nccl_core ", op, ": ", whole == Whole::kInput ? "input " : "output ", i,
        " must have world size x ", whole == Whole::kInput ? "output" : "input", " elements");
  }
}

}  // namespace

void one_tensor(const std::vector<at::Tensor>& tensors, const char* op) {
  NCCL_CORE_CHECK_VALUE(tensors.size() == 1, "nccl_core ", op,
                        ": expects exactly one tensor per call (one GPU per process), got ",
                        tensors.size());
}

void same_dtype(const at::Tensor& in, const at::Tensor& out, const char* op) {
  NCCL_CORE_CHECK_TYPE(in.scalar_type() == out.scalar_type(), "nccl_core ", op,
                       ": dtype mismatch between input (", in.scalar_type(), ") and output (",
                       out.scalar_type(), ")");
}

void usable(const at::Tensor& t, const char* op, const std::optional<at::Device>& device) {
  NCCL_CORE_CHECK_VALUE(t.defined(), "nccl_core ", op, ": undefined tensor");
  NCCL_CORE_CHECK_VALUE(t.is_cuda(), "nccl_core ", op, ": tensors must be CUDA tensors, got a ",
                        t.device().str(), " tensor");
  NCCL_CORE_CHECK_VALUE(!device || t.device() == *device, "nccl_core ", op, ": tensor is on ",
                        t.device().str(), " but this group's communicator is on ",
                        device->str());
  NCCL_CORE_CHECK_VALUE(!t.is_sparse(), "nccl_core ", op, ": sparse tensors are not supported");
  NCCL_CORE_CHECK_VALUE(t.is_contiguous(), "nccl_core ", op,
                        ": tensors must be contiguous (call .contiguous())");
}

int root(int64_t root, int size, const char* op) {
  NCCL_CORE_CHECK_VALUE(root >= 0 && root < size, "nccl_core ", op, ": root ", root,
                        " out of range for group size ", size);
  return checked::narrow<int, raise_value_error>(root, "root");
}

void point_to_point(const std::vector<at::Tensor>& tensors, int peer, int size, const char* op) {
  NCCL_CORE_CHECK_VALUE(tensors.size() == 1, "nccl_core ", op, ": expects one tensor");
  NCCL_CORE_CHECK_VALUE(peer >= 0 && peer < size, "nccl_core ", op, ": peer rank ", peer,
                        " out of range for group size ", size);
}

std::optional<ncclRedOp_t> reduce_op(const c10d::ReduceOp& op, const at::Tensor& t,
                                     ncclDataType_t type, const char* what) {
  bool is_bool = t.scalar_type() == at::kBool;
  bool complex = t.is_complex();
  auto refuse = [&](const char* why) {
    C10_THROW_ERROR(ValueError, std::string("nccl_core ") + what + ": " + why);
  };
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return is_bool ? ncclMax : ncclSum;  // logical OR
    case c10d::ReduceOp::PRODUCT:
      if (complex) {
        refuse("PRODUCT is not supported for complex tensors");
      }
      return is_bool ? ncclMin : ncclProd;  // logical AND
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
      if (complex) {
        refuse("MIN/MAX are not defined for complex tensors");
      }
      return op.op_ == c10d::ReduceOp::MIN ? ncclMin : ncclMax;
    case c10d::ReduceOp::AVG:
      if (is_bool) {
        refuse("AVG is not supported for bool tensors");
      }
      return ncclAvg;
    case c10d::ReduceOp::PREMUL_SUM:
      break;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      refuse("bitwise reduce ops (BAND, BOR, BXOR) are not supported by NCCL");
    default:
      refuse("unknown reduce op");
  }
  // PREMUL_SUM: output = factor * sum(inputs), factor on host or device.
  auto* sup = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  if (sup == nullptr) {
    refuse("PREMUL_SUM without a factor; build it with "
           "torch.distributed._make_nccl_premul_sum");
  }
  if (!types::is_floating(type) || type == ncclFloat8e4m3 || type == ncclFloat8e5m2) {
    refuse("PREMUL_SUM needs a float16, bfloat16, float32 or float64 tensor");
  }
  NCCL_CORE_CHECK_VALUE(!sup->tensor_factor.defined() || sup->tensor_factor.numel() == 1,
                        "nccl_core ", what, ": PREMUL_SUM factor must have one element");
  return std::nullopt;
}

void allreduce_coalesced(const std::vector<at::Tensor>& tensors) {
  NCCL_CORE_CHECK_VALUE(!tensors.empty(), "nccl_core allreduce_coalesced: no tensors");
}

void reduce_scatter_tensor(const at::Tensor& input, const at::Tensor& output, int size) {
  world_times(input, output, Whole::kInput, size, "reduce_scatter_tensor");
}

bool reduce_scatter(const std::vector<at::Tensor>& outputs,
                    const std::vector<std::vector<at::Tensor>>& inputs, int size, int rank) {
  one_tensor(outputs, "reduce_scatter");
  NCCL_CORE_CHECK_VALUE(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size),
                        "nccl_core reduce_scatter: expects a list of world size inputs");
  const at::Tensor& output = outputs[0];
  const auto& ins = inputs[0];
  bool even = true;
  for (const auto& i : ins) {
    same_dtype(i, output, "reduce_scatter");
    even = even && i.numel() == output.numel();
  }
  NCCL_CORE_CHECK_VALUE(ins[rank].numel() == output.numel(), "nccl_core reduce_scatter: input ",
                        rank, " (this rank's share) has ", ins[rank].numel(),
                        " elements, the output ", output.numel());
  return even;
}

void reduce_scatter_tensor_coalesced(const std::vector<at::Tensor>& outputs,
                                     const std::vector<at::Tensor>& inputs, int size) {
  world_times_pairs(inputs, outputs, Whole::kInput, size, "reduce_scatter_tensor_coalesced");
}

void all_gather_into_tensor(const at::Tensor& input, const at::Tensor& output, int size) {
  world_times(input, output, Whole::kOutput, size, "all_gather_into_tensor");
}

bool all_gather(const std::vector<std::vector<at::Tensor>>& outputs,
                const std::vector<at::Tensor>& inputs, int size, int rank) {
  one_tensor(inputs, "all_gather");
  NCCL_CORE_CHECK_VALUE(outputs.size() == 1, "nccl_core all_gather: expects one output list");
  const at::Tensor& input = inputs[0];
  const auto& outs = outputs[0];
  NCCL_CORE_CHECK_VALUE(outs.size() == static_cast<size_t>(size),
                        "nccl_core all_gather: output list has ", outs.size(),
                        " tensors, expected world size ", size);
  bool even = true;
  for (const auto& o : outs) {
    same_dtype(input, o, "all_gather");
    even = even && o.numel() == input.numel();
  }
  NCCL_CORE_CHECK_VALUE(outs[rank].numel() == input.numel(), "nccl_core all_gather: output ",
                        rank, " (this rank's) has ", outs[rank].numel(), " elements, the input ",
                        input.numel());
  return even;
}

void allgather_coalesced(const std::vector<std::vector<at::Tensor>>& outputs,
                         const std::vector<at::Tensor>& inputs, int size) {
  NCCL_CORE_CHECK_VALUE(!inputs.empty() && outputs.size() == inputs.size(),
                        "nccl_core allgather_coalesced: expects one output list per input");
  for (size_t i = 0; i < inputs.size(); ++i) {
    NCCL_CORE_CHECK_VALUE(outputs[i].size() == static_cast<size_t>(size),
                          "nccl_core allgather_coalesced: output list ", i,
                          " must have world size tensors");
    for (const auto& o : outputs[i]) {
      same_dtype(inputs[i], o, "allgather_coalesced");
      NCCL_CORE_CHECK_VALUE(o.numel() == inputs[i].numel(),
                            "nccl_core allgather_coalesced: output size mismatch");
    }
  }
}

void allgather_into_tensor_coalesced(const std::vector<at::Tensor>& outputs,
                                     const std::vector<at::Tensor>& inputs, int size) {
  world_times_pairs(inputs, outputs, Whole::kOutput, size, "allgather_into_tensor_coalesced");
}

void gather(const std::vector<std::vector<at::Tensor>>& outputs, const at::Tensor& input,
            int size, bool is_root) {
  if (!is_root) {
    NCCL_CORE_CHECK_VALUE(outputs.empty() || outputs[0].empty(),
                          "nccl_core gather: only the root takes output tensors");
    return;
  }
  NCCL_CORE_CHECK_VALUE(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size),
                        "nccl_core gather: the root needs a list of world size outputs");
  for (const auto& o : outputs[0]) {
    same_dtype(input, o, "gather");
    NCCL_CORE_CHECK_VALUE(o.numel() == input.numel(), "nccl_core gather: output size mismatch");
  }
}

void gather_single(const at::Tensor& input, const at::Tensor& output, int size, bool is_root) {
  if (!is_root) {
    return;  // a non-root's output is a placeholder torch passes
  }
  NCCL_CORE_CHECK_VALUE(output.defined(), "nccl_core gather_single: the root needs an output");
  NCCL_CORE_CHECK_VALUE(output.is_contiguous(),
                        "nccl_core gather_single: the root's output must be contiguous");
  world_times(input, output, Whole::kOutput, size, "gather_single");
}

void scatter(const std::vector<std::vector<at::Tensor>>& inputs, const at::Tensor& output,
             int size, bool is_root) {
  if (!is_root) {
    return;  // a non-root's inputs are not read
  }
  NCCL_CORE_CHECK_VALUE(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size),
                        "nccl_core scatter: the root needs a list of world size inputs");
  for (const auto& i : inputs[0]) {
    same_dtype(i, output, "scatter");
    NCCL_CORE_CHECK_VALUE(i.numel() == output.numel(), "nccl_core scatter: input size mismatch");
  }
}

bool all_to_all_single(const at::Tensor& input, const at::Tensor& output,
                       const std::vector<int64_t>& input_splits,
                       const std::vector<int64_t>& output_splits, int size) {
  same_dtype(input, output, "all_to_all_single");
  splits(input_splits, input, size, "input");
  splits(output_splits, output, size, "output");
  // Only the form without splits is even (our kernels may take it).  Split
  // sizes that happen to be equal on one rank say nothing of its peers'
  // (a dropless MoE's balanced rank beside unbalanced ones): taking our
  // kernels there would split the ranks between two paths.  So every rank
  // must pass splits or none (docs/migrating.md).
  bool even = input_splits.empty() && output_splits.empty();
  if (even) {
    NCCL_CORE_CHECK_VALUE(input.numel() == output.numel(),
                          "nccl_core all_to_all_single: input and output sizes differ");
  }
  return even;
}

void all_to_all(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                int size) {
  NCCL_CORE_CHECK_VALUE(inputs.size() == static_cast<size_t>(size) &&
                            outputs.size() == static_cast<size_t>(size),
                        "nccl_core all_to_all: expects world size input and output lists");
  for (int r = 0; r < size; ++r) {
    NCCL_CORE_CHECK_TYPE(inputs[r].scalar_type() == outputs[r].scalar_type(),
                         "nccl_core all_to_all: dtype mismatch at index ", r);
  }
}

}  // namespace nccl_core::torch_checks
