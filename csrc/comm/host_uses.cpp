// Communicator::Use: host calls in flight on a communicator's handle, and
// how finalize/destroy/abort wait for them (communicator.h describes the
// rules); the holds of this thread's open NCCL group; quiesce, the bounded
// device sync before resource memory goes.
#include <cuda_runtime_api.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "nccl/api.h"

namespace nccl_core {

Communicator::Use::Use(Communicator& c) : c_(&c) {
  c.users_.fetch_add(1);
  // After the increment: a closer that set closing_ before it waits for us.
  if (c.closing_.load() || c.state_.load() != State::Live) [[unlikely]] {
    State s = c.state_.load();
    leave();
    throw NcclInvalid(s == State::Aborted ? "communicator has been aborted"
                      : s == State::Live
                          ? "communicator is being finalized or destroyed by another thread"
                      : s == State::Null ? "communicator is not initialized (Communicator())"
                                         : "communicator has been destroyed");
  }
}

void Communicator::Use::leave() noexcept {
  Communicator* c = c_;
  if (c == nullptr) {
    return;
  }
  c_ = nullptr;
  c->users_.fetch_sub(1);
  if (c->closing_.load() || c->state_.load() != State::Live) {
    std::lock_guard<std::mutex> lock(c->users_mutex_);
    c->users_cv_.notify_all();
  }
}

namespace {

// The holds of this thread's open group (Communicator::GroupHold).
thread_local std::vector<Communicator::GroupHold> t_group_holds;

}  // namespace

void Communicator::hold_for_open_group() {
  if (!held_by_open_group()) {
    // Held before the call is queued: the group may not outlive the handle.
    t_group_holds.push_back(GroupHold{shared_from_this(), Use(*this)});
  }
}

bool Communicator::held_by_open_group() const {
  for (const auto& h : t_group_holds) {
    if (h.comm.get() == this) {
      return true;
    }
  }
  return false;
}

std::vector<Communicator::GroupHold> Communicator::release_open_group() {
  std::vector<GroupHold> holds;
  holds.swap(t_group_holds);
  return holds;
}

bool Communicator::wait_for_users(int own, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(users_mutex_);
  return users_cv_.wait_for(lock, limit, [&] { return users_.load() <= own; });
}

void Communicator::close_gate(const char* what) {
  NCCL_CORE_REQUIRE(!held_by_open_group(), what,
                    " inside an open group (group_start) that uses this communicator; call "
                    "group_end first");
  closing_ = true;
  auto limit = timeout_.load();
  if (!wait_for_users(0, limit)) {
    closing_ = false;
    throw NcclInvalid(concat(what, ": ", users_.load(),
                             " operation(s) of other threads still use the communicator after ",
                             limit.count(),
                             " ms (a group_start without group_end?); nothing was released"));
  }
}

bool Communicator::quiesce() noexcept {
  // On a helper thread, so that a kernel that never ends (an NCCL kernel
  // waiting for a dead peer) cannot hold the caller longer than the
  // timeout; the helper then finishes on its own.
  struct Done {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  int device = device_;
  try {
    std::thread([done, device] {
      (void)cudaSetDevice(device);
      // A capture on another thread must not turn the sync into an error.
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      (void)cudaThreadExchangeStreamCaptureMode(&mode);
      if (cudaDeviceSynchronize() != cudaSuccess) {
        (void)cudaGetLastError();
      }
      std::lock_guard<std::mutex> lock(done->mutex);
      done->done = true;
      done->cv.notify_all();
    }).detach();
  } catch (...) {
    return false;  // no thread: go on without waiting, as before
  }
  std::unique_lock<std::mutex> lock(done->mutex);
  return done->cv.wait_for(lock, timeout_.load(), [&] { return done->done; });
}

}  // namespace nccl_core
