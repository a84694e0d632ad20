// Work: the program's handle of one enqueued operation (or one coalesced
// group), as torch.distributed hands it out.
//
// Its OpState (op_state.h) is what the bookkeeping shares: the end event or
// fast-path ticket, the deadline, the error.  The Work adds what only the
// program's handle needs: the outputs (result(), futures), an async call's
// TensorHold (tensor_hold.h), the temporaries NCCL reads until the op is
// enqueued, and the ways to wait.  `wait()` makes the caller's current
// stream wait on the end event (no CPU block; nothing when the op ran on
// that stream) unless blocking wait is on or the op blocks the host
// (barrier); then an async call's tensors are released.
#pragma once

#include "op/op_state.h"
#include "op/tensor_hold.h"

#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace nccl_core {

class Communicator;
class NanWatch;

class Work : public c10d::Work {
 public:
  // `profiling_title` (profiling.h; null while no profiler listens) opens a
  // profiler record that the op's state ends once the op is enqueued.
  Work(int rank, c10d::OpType type, uint64_t seq, at::Device device,
       std::shared_ptr<Communicator> comm, std::chrono::milliseconds timeout,
       bool blocking_wait, const char* profiling_title = nullptr,
       const std::vector<at::Tensor>* inputs = nullptr);
  ~Work() override;

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void blockCurrentStream() override;
  void abort() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // Milliseconds the GPU spent in the op, with timing on (op_timing.h).
  float getDuration() const override;
  uint64_t getSequencenumber() const override;
  std::chrono::milliseconds getTimeout() const { return op_->timeout(); }

  // --- used by the backend ---------------------------------------------
  OpState& op() { return *op_; }
  const std::shared_ptr<OpState>& op_state() const { return op_; }
  // An async call's tensors (created on first use).
  const std::shared_ptr<TensorHold>& hold();
  // Runs and clears `epilogue` (on the current stream: the backend's).
  void run_epilogue();
  // The op is enqueued (an open group's, at its end): the temporaries'
  // frees are now ordered on the op's stream after their use.
  void drop_temporaries() { stash.clear(); }
  // A tensor the op reads that the caller may own: held like an async
  // call's inputs (until wait() or the end); a plain call's until enqueued
  // (its caller's stream orders the rest).
  void keep_like_inputs(at::Tensor t) {
    if (hold_) {
      hold_->add(std::move(t));
    } else {
      stash.push_back(std::move(t));
    }
  }
  // Drops every tensor this Work keeps for the GPU (nothing ran).
  void release_tensors();

  // The group's NaN check, where on (nan_watch.h): wait() raises a NaN found.
  std::shared_ptr<NanWatch> nan_watch;
  std::vector<at::Tensor> outputs;
  // Temporaries NCCL reads (flattened buffers, a PreMulSum factor): kept
  // until the op is enqueued, since inside an open NCCL group the kernels
  // launch only at the group's end.
  std::vector<at::Tensor> stash;
  // Runs after the NCCL calls are launched (after the group ends inside a
  // coalescing block): copies out of temporaries.
  std::vector<std::function<void()>> epilogue;
  bool blocks_host = false;      // barrier: wait() blocks the CPU

 private:
  // Blocks the CPU until the end event, an error, or the timeout.
  void wait_on_host(std::chrono::milliseconds timeout);
  void rethrow_if_failed() const;

  const std::shared_ptr<OpState> op_;
  std::shared_ptr<Communicator> comm_;
  const bool blocking_wait_;
  std::shared_ptr<TensorHold> hold_;
  std::mutex future_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

} // namespace nccl_core
