// The stream/event discipline every operation follows, written once.
//
// async_op false (a plain `dist.all_reduce(t)`): the op runs on the caller's
// current stream, as with backend nccl; the caller's stream orders every later
// use of the tensors, so nothing is synchronised or kept alive.
// Otherwise:
// 1. Our stream waits on the caller's current stream (one reused event).
// 2. `fn` enqueues NCCL calls on our stream; temporaries it allocates belong
//    to our stream's pool.
// 3. The Work records its end event on our stream; its TensorHold keeps the
//    inputs and outputs alive until wait() or until the watchdog sees that
//    event complete.
// Either way the watchdog and the flight recorder get the op's state, never
// the Work or a tensor (op_state.h), and temporaries are dropped once the
// op is enqueued: their frees are ordered on the op's stream.
// Inside a coalescing block the ops share one Work whose end event is
// recorded by endCoalescing, and always run on our stream.  Under CUDA graph
// capture nothing is queried or watched: the graph owns the memory and
// replays reuse the same pointers.
// The steps around the enqueue are the Backend's, in op_call.cpp: only the
// part that runs the operation's own code is a template.  A group's per-call
// config is current for the whole call (OpConfig, op_call.h): the fast path stands
// aside and the collectives hand it to NCCL.
#pragma once

#include <c10/cuda/CUDAGuard.h>

#include "backend/backend.h"
#include "backend/op_call.h"
#include "op/errors.h"

namespace nccl_core {

template <class Fn>
c10::intrusive_ptr<c10d::Work> Backend::launch(
    c10d::OpType type, at::Device device, std::vector<at::Tensor> inputs,
    std::vector<at::Tensor> outputs, CallOpts call, const char* what, Fn&& fn) {
  try {
    OpCall op(type, what);  // its scopes last until this call returns
    OpSteps::enter_call(*this, op, device, call);
    OpConfig config(op.coll_config.get());  // current until the call returns
    OpSteps::describe_call(*this, op, inputs, outputs, call);
    OpSteps::make_work(*this, op, device, inputs, call);
    OpSteps::order_streams(*this, op);
    OpSteps::scan_for_nan(*this, op, inputs, outputs, call);
    OpSteps::keep_tensors(*this, op, inputs, outputs);
    OpSteps::arm_fast_path(*this, op, call);
    {
      c10::cuda::CUDAStreamGuard on_stream(*op.stream);
      // A blocking communicator may wait on peers inside `fn` (connection
      // setup): bounded by the timeout, and the error names the operation.
      BoundedCall guard = op.comm->bounded(what);
      op.prof.mark(host_profile::kGuard);
      try {
        if (!(estimating_ && size_ == 1)) {  // alone there is nothing to estimate
          fn(*op.comm, op.stream->stream(), *op.work);
        }
      } catch (...) {
        OpSteps::disarm_fast_path(op);
        guard.rethrow_if_expired();
        throw;
      }
      OpSteps::record_call(*this, op);
      guard.rethrow_if_expired();
      if (!coalescing_) {
        op.work->run_epilogue();
        op.work->drop_temporaries();
      }
    }
    return OpSteps::finish_call(*this, op);
  } catch (const c10::Error&) {
    throw;
  } catch (...) {
    rethrow_as_dist_error(what);
  }
}

} // namespace nccl_core
