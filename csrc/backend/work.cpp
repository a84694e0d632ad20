#include "backend/work.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/core/ivalue.h>
#include <c10/cuda/CUDAGuard.h>

#include <thread>

#include "backend/error_policy.h"
#include "backend/errors.h"
#include "backend/nan_watch.h"
#include "comm/communicator.h"
#include "fast/progress.h"
#include "util/host_profile.h"

namespace nccl_core {

Work::Work(int rank, c10d::OpType type, uint64_t seq, at::Device device,
           std::shared_ptr<Communicator> comm,
           std::chrono::milliseconds timeout, bool blocking_wait, const char* profiling_title,
           const std::vector<at::Tensor>* inputs)
    : c10d::Work(rank, type, profiling_title,
                 inputs != nullptr && profiling_title != nullptr
                     ? std::optional<std::vector<at::Tensor>>(*inputs)
                     : std::nullopt),
      seq_(seq),
      device_(device),
      comm_(std::move(comm)),
      timeout_(timeout),
      blocking_wait_(blocking_wait),
      start_(std::chrono::steady_clock::now()) {}

Work::~Work() = default;

void Work::record_end(const c10::cuda::CUDAStream& stream) {
  if (timer) {
    end_event_.enable_timing();  // the op's end is also its timer's
  }
  end_event_.record(stream);
  stream_ = stream.stream();
  recorded = true;
}

void Work::track_on_device(std::shared_ptr<fast::Progress> progress, uint64_t ticket,
                           const c10::cuda::CUDAStream& stream) {
  progress_ = std::move(progress);
  ticket_ = ticket;
  stream_ = stream.stream();
  if (timer) {
    record_end(stream);  // the kernel's report tracks it; the event times it
  }
}

void Work::record_late() {
  if (progress_ && !recorded) {
    // Everything the op enqueued is before this point of its stream.
    end_event_.record(c10::cuda::getStreamFromExternal(stream_, device_.index()));
    recorded = true;
  }
}

bool Work::gpu_done() {
  if (done_.load(std::memory_order_acquire)) {
    return true;
  }
  if (progress_ && progress_->done() >= ticket_) {
    done_.store(true, std::memory_order_release);
    close_record();
    return true;
  }
  if (!recorded || captured) {
    return false;
  }
  if (end_event_.query()) {
    done_.store(true, std::memory_order_release);
    close_record();
    return true;
  }
  return false;
}

void Work::close_record() {
  if (recordFunctionEndCallback_ && !record_closed_.exchange(true)) {
    recordFunctionEndCallback_();
  }
}

bool Work::isCompleted() {
  if (exception() != nullptr) {
    return true;
  }
  return gpu_done();
}

bool Work::isSuccess() const {
  // Polls the GPU like isCompleted(): no lag until the watchdog's next sweep.
  // gpu_done only updates atomics and the profiler record; the const is
  // torch's signature, not a promise this object is immutable.
  bool done = const_cast<Work*>(this)->gpu_done();
  std::lock_guard<std::mutex> lock(mutex_);
  return done && exception_ == nullptr;
}

float Work::getDuration() const {
  NCCL_CORE_CHECK_STATE(timer != nullptr,
                        "nccl_core: getDuration() needs op timing: set TORCH_NCCL_ENABLE_TIMING=1 "
                        "(or NCCL_CORE_ENABLE_TIMING=1, or Options.enable_timing, or call "
                        "backend._enable_collectives_timing()) before the op is issued; ops "
                        "captured in a CUDA graph or issued in a time estimate are never timed");
  return timer->elapsed_ms(end_event_);
}

uint64_t Work::completion_key() const {
#if NCCL_CORE_TORCH >= 215
  return getCompletionKey();
#else
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(this));
#endif
}

void Work::mark_simulated() {
  simulated_ = true;
  done_.store(true, std::memory_order_release);
  close_record();
}

std::shared_ptr<c10d::WorkInfo> Work::info(std::chrono::steady_clock::time_point finished) {
  float active_ms = 0.0f;
  if (timer && exception() == nullptr) {
    try {
      active_ms = timer->elapsed_ms(end_event_);
    } catch (const std::exception&) {
      active_ms = 0.0f;  // not timed to the end (a failed op): no duration
    }
  }
  return std::make_shared<c10d::WorkInfo>(opType_, seq_, start_, finished,
                                          std::chrono::duration<float>(active_ms / 1000.0f));
}

std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exception_;
}

