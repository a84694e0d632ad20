#include "op/op_state.h"

#include <ATen/cuda/CUDAContext.h>

#include "op/errors.h"
#include "nvlink/progress.h"

namespace nccl_core {

OpState::OpState(c10d::OpType type, uint64_t seq, at::Device device,
                 std::chrono::milliseconds timeout)
    : type(type),
      seq(seq),
      device(device),
      start(std::chrono::steady_clock::now()),
      timeout_(timeout) {}

void OpState::record_end(const c10::cuda::CUDAStream& stream) {
  if (timer) {
    end_event_.enable_timing();  // the op's end is also its timer's
  }
  stream_ = stream.stream();
  end_event_.record(stream);
  recorded_.store(true, std::memory_order_release);
}

void OpState::track_on_device(std::shared_ptr<nvlink::Progress> progress, uint64_t ticket,
                              const c10::cuda::CUDAStream& stream) {
  progress_ = std::move(progress);
  ticket_ = ticket;
  stream_ = stream.stream();
  if (timer) {
    record_end(stream);  // the kernel's report tracks it; the event times it
  }
}

void OpState::record_late() {
  if (progress_ && !recorded()) {
    // Everything the op enqueued is before this point of its stream.
    end_event_.record(c10::cuda::getStreamFromExternal(stream_, device.index()));
    recorded_.store(true, std::memory_order_release);
  }
}

bool OpState::gpu_done() {
  if (done_.load(std::memory_order_acquire)) {
    return true;
  }
  if (progress_ && progress_->done() >= ticket_) {
    done_.store(true, std::memory_order_release);
    close_record();
    return true;
  }
  if (!recorded() || captured) {
    return false;
  }
  if (end_event_.query()) {
    done_.store(true, std::memory_order_release);
    close_record();
    return true;
  }
  return false;
}

void OpState::mark_simulated() {
  simulated_ = true;
  done_.store(true, std::memory_order_release);
  close_record();
}

void OpState::close_record() {
  if (record_end_fn_ && !record_closed_.exchange(true)) {
    record_end_fn_();
  }
}

void OpState::set_error(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (error_ == nullptr) {
      error_ = std::move(error);
    }
  }
  close_record();
}

std::exception_ptr OpState::exception() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return error_;
}

bool OpState::expired(std::chrono::steady_clock::time_point now,
                      std::optional<std::chrono::milliseconds> limit) const {
  auto t = limit.value_or(timeout_);
  return t.count() > 0 && now - start > t;
}

std::string OpState::timeout_message(std::chrono::milliseconds limit,
                                     const std::string& outcome) const {
  auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  std::string what = c10d::opTypeToString(type) + " (seq " + std::to_string(seq);
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

float OpState::duration_ms() const {
  NCCL_CORE_CHECK_STATE(timer != nullptr,
                        "nccl_core: getDuration() needs op timing: set TORCH_NCCL_ENABLE_TIMING=1 "
                        "(or NCCL_CORE_ENABLE_TIMING=1, or Options.enable_timing, or call "
                        "backend._enable_collectives_timing()) before the op is issued; ops "
                        "captured in a CUDA graph or issued in a time estimate are never timed");
  return timer->elapsed_ms(end_event_);
}

std::shared_ptr<c10d::WorkInfo> OpState::info(std::chrono::steady_clock::time_point finished) const {
  float active_ms = 0.0f;
  if (timer && exception() == nullptr) {
    try {
      active_ms = timer->elapsed_ms(end_event_);
    } catch (const std::exception&) {
      active_ms = 0.0f;  // not timed to the end (a failed op): no duration
    }
  }
  return std::make_shared<c10d::WorkInfo>(type, seq, start, finished,
                                          std::chrono::duration<float>(active_ms / 1000.0f));
}

}  // namespace nccl_core
