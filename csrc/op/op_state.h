// csrc/op: one operation's state as the rest of the backend sees it, the
// floor under failure handling, torch's tooling and the Backend: OpState (end
// event or fast-path ticket, deadline, error), an async call's TensorHold,
// pooled CUDA events and op timing, the group's identity (GroupInfo), and
// the DistBackendError / argument-error helpers (errors.h).  It may include
// comm/, nvlink/progress.h and the floors below them, never a folder above.
//
// OpState: what the backend's bookkeeping knows of one enqueued operation
// (or one coalesced group): its identity and sizes, how its end is seen (an
// end event, or the ticket its fast-path kernel reports), its deadline and
// its error.  Never a tensor.
//
// The Work the program holds (work.h) owns one, and so may the watchdog
// (until the op ends), the flight recorder (its ring of recent ops), the
// completion hooks and the ephemeral timeouts.  None of those keeps a
// tensor alive: a plain call's tensors are ordered by the caller's stream,
// an async call's are held by its TensorHold until wait() or its end.
#pragma once

#include "op/event_pool.h"
#include "op/group_info.h"
#include "op/op_timing.h"

#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace nccl_core {

namespace nvlink {
class Progress;
}

class OpState {
 public:
  OpState(c10d::OpType type, uint64_t seq, at::Device device, std::chrono::milliseconds timeout);
  OpState(const OpState&) = delete;
  OpState& operator=(const OpState&) = delete;

  const c10d::OpType type;
  const uint64_t seq;
  const at::Device device;
  const std::chrono::steady_clock::time_point start;
  // What the op moved, for error reports: elements in and out, the dtype.
  int64_t numel_in = 0;
  int64_t numel_out = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  // The group's, shared with the backend (one reference count per op).
  std::shared_ptr<GroupInfo> group;
  // A host-side wait that times out aborts the communicator (else it only
  // fails this op): error policy 0 keeps it.
  bool abort_on_timeout = true;
  bool captured = false;  // enqueued during CUDA graph capture
  // Set when timing is on (op_timing.h), before the op's kernels.
  std::unique_ptr<OpTimer> timer;
  // What torch >= 2.15's completion hooks correlate this op by.
  uint64_t completion_key = 0;

  // Records the end event on `stream`: the op is now fully enqueued.
  void record_end(const c10::cuda::CUDAStream& stream);
  // Instead of an end event: the op's kernel reports `ticket` to `progress`
  // when done (a plain fast-path call on `stream`, the caller's).  A timed
  // op records its end event anyway (its timer's end).
  void track_on_device(std::shared_ptr<nvlink::Progress> progress, uint64_t ticket,
                       const c10::cuda::CUDAStream& stream);
  bool recorded() const { return recorded_.load(std::memory_order_acquire); }
  bool tracked_on_device() const { return progress_ != nullptr; }
  cudaStream_t stream() const { return stream_; }
  // A device-tracked op's end event, recorded on its stream on first need
  // (a wait from another stream, a future).
  void record_late();
  // Makes `stream` wait for the end event.
  void block(const c10::cuda::CUDAStream& stream) const { end_event_.block(stream); }
  // True once the GPU has passed the op's end (never during capture).
  bool gpu_done();
  // Ended with an error, or on the GPU.
  bool completed() { return exception() != nullptr || gpu_done(); }
  // An op issued inside a time estimate: NCCL only simulates it, so it is
  // complete at once and nothing waits on it.
  void mark_simulated();
  bool simulated() const { return simulated_; }

  // The error every waiter sees; the first one set wins.
  void set_error(std::exception_ptr error);
  std::exception_ptr exception() const;

  std::chrono::milliseconds timeout() const { return timeout_; }
  // An ephemeral extension (ephemeral_timeout.h), before the op is watched.
  void extend_timeout(std::chrono::milliseconds extra) {
    if (timeout_.count() > 0) {
      timeout_ += extra;
    }
  }
  // True once `limit` (by default the op's timeout) has passed since the op
  // was enqueued: the one timeout decision, for the watchdog and for
  // Work::wait alike (as backend nccl's checkTimeout, from the work's start,
  // however late wait() is called).  A limit of 0 never expires.
  bool expired(std::chrono::steady_clock::time_point now,
               std::optional<std::chrono::milliseconds> limit = std::nullopt) const;
  // The message of this op's timeout, worded like backend nccl's ("caught
  // collective operation timeout", which tools grep for), then our detail.
  std::string timeout_message(std::chrono::milliseconds limit, const std::string& outcome) const;

  // Milliseconds the GPU spent in the op; raises without timing.
  float duration_ms() const;
  // What a completion hook is told (torch's WorkInfo).
  std::shared_ptr<c10d::WorkInfo> info(std::chrono::steady_clock::time_point finished) const;

  // The profiler record opened with the Work: ended once, when the op is
  // enqueued, fails or ends, whichever comes first.
  void set_record_end(std::function<void()> end) { record_end_fn_ = std::move(end); }
  void close_record();

 private:
  std::chrono::milliseconds timeout_;  // extended only before it is watched
  PooledEvent end_event_;
  cudaStream_t stream_ = nullptr;  // where the end event was (or will be) recorded
  // Read by the watchdog and the flight recorder's readers while the
  // caller's thread records: set after the event is.
  std::atomic<bool> recorded_{false};
  std::atomic<bool> done_{false};
  bool simulated_ = false;
  std::shared_ptr<nvlink::Progress> progress_;  // set: tracked by its kernel
  uint64_t ticket_ = 0;
  mutable std::mutex error_mutex_;
  std::exception_ptr error_;
  std::function<void()> record_end_fn_;
  std::atomic<bool> record_closed_{false};
};

}  // namespace nccl_core
