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
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraphsUtils.cuh>
#include <c10/cuda/CUDAGuard.h>

#include "backend/backend.h"
#include "op/errors.h"
#include "failures/group_failures.h"
#include "tooling/profiling.h"
#include "util/host_profile.h"

namespace nccl_core {

template <class Fn>
c10::intrusive_ptr<c10d::Work> Backend::launch(
    c10d::OpType type, at::Device device, std::vector<at::Tensor> inputs,
    std::vector<at::Tensor> outputs, CallOpts call, const char* what, Fn&& fn) {
  namespace hp = host_profile;
  hp::Timer prof;
  try {
    std::optional<NanWatch::InCall> in_call;
    if (failures_->nan_watch()) {
      failures_->nan_watch()->handle_if_found();  // a NaN sent earlier is the group's error
      in_call.emplace(*failures_->nan_watch());
    }
    check_healthy();
    std::shared_ptr<Communicator> comm = communicator(device);
    open_group();
    c10::cuda::CUDAGuard guard(device);
    auto current = at::cuda::getCurrentCUDAStream(device.index());
    bool on_current = !call.async_op && !coalescing_;
    c10::cuda::CUDAStream stream = on_current ? current : *stream_;
    bool capturing = at::cuda::currentStreamCaptureStatusMayInitCtx() !=
        at::cuda::CaptureStatus::None;

    prof.mark(hp::kSetup);
    c10::intrusive_ptr<Work> work = coalescing_ ? coalesced_ : nullptr;
    uint64_t seq = ++seq_;
    // A profiled op is watched, not tracked by its kernel's report alone, so
    // its end event exists for the profiler's GPU rows.
    const bool profiling = profiling::active();
    // What the op moves, for the flight recorder and error reports.
    int64_t numel_in = 0;
    int64_t numel_out = 0;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    for (const auto& t : inputs) {
      numel_in += t.numel();
      dtype = t.scalar_type();
    }
    for (const auto& t : outputs) {
      numel_out += t.numel();
      dtype = t.scalar_type();
    }
    if (inputs.empty()) {
      numel_in = numel_out;  // in place (all_reduce, broadcast): as backend nccl reports
    }
    // torch's record_param_comms event, open until this call returns.
    std::optional<profiling::CommsRecord> comms_record;
    if (profiling) {
      comms_record.emplace(describe(), type, seq, inputs, outputs, numel_in, numel_out, dtype,
                           call.in_splits ? *call.in_splits : std::vector<int64_t>{},
                           call.out_splits ? *call.out_splits : std::vector<int64_t>{});
    }
    const bool timing = timing_enabled() && !capturing && !estimating_;
    if (!work) {
      work = c10::make_intrusive<Work>(rank_, type, seq, device, comm,
                                       timeout_of(call.timeout), options_->blocking_wait,
                                       profiling ? profiling::title(type) : nullptr, &inputs);
      OpState& op = work->op();
      op.abort_on_timeout = options_->error_handling != ErrorPolicy::kNone;
      op.group = info_;
      op.numel_in = numel_in;
      op.numel_out = numel_out;
      op.dtype = dtype;
      if (failures_->ephemeral().any()) {
        op.extend_timeout(failures_->ephemeral().extension_for(work->op_state()));
      }
      if (estimating_) {
        op.mark_simulated();  // NCCL simulates it; nothing will run
      }
    }
    OpState& op = work->op();
    op.captured = op.captured || capturing;
    if (!on_current) {
      ready_event_->record(current);
      ready_event_->block(stream);
    }
    if (call.sends && !estimating_ && (failures_->nan_watch() || options_->nan_check_strict)) {
      // On the op's stream, with any copy the check makes.
      c10::cuda::CUDAStreamGuard on_stream(stream);
      const auto& sent = inputs.empty() ? outputs : inputs;
      if (failures_->nan_watch()) {
        failures_->nan_watch()->scan(sent, what, seq, stream.stream());
        work->nan_watch = failures_->nan_watch();
      } else {
        check_for_nan(sent, what, seq, capturing);
      }
    }
    if (timing && !op.timer) {
      op.timer = std::make_unique<OpTimer>();  // its events are pooled
      op.timer->start(stream);
    }
    if (!on_current) {
      // Used on our stream after the caller's: held until wait() or the end.
      const auto& hold = work->hold();
      for (auto& t : inputs) {
        hold->add(std::move(t));
      }
      for (auto& t : outputs) {
        hold->add(t);
      }
    }
    for (auto& t : outputs) {
      work->outputs.push_back(std::move(t));
    }
    // Fast-path kernels launched outside capture report when they leave
    // (nvlink/progress.h; replays of a captured one report nothing).  A plain
    // call on the caller's stream relies on that report: no end event, and
    // the watchdog follows the group's progress instead of this work; not
    // with a timeout of its own or blocking wait.
    nvlink::Engine* reporter = capturing ? nullptr : fast_path();
    if (reporter != nullptr) {
      // Completion hooks and ephemeral timeouts need the watchdog to see the
      // op finish (or keep it until then).  Timing needs only the events.
      reporter->arm(on_current && !options_->blocking_wait &&
                        call.timeout == c10d::kUnsetTimeout && !profiling &&
                        !hooks_->active() && !failures_->ephemeral().any(),
                    seq);
    }
    uint64_t ticket = 0;  // of the call, once the fast path has launched it
    prof.mark(hp::kWork);
    {
      c10::cuda::CUDAStreamGuard on_stream(stream);
      // A blocking communicator may wait on peers inside `fn` (connection
      // setup): bounded by the timeout, and the error names the operation.
      BoundedCall guard = comm->bounded(what);
      prof.mark(hp::kGuard);
      try {
        if (!(estimating_ && size_ == 1)) {  // alone there is nothing to estimate
          fn(*comm, stream.stream(), *work);
        }
      } catch (...) {
        if (reporter != nullptr) {
          reporter->take_ticket();  // disarm (a kernel it launched still reports)
        }
        guard.rethrow_if_expired();
        throw;
      }
      ticket = reporter != nullptr ? reporter->take_ticket() : 0;
      static const std::shared_ptr<nvlink::Progress> kNoProgress;
      // A time estimate runs nothing (and may run on some ranks only): it is
      // not a call the others must match (call_check.h).
      if (!estimating_) {
        failures_->recorder().record(work->op_state(), seq, type, dtype, numel_in, numel_out,
                          reporter != nullptr ? reporter->progress() : kNoProgress, ticket);
      }
      prof.mark(hp::kEnqueue);
      guard.rethrow_if_expired();
      if (!coalescing_) {
        work->run_epilogue();
        work->drop_temporaries();
      }
    }
    prof.mark(hp::kEpilogue);
    if (coalescing_) {
      coalesced_ = work;
      return work;
    }
    destroy_redops();
    if (ticket != 0) {
      op.track_on_device(reporter->progress(), ticket, stream);
      prof.mark(hp::kRecord);
      return work;
    }
    op.record_end(stream);
    op.close_record();
    prof.mark(hp::kRecord);
    if (!op.captured) {
      failures_->watchdog()->watch(work->op_state(), comm, on_current ? nullptr : work->hold());
    }
    prof.mark(hp::kWatch);
    return work;
  } catch (const c10::Error&) {
    throw;
  } catch (...) {
    rethrow_as_dist_error(what);
  }
}

} // namespace nccl_core
