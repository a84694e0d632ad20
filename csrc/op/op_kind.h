// Which operations every rank of a group makes: collectives are made by all,
// in the same order; send and recv by the ranks they concern, so their
// number and order differ between ranks legitimately (a pipeline's first
// stage only sends).  Counts that ranks compare (the fast path's signature,
// the desync report, the call check) count collectives only.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

namespace nccl_core {

inline bool is_point_to_point(c10d::OpType op) {
  return op == c10d::OpType::SEND || op == c10d::OpType::RECV || op == c10d::OpType::RECVANYSOURCE;
}

}  // namespace nccl_core
