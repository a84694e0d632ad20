// csrc/tooling: torch's tooling over nccl_core groups: profiler records
// (this file), completion hooks (torch's WorkInfo callbacks) and the
// communicator listener for torch's NCCL symmetric memory.  It reads OpState
// (csrc/op) and includes nothing of failures/, registration/ or backend/.
//
// Profiler hooks: while a profiler listens (torch.profiler, the autograd
// profiler), each op is an asynchronous record named like backend nccl's
// ("nccl_core:all_reduce" where nccl records "nccl:all_reduce") that ends
// once the op is enqueued (as backend nccl's, whose record ends in its
// future's callback; the kernels show on the GPU rows), and around the
// enqueue torch's
// "record_param_comms" event carrying what tools read from it (collective
// name, element counts, dtype, split sizes, group name and ranks).  Nothing
// is recorded, and nothing allocated, while no profiler listens.
#pragma once

#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <memory>
#include <string>
#include <vector>

namespace nccl_core::profiling {

// Whether any RecordFunction callback is registered now (one atomic load).
bool active();
// The record's name for `type` (a string with static lifetime).
const char* title(c10d::OpType type);

// What the record_param_comms event says of an op's group.
struct GroupDescription {
  std::string name;  // the group's name (torch's pg uid)
  std::string desc;  // its description ("default_pg", "undefined", ...)
  int rank = 0;
  int size = 1;
  std::vector<int64_t> global_ranks;  // empty: the default group
};

// torch's record_param_comms event, open while it lives (the enqueue).  The
// debug info it installs is what the profiler reads for the event's args.
class CommsRecord {
 public:
  CommsRecord(const GroupDescription& group, c10d::OpType type, uint64_t seq,
              const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
              int64_t numel_in, int64_t numel_out, c10::ScalarType dtype,
              std::vector<int64_t> in_splits, std::vector<int64_t> out_splits);
  CommsRecord(const CommsRecord&) = delete;
  CommsRecord& operator=(const CommsRecord&) = delete;

 private:
  std::shared_ptr<torch::ParamCommsDebugInfo> info_;
  c10::DebugInfoGuard guard_;
  // The event's inputs: the record keeps a view of them until it ends, so
  // they live here, destroyed after it (members end in reverse order).
  std::vector<c10::IValue> args_;
  at::RecordFunction fn_;
};

}  // namespace nccl_core::profiling