void Work::set_error(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (exception_ == nullptr) {
      exception_ = std::move(error);
    }
  }
  close_record();
}

void Work::rethrow_if_failed() const {
  auto e = exception();
  if (e != nullptr) {
    block_if_tearing_down();
    if (group) {
      group->mark_raised();
    }
    std::rethrow_exception(e);
  }
}

std::vector<at::Tensor> Work::result() {
  return outputs;
}

bool Work::expired(std::chrono::steady_clock::time_point now) const {
  return timeout_.count() > 0 && now - start_ > timeout_;
}

std::string Work::timeout_message(std::chrono::milliseconds limit,
                                  const std::string& outcome) const {
  auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start_);
  std::string what = c10d::opTypeToString(opType_) + " (seq " + std::to_string(seq_);
  if (group && !group->label.empty()) {
    what += ", group " + group->label;
  }
  if (dtype != c10::ScalarType::Undefined) {
    what += ", " + std::to_string(numel_in) + " elements in, " + std::to_string(numel_out) +
            " out, " + c10::toString(dtype);
  }
  return "nccl_core: caught collective operation timeout: " + what +
         ") timed out after running for " + std::to_string(ran.count()) + " ms (timeout " +
         std::to_string(limit.count()) + " ms)" + outcome;
}

void Work::run_epilogue() {
  for (auto& fn : epilogue) {
    fn();
  }
  epilogue.clear();
}

void Work::release_tensors() {
  stash.clear();
  // Outputs stay: result() and futures hand them out after completion.
}

void Work::blockCurrentStream() {
  if (simulated_) {
    return;  // simulated by NCCL in a time estimate: nothing ran
  }
  auto current = at::cuda::getCurrentCUDAStream(device_.index());
  if (progress_ && current.stream() == stream_) {
    return;  // the op ran on this stream: order is implied
  }
  record_late();
  NCCL_CORE_CHECK_STATE(recorded,
              "nccl_core: wait() on an operation inside an unfinished "
              "coalescing block; wait on the work that ends the block");
  if (current.stream() != stream_) {  // on the op's own stream, order is implied
    end_event_.block(current);
  }
}

void Work::synchronize() {
  blockCurrentStream();
  if (blocks_host && !captured) {
    wait_on_host(timeout_);
  }
}

bool Work::wait(std::chrono::milliseconds timeout) {
  host_profile::Timer prof;
  rethrow_if_failed();
  if (captured) {
    blockCurrentStream();
    return true;
  }
  if (blocking_wait_ || blocks_host) {
    wait_on_host(timeout == kNoTimeout ? timeout_ : timeout);
  }
  blockCurrentStream();
  rethrow_if_failed();
  if (nan_watch) {
    nan_watch->raise_if_found(group.get());  // a NaN this group sent, found by now
  }
  prof.mark(host_profile::kWait);
  return true;
}

void Work::wait_on_host(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(1);
  while (!gpu_done()) {
    rethrow_if_failed();
    if (timeout.count() > 0 && std::chrono::steady_clock::now() > deadline) {
      auto err = dist_backend_error(
          timeout_message(timeout, abort_on_timeout ? "; communicator aborted" : ""));
      set_error(err);
      if (group) {
        group->mark_raised();  // raised right here
      }
      if (comm_ && abort_on_timeout) {
        comm_->abort();
      }
      std::rethrow_exception(err);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(500));
  }
  rethrow_if_failed();
}

void Work::abort() {
  set_error(dist_backend_error("nccl_core: work aborted"));
  if (comm_) {
    comm_->abort();
  }
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  std::lock_guard<std::mutex> lock(future_mutex_);
  if (future_) {
    return future_;
  }
  future_ = c10::make_intrusive<c10::ivalue::Future>(
      c10::ListType::create(c10::TensorType::get()),
      std::vector<c10::Device>{device_});
  if (auto e = exception()) {
    future_->setError(e);
    return future_;
  }
  // The future's CUDA events must mark this op's end: complete it from a
  // side stream that waits on our end event.
  record_late();
  auto side = at::cuda::getStreamFromPool(false, device_.index());
  end_event_.block(side);
  c10::cuda::CUDAStreamGuard guard(side);
  future_->markCompleted(c10::IValue(outputs));
  return future_;
}

uint64_t Work::getSequencenumber() const {
  return seq_;
}

std::chrono::milliseconds Work::getTimeout() const {
  return timeout_;
}

} // namespace nccl_core
