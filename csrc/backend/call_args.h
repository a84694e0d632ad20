// What one torch.distributed call hands the backend, in the backend's terms:
// the caller's asks of the op (CallOpts) and a tensor as the buffer NCCL
// reads or writes (Buf).
#pragma once

#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>
#include <nccl.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nccl_core {

using WorkPtr = c10::intrusive_ptr<c10d::Work>;
using BackendPtr = c10::intrusive_ptr<c10d::Backend>;
using BackendOptionsPtr = c10::intrusive_ptr<c10d::Backend::Options>;
using Tensors = std::vector<at::Tensor>;
using TensorLists = std::vector<std::vector<at::Tensor>>;

// What a caller asks of one op: its timeout, and whether it may complete
// after the call returns (torch.distributed's async_op).
struct CallOpts {
  std::chrono::milliseconds timeout;
  bool async_op = true;
  // The NaN check (nan_watch.h) reads what this rank
  // sends; false where the buffer holds nothing sent (a broadcast's non-root
  // ranks).
  bool sends = true;
  // all_to_all_single's split sizes, for the profiler's record (the caller's
  // vectors, alive for the call; null: none).
  const std::vector<int64_t>* in_splits = nullptr;
  const std::vector<int64_t>* out_splits = nullptr;
};

// The CallOpts of c10d's options struct for one op.
template <class O>
CallOpts call_opts(const O& o) {
  return CallOpts{o.timeout, o.asyncOp};
}

// Buffer view of a tensor: pointer, element count and NCCL type (Backend::buf
// checks device and layout; complex tensors are pairs of their real type).
struct Buf {
  void* ptr;
  size_t count;
  ncclDataType_t type;
};

}  // namespace nccl_core
