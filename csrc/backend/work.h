// Work: the handle of one enqueued operation (or one coalesced group).
//
// Completion is tracked with an end event recorded on the backend's stream.
// `wait()` makes the caller's current stream wait on that event (no CPU
// block; nothing when the op ran on that stream) unless blocking wait is on
// or the op blocks the host (barrier).
// Inputs and outputs are held here until the watchdog sees the event
// complete, so the caller may drop them right after the call.
#pragma once

#include "backend/event_pool.h"
#include "backend/group_info.h"
#include "backend/op_timing.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nccl_core {

class Communicator;
class NanWatch;
namespace fast {
class Progress;
}

class Work : public c10d::Work {
 public:
  // `profiling_title` (profiling.h; null while no profiler listens) opens a
  // profiler record that close_record() ends once the op is enqueued.
  Work(int rank, c10d::OpType type, uint64_t seq, at::Device device,
       std::shared_ptr<Communicator> comm, std::chrono::milliseconds timeout,
       bool blocking_wait, const char* profiling_title = nullptr,
       const std::vector<at::Tensor>* inputs = nullptr);
  ~Work() override;

  // A host-side wait that times out aborts the communicator (else it only
  // fails this work): error policy 0 keeps it.
  bool abort_on_timeout = true;
  // What the op moved, for error reports: elements in and out, the dtype.
  int64_t numel_in = 0;
  int64_t numel_out = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  // The group's, shared with the backend (one reference count per op).
  std::shared_ptr<GroupInfo> group;

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
  std::chrono::milliseconds getTimeout() const;

  // --- used by the backend and the watchdog ---------------------------
  // Records the end event on `stream`: the op is now fully enqueued.
  void record_end(const c10::cuda::CUDAStream& stream);
  // Instead of an end event: the op's kernel reports `ticket` to `progress`
  // when done (a plain fast-path call on `stream`, the caller's).  An event
  // is recorded only if a wait from another stream or a future needs one.
  // A timed op records its end event anyway (its timer's end).
  void track_on_device(std::shared_ptr<fast::Progress> progress, uint64_t ticket,
                       const c10::cuda::CUDAStream& stream);
  // True once the GPU has passed the end event (never during capture).
  bool gpu_done();
  // Runs and clears `epilogue` (on the current stream: the backend's).
  void run_epilogue();
  // Sets the error every waiter will see; first error wins.
  void set_error(std::exception_ptr error);
  // True once `timeout` has passed since the op was enqueued.
  bool expired(std::chrono::steady_clock::time_point now) const;
  // The message of this op's timeout, worded like backend nccl's ("caught
  // collective operation timeout", which tools grep for), then our detail.
  std::string timeout_message(std::chrono::milliseconds limit, const std::string& outcome) const;
  // Drops the tensors the GPU no longer needs.
  void release_tensors();
  // Ends the op's profiler record (once), right after its enqueue as backend
  // nccl's does: a record still open when the profiler stops would be ended
  // into a torn-down profiler later.
  void close_record();
  // An op issued inside a time estimate (Backend::startTimeEstimate): NCCL
  // only simulates it, so it is complete at once and nothing waits on it.
  void mark_simulated();
  // What a completion hook is told (torch's WorkInfo): enqueue and
  // completion times, and the GPU time where the op was timed.
  std::shared_ptr<c10d::WorkInfo> info(std::chrono::steady_clock::time_point finished);

  // An ephemeral extension (ephemeral_timeout.h), before the op is watched.
  void extend_timeout(std::chrono::milliseconds extra) {
    if (timeout_.count() > 0) {
      timeout_ += extra;
    }
  }
  // What torch >= 2.15's completion hooks correlate this op by.
  uint64_t completion_key() const;

  // Set when timing is on (op_timing.h), before the op's kernels.
  std::unique_ptr<OpTimer> timer;
  // The group's NaN check, where on (nan_watch.h): wait() raises a NaN found.
  std::shared_ptr<NanWatch> nan_watch;
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> stash; // inputs and temporaries kept alive
  // Runs after the NCCL calls are launched (after the group ends inside a
  // coalescing block): copies out of temporaries.
  std::vector<std::function<void()>> epilogue;
  bool blocks_host = false;      // barrier: wait() blocks the CPU
  bool captured = false;         // enqueued during CUDA graph capture
  bool recorded = false;         // end event recorded

 private:
  // Blocks the CPU until the end event, an error, or the timeout.
  void wait_on_host(std::chrono::milliseconds timeout);
  void rethrow_if_failed() const;
  // A device-tracked op's end event, recorded on its stream on first need.
  void record_late();

  const uint64_t seq_;
  const at::Device device_;
  std::shared_ptr<Communicator> comm_;
  std::chrono::milliseconds timeout_;  // extended only before it is watched
  const bool blocking_wait_;
  const std::chrono::steady_clock::time_point start_;
  PooledEvent end_event_;
  cudaStream_t stream_ = nullptr;  // where the end event was recorded
  std::atomic<bool> done_{false};
  bool simulated_ = false;  // mark_simulated: nothing to wait for
  std::atomic<bool> record_closed_{false};

  std::shared_ptr<fast::Progress> progress_;  // set: tracked by its kernel
  uint64_t ticket_ = 0;
  std::mutex future_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

} // namespace nccl_core
