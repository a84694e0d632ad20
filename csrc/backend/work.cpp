#include "backend/work.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/core/ivalue.h>
#include <c10/cuda/CUDAGuard.h>

#include <thread>

#include "failures/group_failures.h"
#include "op/errors.h"
#include "comm/communicator.h"
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
      op_(std::make_shared<OpState>(type, seq, device, timeout)),
      comm_(std::move(comm)),
      blocking_wait_(blocking_wait) {
  // The op's state ends the profiler record: it sees the op end.
  if (recordFunctionEndCallback_) {
    op_->set_record_end(std::move(recordFunctionEndCallback_));
    recordFunctionEndCallback_ = nullptr;
  }
#if NCCL_CORE_TORCH >= 215
  op_->completion_key = getCompletionKey();
#else
  op_->completion_key = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(op_.get()));
#endif
}

Work::~Work() = default;

const std::shared_ptr<TensorHold>& Work::hold() {
  if (!hold_) {
    hold_ = std::make_shared<TensorHold>();
  }
  return hold_;
}

bool Work::isCompleted() {
  return op_->completed();
}

bool Work::isSuccess() const {
  // Polls the GPU like isCompleted(): no lag until the watchdog's next sweep.
  return op_->gpu_done() && op_->exception() == nullptr;
}

float Work::getDuration() const {
  return op_->duration_ms();
}

std::exception_ptr Work::exception() const {
  return op_->exception();
}

void Work::rethrow_if_failed() const {
  auto e = op_->exception();
  if (e != nullptr) {
    block_if_tearing_down();
    if (op_->group) {
      op_->group->mark_raised();
    }
    std::rethrow_exception(e);
  }
}

std::vector<at::Tensor> Work::result() {
  return outputs;
}

void Work::run_epilogue() {
  for (auto& fn : epilogue) {
    fn();
  }
  epilogue.clear();
}

void Work::release_tensors() {
  stash.clear();
  if (hold_) {
    hold_->release();
  }
  // Outputs stay: result() and futures hand them out.
}

void Work::blockCurrentStream() {
  if (op_->simulated()) {
    return;  // simulated by NCCL in a time estimate: nothing ran
  }
  auto current = at::cuda::getCurrentCUDAStream(op_->device.index());
  if (op_->tracked_on_device() && current.stream() == op_->stream()) {
    return;  // the op ran on this stream: order is implied
  }
  op_->record_late();
  NCCL_CORE_CHECK_STATE(op_->recorded(),
              "nccl_core: wait() on an operation inside an unfinished "
              "coalescing block; wait on the work that ends the block");
  if (current.stream() != op_->stream()) {  // on the op's own stream, order is implied
    op_->block(current);
  }
}

void Work::synchronize() {
  blockCurrentStream();
  if (blocks_host && !op_->captured) {
    wait_on_host(op_->timeout());
  }
  if (hold_ && !op_->captured) {
    hold_->release();  // the caller's stream is ordered after the op
  }
}

bool Work::wait(std::chrono::milliseconds timeout) {
  host_profile::Timer prof;
  rethrow_if_failed();
  if (op_->captured) {
    blockCurrentStream();
    return true;
  }
  if (blocking_wait_ || blocks_host) {
    wait_on_host(timeout == kNoTimeout ? op_->timeout() : timeout);
  }
  blockCurrentStream();
  rethrow_if_failed();
  if (hold_) {
    // The caller's stream now runs after the op: what it frees from here
    // on is reused after the op, as with backend nccl's wait().
    hold_->release();
  }
  if (nan_watch) {
    nan_watch->raise_if_found(op_->group.get());  // a NaN this group sent, found by now
  }
  prof.mark(host_profile::kWait);
  return true;
}

void Work::wait_on_host(std::chrono::milliseconds timeout) {
  auto pause = std::chrono::microseconds(1);
  while (!op_->gpu_done()) {
    rethrow_if_failed();
    if (op_->expired(std::chrono::steady_clock::now(), timeout)) {  // from the op's start
      auto err = dist_backend_error(
          op_->timeout_message(timeout, op_->abort_on_timeout ? "; communicator aborted" : ""));
      op_->set_error(err);
      if (op_->group) {
        op_->group->mark_raised();  // raised right here
      }
      if (comm_ && op_->abort_on_timeout) {
        if (op_->group && op_->group->before_abort) {
          op_->group->before_abort();  // the program's abort hooks, once
        }
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
  op_->set_error(dist_backend_error("nccl_core: work aborted"));
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
      std::vector<c10::Device>{op_->device});
  if (auto e = op_->exception()) {
    future_->setError(e);
    return future_;
  }
  // The future's CUDA events must mark this op's end: complete it from a
  // side stream that waits on our end event.
  op_->record_late();
  auto side = at::cuda::getStreamFromPool(false, op_->device.index());
  op_->block(side);
  c10::cuda::CUDAStreamGuard guard(side);
  future_->markCompleted(c10::IValue(outputs));
  return future_;
}

uint64_t Work::getSequencenumber() const {
  return op_->seq;
}

} // namespace nccl_core
