// The steps of Backend::launch around an operation's enqueue (op_call.h
// lists them; launch.h's opening comment gives the discipline they keep).
// OpSteps is the Backend's friend: each step reads the group's state.
#include "backend/op_call.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraphsUtils.cuh>

#include "backend/backend.h"
#include "op/op_kind.h"
#include "nvlink/engine.h"

namespace nccl_core {

namespace hp = host_profile;

namespace {

thread_local const collectives::CollConfig* t_op_config = nullptr;

}  // namespace

OpConfig::OpConfig(const collectives::CollConfig* config) : previous_(t_op_config) {
  t_op_config = config;
}

OpConfig::~OpConfig() {
  t_op_config = previous_;
}

const collectives::CollConfig* OpConfig::current() {
  return t_op_config;
}

nvlink::Engine* Backend::fast_path() const {
  return coalescing_ || !fast_ || OpConfig::current() != nullptr ? nullptr : &fast_->engine;
}

collectives::Target on(Communicator& c, cudaStream_t s, collectives::Check check) {
  return collectives::Target{c, s, check, OpConfig::current()};
}

std::shared_ptr<const collectives::CollConfig> NextCollConfig::swap(
    std::shared_ptr<const collectives::CollConfig> config) {
  std::lock_guard<std::mutex> lock(mutex_);
  config_.swap(config);
  set_.store(config_ != nullptr, std::memory_order_release);
  return config;
}

std::shared_ptr<const collectives::CollConfig> NextCollConfig::get() const {
  if (!set_.load(std::memory_order_acquire)) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return config_;
}

void OpSteps::enter_call(Backend& b, OpCall& op, at::Device device, const CallOpts& call) {
  if (b.failures_->nan_watch()) {
    b.failures_->nan_watch()->handle_if_found();  // a NaN sent earlier is the group's error
    op.in_call.emplace(*b.failures_->nan_watch());
  }
  b.check_healthy();
  op.coll_config = b.next_coll_config.get();
  op.comm = b.communicator(device);
  b.open_group();
  op.device_guard.emplace(device);
  op.current = at::cuda::getCurrentCUDAStream(device.index());
  op.on_current = !call.async_op && !b.coalescing_;
  op.stream = op.on_current ? *op.current : *b.stream_;
  op.capturing = at::cuda::currentStreamCaptureStatusMayInitCtx() != at::cuda::CaptureStatus::None;
  op.prof.mark(hp::kSetup);
}

void OpSteps::describe_call(Backend& b, OpCall& op, const Tensors& inputs,
                            const Tensors& outputs, const CallOpts& call) {
  if (b.estimating_) {
    // A time estimate runs nothing and may run on some ranks only (a
    // compiler's cache hit elsewhere): it counts as no op, so every rank's
    // later sequence numbers and fast-path signatures stay alike.
    op.seq = b.seq_.load() + 1;
    op.collective = 0;
  } else {
    op.seq = ++b.seq_;
    op.collective = is_point_to_point(op.type) ? 0 : ++b.collectives_;
  }
  // A profiled op is watched, not tracked by its kernel's report alone, so
  // its end event exists for the profiler's GPU rows.
  op.profiling = profiling::active();
  for (const auto& t : inputs) {
    op.numel_in += t.numel();
    op.dtype = t.scalar_type();
  }
  for (const auto& t : outputs) {
    op.numel_out += t.numel();
    op.dtype = t.scalar_type();
  }
  if (inputs.empty()) {
    op.numel_in = op.numel_out;  // in place (all_reduce, broadcast): as backend nccl reports
  }
  if (op.profiling) {
    op.comms_record.emplace(b.describe(), op.type, op.seq, inputs, outputs, op.numel_in,
                            op.numel_out, op.dtype,
                            call.in_splits ? *call.in_splits : std::vector<int64_t>{},
                            call.out_splits ? *call.out_splits : std::vector<int64_t>{});
  }
}

void OpSteps::make_work(Backend& b, OpCall& op, at::Device device, const Tensors& inputs,
                        const CallOpts& call) {
  op.work = b.coalescing_ ? b.coalesced_ : nullptr;
  if (!op.work) {
    op.work = c10::make_intrusive<Work>(b.rank_, op.type, op.seq, device, op.comm,
                                        b.timeout_of(call.timeout), b.options_->blocking_wait,
                                        op.profiling ? profiling::title(op.type) : nullptr,
                                        &inputs);
    OpState& state = op.work->op();
    state.abort_on_timeout = b.options_->error_handling != ErrorPolicy::kNone;
    state.group = b.info_;
    state.numel_in = op.numel_in;
    state.numel_out = op.numel_out;
    state.dtype = op.dtype;
    if (b.failures_->ephemeral().any()) {
      state.extend_timeout(b.failures_->ephemeral().extension_for(op.work->op_state()));
    }
    if (b.estimating_) {
      state.mark_simulated();  // NCCL simulates it; nothing will run
    }
  }
  OpState& state = op.work->op();
  state.captured = state.captured || op.capturing;
}

void OpSteps::order_streams(Backend& b, OpCall& op) {
  if (!op.on_current) {
    b.ready_event_->record(*op.current);
    b.ready_event_->block(*op.stream);
  }
}

void OpSteps::scan_for_nan(Backend& b, OpCall& op, const Tensors& inputs,
                           const Tensors& outputs, const CallOpts& call) {
  if (!call.sends || b.estimating_ ||
      !(b.failures_->nan_watch() || b.options_->nan_check_strict)) {
    return;
  }
  // On the op's stream, with any copy the check makes.
  c10::cuda::CUDAStreamGuard on_stream(*op.stream);
  const auto& sent = inputs.empty() ? outputs : inputs;
  if (b.failures_->nan_watch()) {
    b.failures_->nan_watch()->scan(sent, op.what, op.seq, op.stream->stream());
    op.work->nan_watch = b.failures_->nan_watch();
  } else {
    check_for_nan(sent, op.what, op.seq, op.capturing);
  }
}

void OpSteps::keep_tensors(Backend& b, OpCall& op, Tensors& inputs, Tensors& outputs) {
  OpState& state = op.work->op();
  if (b.timing_enabled() && !op.capturing && !b.estimating_ && !state.timer) {
    state.timer = std::make_unique<OpTimer>();  // its events are pooled
    state.timer->start(*op.stream);
  }
  if (!op.on_current) {
    // Used on our stream after the caller's: held until wait() or the end.
    const auto& hold = op.work->hold();
    for (auto& t : inputs) {
      hold->add(std::move(t));
    }
    for (auto& t : outputs) {
      hold->add(t);
    }
  }
  for (auto& t : outputs) {
    op.work->outputs.push_back(std::move(t));
  }
}

void OpSteps::arm_fast_path(Backend& b, OpCall& op, const CallOpts& call) {
  // Fast-path kernels launched outside capture report when they leave
  // (nvlink/progress.h; replays of a captured one report nothing).  A plain
  // call on the caller's stream relies on that report: no end event, and
  // the watchdog follows the group's progress instead of this work; not
  // with a timeout of its own or blocking wait.
  if (b.fast_path() != nullptr) {
    op.engine_lock = std::unique_lock<std::mutex>(b.fast_->mutex);
  }
  op.reporter = op.capturing ? nullptr : b.fast_path();
  if (op.reporter != nullptr) {
    // Completion hooks and ephemeral timeouts need the watchdog to see the
    // op finish (or keep it until then).  Timing needs only the events.
    op.reporter->arm(op.on_current && !b.options_->blocking_wait &&
                         call.timeout == c10d::kUnsetTimeout && !op.profiling &&
                         !b.hooks_->active() && !b.failures_->ephemeral().any(),
                     op.seq, op.collective);
  }
  op.prof.mark(hp::kWork);
}

void OpSteps::disarm_fast_path(OpCall& op) {
  if (op.reporter != nullptr) {
    op.reporter->take_ticket();  // disarm (a kernel it launched still reports)
  }
  if (op.engine_lock.owns_lock()) {
    op.engine_lock.unlock();
  }
}

void OpSteps::record_call(Backend& b, OpCall& op) {
  op.ticket = op.reporter != nullptr ? op.reporter->take_ticket() : 0;
  if (op.engine_lock.owns_lock()) {
    op.engine_lock.unlock();
  }
  static const std::shared_ptr<nvlink::Progress> kNoProgress;
  // A time estimate runs nothing (and may run on some ranks only): it is
  // not a call the others must match (call_check.h).
  if (!b.estimating_) {
    b.failures_->recorder().record(op.work->op_state(), op.seq, op.type, op.dtype, op.numel_in,
                                 op.numel_out,
                                 op.reporter != nullptr ? op.reporter->progress() : kNoProgress,
                                 op.ticket);
  }
  op.prof.mark(hp::kEnqueue);
}

WorkPtr OpSteps::finish_call(Backend& b, OpCall& op) {
  op.prof.mark(hp::kEpilogue);
  if (b.coalescing_) {
    b.coalesced_ = op.work;
    return op.work;
  }
  b.destroy_redops();
  OpState& state = op.work->op();
  if (op.ticket != 0) {
    state.track_on_device(op.reporter->progress(), op.ticket, *op.stream);
    op.prof.mark(hp::kRecord);
    return op.work;
  }
  state.record_end(*op.stream);
  state.close_record();
  op.prof.mark(hp::kRecord);
  if (!state.captured) {
    b.failures_->watchdog()->watch(op.work->op_state(), op.comm,
                                 op.on_current ? nullptr : op.work->hold());
  }
  op.prof.mark(hp::kWatch);
  return op.work;
}

}  // namespace nccl_core
