// Profiler hooks: while a profiler listens (torch.profiler, the autograd
// profiler), each op is an asynchronous record named like backend nccl's
// ("nccl_core:all_reduce" where nccl records "nccl:all_reduce"), from its
// enqueue until the GPU finished it.  Nothing is recorded, and nothing
// allocated, while no profiler listens.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

namespace nccl_core::profiling {

// Whether any RecordFunction callback is registered now (one atomic load).
bool active();
// The record's name for `type` (a string with static lifetime).
const char* title(c10d::OpType type);

}  // namespace nccl_core::profiling
