// TensorHold: the tensors of one async call (inputs and outputs), kept
// alive while the op may still use them on the backend's stream.
//
// Shared by the call's Work and the watchdog: wait() releases them once the
// caller's stream is ordered after the op (the caller's later frees are then
// safe, as with backend nccl), and the watchdog releases them when it sees
// the op end, for programs that never wait.  Plain calls have none: the
// caller's stream orders every later use of their tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <mutex>
#include <utility>
#include <vector>

namespace nccl_core {

class TensorHold {
 public:
  void add(at::Tensor t) {
    std::lock_guard<std::mutex> lock(mutex_);
    tensors_.push_back(std::move(t));
  }
  // Idempotent; the tensors are destroyed outside the lock.
  void release() {
    std::vector<at::Tensor> gone;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      gone.swap(tensors_);
    }
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return tensors_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<at::Tensor> tensors_;
};

}  // namespace nccl_core
