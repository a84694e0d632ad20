#include "tooling/profiling.h"

#include <ATen/record_function.h>

#include <cctype>
#include <tuple>

namespace nccl_core::profiling {

bool active() { return at::hasCallbacks(); }

const char* title(c10d::OpType type) {
  using c10d::OpType;
  switch (type) {
    case OpType::BROADCAST: return "nccl_core:broadcast";
    case OpType::ALLREDUCE: return "nccl_core:all_reduce";
    case OpType::ALLREDUCE_COALESCED: return "nccl_core:all_reduce_coalesced";
    case OpType::REDUCE: return "nccl_core:reduce";
    case OpType::ALLGATHER: return "nccl_core:all_gather";
    case OpType::_ALLGATHER_BASE: return "nccl_core:_all_gather_base";
    case OpType::ALLGATHER_COALESCED: return "nccl_core:all_gather_coalesced";
    case OpType::GATHER: return "nccl_core:gather";
    case OpType::SCATTER: return "nccl_core:scatter";
    case OpType::REDUCE_SCATTER: return "nccl_core:reduce_scatter";
    case OpType::_REDUCE_SCATTER_BASE: return "nccl_core:_reduce_scatter_base";
    case OpType::ALLTOALL_BASE: return "nccl_core:all_to_all_base";
    case OpType::ALLTOALL: return "nccl_core:all_to_all";
    case OpType::SEND: return "nccl_core:send";
    case OpType::RECV: return "nccl_core:recv";
    case OpType::BARRIER: return "nccl_core:barrier";
    case OpType::COALESCED: return "nccl_core:coalesced";
    default: return "nccl_core:unknown";
  }
}

namespace {

// torch's collective names in record_param_comms: "allreduce",
// "_allgather_base", ... (the op type in lower case).
std::string collective_name(c10d::OpType type) {
  std::string name = c10d::opTypeToString(type);
  for (auto& ch : name) {
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return name;
}

// torch describes a group's global ranks as start and stride (-1: not evenly
// spaced); the default group is (0, 1).
std::pair<int, int> start_and_stride(const std::vector<int64_t>& ranks) {
  if (ranks.empty()) {
    return {0, 1};
  }
  int start = static_cast<int>(ranks[0]);
  if (ranks.size() == 1) {
    return {start, 1};
  }
  int64_t stride = ranks[1] - ranks[0];
  for (size_t i = 2; i < ranks.size(); ++i) {
    if (ranks[i] - ranks[i - 1] != stride) {
      return {start, -1};
    }
  }
  return {start, static_cast<int>(stride)};
}

}  // namespace

CommsRecord::CommsRecord(const GroupDescription& group, c10d::OpType type, uint64_t seq,
                         const std::vector<at::Tensor>& inputs,
                         const std::vector<at::Tensor>& outputs, int64_t numel_in,
                         int64_t numel_out, c10::ScalarType dtype,
                         std::vector<int64_t> in_splits, std::vector<int64_t> out_splits)
    : info_([&] {
        auto [start, stride] = start_and_stride(group.global_ranks);
        // An op without tensors (barrier) reports bytes, like backend nccl.
        return std::make_shared<torch::ParamCommsDebugInfo>(
            std::make_tuple(group.name, group.desc), group.rank, collective_name(type),
            numel_in, numel_out, dtype == c10::ScalarType::Undefined ? at::kByte : dtype,
            in_splits, out_splits, start, stride, group.size);
      }()),
      guard_(c10::DebugInfoKind::PARAM_COMMS_INFO, info_),
      fn_(at::RecordScope::FUNCTION) {
  if (!fn_.isActive()) {
    return;
  }
  auto [start, stride] = start_and_stride(group.global_ranks);
  args_ = {
      c10::IValue(inputs),
      c10::IValue(std::make_tuple(static_cast<int64_t>(seq), type == c10d::OpType::SEND ||
                                                                 type == c10d::OpType::RECV)),
      c10::IValue(std::make_tuple(group.name, group.desc)),
      c10::IValue(group.rank),
      c10::IValue(collective_name(type)),
      c10::IValue(in_splits),
      c10::IValue(out_splits),
      c10::IValue(start),
      c10::IValue(stride),
      c10::IValue(group.size)};
  fn_.before(at::kParamCommsCallName, c10::ArrayRef<const c10::IValue>(args_.data(), args_.size()));
  if (fn_.needsOutputs()) {
    fn_.setOutputs(std::vector<c10::IValue>{c10::IValue(outputs)});
  }
}

}  // namespace nccl_core::profiling
