// How a Communicator's life ends: finalize (flush, then destroy), destroy, and
// abort, which never waits on peers and runs once (communicator.h).
#include "comm/communicator.h"

#include <functional>
#include <mutex>
#include <vector>

#include "comm/device_scope.h"
#include "nccl/api.h"
#include "nccl/seam.h"

namespace nccl_core {

void Communicator::before_close(std::function<void()> drain) {
  std::lock_guard<std::mutex> lock(before_abort_mutex_);
  before_close_.push_back(std::move(drain));
}

void Communicator::finalize() {
  end_life("finalize", true);
}

void Communicator::destroy() {
  end_life("destroy", false);
}

void Communicator::end_life(const char* what, bool flush) {
  if (state_.load() != State::Live) {
    return;  // idempotent
  }
  NCCL_CORE_REQUIRE(!(flush && revoked_.load()),
                    "finalize() after revoke() is invalid (NCCL forbids ncclCommFinalize on a "
                    "revoked communicator); destroy() or abort() it");
  // Operations of other threads finish first; later ones are refused.
  close_gate(what);
  try {
    close_all_resources();
    std::lock_guard<std::mutex> lock(lifecycle_mutex_);
    if (state_.load() != State::Live) {
      return;
    }
    DeviceScope scope(device_);
    if (flush) {
      run("ncclCommFinalize", [&] { return nccl().CommFinalize(comm_); });
      state_ = State::Finalized;
    }
    NCCL_CORE_CHECK(comm_, nccl().CommDestroy(comm_));
    state_ = State::Destroyed;
  } catch (...) {
    closing_ = false;
    throw;
  }
}

void Communicator::abort() noexcept {
  // No lock: abort must be able to interrupt a finalize stuck in another
  // thread.  The exchange makes it run once.
  State expected = State::Live;
  if (!state_.compare_exchange_strong(expected, State::Aborted)) {
    if (expected != State::Finalized) {
      return;
    }
    state_ = State::Aborted;
  }
  // Our own waiting kernels first: NCCL's abort may wait for the device,
  // and it unmaps windows that they may still be using.
  raise_abort_flag();
  std::vector<std::function<void()>> drains;
  {
    std::lock_guard<std::mutex> lock(before_abort_mutex_);
    drains.swap(before_abort_);
  }
  for (auto& drain : drains) {
    try {
      drain();
    } catch (...) {
      // abort goes on: a failed drain cannot be helped here
    }
  }
  // Host calls of other threads that are only enqueueing leave within
  // microseconds: NCCL must not free the communicator under them.  A call
  // stuck on peers does not leave; ncclCommAbort is what ends it.  Uses of
  // this thread's own open group are not waited for.
  (void)wait_for_users(held_by_open_group() ? 1 : 0, kAbortGrace);
  int previous = -1;
  if (device_ >= 0) {  // none for the lab's fake NCCL (device_scope.h)
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device_);
  }
  (void)nccl().CommAbort(comm_);
  if (previous >= 0) {
    (void)cudaSetDevice(previous);
  }
  // Only now may the memory NCCL had registered be released.
  forget_all_resources();
}

} // namespace nccl_core
