#include "failures/watchdog.h"

#include <c10/cuda/CUDAGraphsC10Utils.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <unordered_set>

#include "op/errors.h"
#include "failures/heartbeat.h"
#include "op/op_state.h"
#include "op/tensor_hold.h"
#include "comm/communicator.h"
#include "nvlink/kernels.h"
#include "nvlink/progress.h"
#include "nccl/api.h"
#include "nccl/seam.h"

namespace nccl_core {

Watchdog::Watchdog(std::chrono::milliseconds interval, ErrorPolicy policy, Hooks hooks,
                   std::chrono::milliseconds heartbeat, std::shared_ptr<GroupInfo> group,
                   std::chrono::milliseconds unraised_grace)
    : interval_(interval),
      policy_(policy),
      hooks_(std::move(hooks)),
      group_(std::move(group)),
      unraised_grace_(unraised_grace) {
  thread_ = std::thread([this] { run(); });
  heartbeat::watch(&beat_, heartbeat, group_ ? group_->label : std::string("?"));
}

Watchdog::~Watchdog() {
  stop();
}

void Watchdog::stop() {
  if (stop_.exchange(true)) {
    return;
  }
  heartbeat::unwatch(&beat_);
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // Ops that finished since the last sweep still report their completion.
  if (hooks_.on_done) {
    for (auto& e : entries_) {
      if (e.op->exception() == nullptr && e.op->gpu_done()) {
        hooks_.on_done(*e.op);
      }
    }
  }
  entries_.clear();
}

void Watchdog::watch(std::shared_ptr<OpState> op, std::shared_ptr<Communicator> comm,
                     std::shared_ptr<TensorHold> hold) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(Entry{std::move(op), std::move(comm), std::move(hold)});
}

void Watchdog::follow(std::shared_ptr<nvlink::Progress> progress,
                      std::function<std::chrono::milliseconds()> timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  progress_ = std::move(progress);
  progress_timeout_ = std::move(timeout);
  since_ = std::chrono::steady_clock::now();
}

bool Watchdog::check_progress(std::chrono::steady_clock::time_point now) {
  std::shared_ptr<nvlink::Progress> progress;
  std::shared_ptr<Communicator> comm;
  std::function<std::chrono::milliseconds()> timeout_of;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    progress = progress_;
    comm = comm_;
    timeout_of = progress_timeout_;
  }
  if (!progress) {
    return true;
  }
  if (unsigned long long f = progress->fault(); f != 0 && !fault_handled_) {
    fault_handled_ = true;
    uint64_t seq = progress->fault_seq();
    char sigs[64];
    std::snprintf(sigs, sizeof(sigs), "0x%04llx where this rank's is 0x%04llx",
                  nvlink::fault_peer_sig(f), nvlink::fault_my_sig(f));
    handle("nccl_core: desync found by the fast path: at seq " + std::to_string(seq) + " rank " +
               std::to_string(nvlink::fault_peer(f)) + " made another call (signature " + sigs +
               "); the call moved no data",
           true, seq, comm);
    return false;
  }
  uint64_t done = progress->done();
  if (timeouts_to_wait_.load()) {
    return true;  // a stalled call times out in its wait()
  }
  if (done != last_done_ || !progress->tracked_pending()) {
    last_done_ = done;
    since_ = now;  // progress, or nothing pending: the clock starts again
    return true;
  }
  if (stalled_progress_ == progress.get() && stalled_done_ == done) {
    // Handled once: a second report of the same stuck call would gather
    // the desync answers again and hold off the unraised-error teardown.
    return true;
  }
  auto timeout = timeout_of();
  if (timeout.count() <= 0 || now - since_ <= timeout) {
    return true;
  }
  handle("nccl_core: caught collective operation timeout: a collective on the fast path "
         "(call " + std::to_string(done + 1) + " of the group's plain calls) timed out: no progress for " +
             std::to_string(timeout.count()) + " ms",
         true, 0, comm);  // aborting `comm` ends the kernel waiting in its barrier
  stalled_progress_ = progress.get();
  stalled_done_ = done;
  return false;
}

void Watchdog::set_comm(std::shared_ptr<Communicator> comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  comm_ = std::move(comm);
}

size_t Watchdog::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

bool Watchdog::drained() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (progress_ && !progress_->idle()) {
    return false;
  }
  for (const auto& e : entries_) {
    if (e.op->exception() == nullptr && !e.op->gpu_done()) {
      return false;
    }
  }
  return true;
}

void Watchdog::run() {
  // Event queries from this thread must not invalidate a CUDA graph that
  // another thread captures in the (default) global mode.
  c10::cuda::CUDAStreamCaptureModeGuard capture_mode(cudaStreamCaptureModeThreadLocal);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.load()) {
    cv_.wait_for(lock, interval_, [this] { return stop_.load(); });
    if (stop_.load()) {
      break;
    }
    lock.unlock();
    beat_.fetch_add(1, std::memory_order_relaxed);
    if (int64_t pause = stall_ms_.exchange(0)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause));
    }
    try {
      sweep();
    } catch (const std::exception& e) {
      handle(std::string("nccl_core watchdog: ") + e.what(), false, 0, nullptr);
    }
    lock.lock();
  }
}

void Watchdog::check_unraised(std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> handling(handle_mutex_);
  if (!unraised_) {
    return;
  }
  if (group_ && group_->raised()) {
    unraised_ = false;
    return;
  }
  if (unraised_grace_.count() <= 0 || now - unraised_since_ < unraised_grace_) {
    return;
  }
  tear_down(unraised_report_ + "\nnccl_core: the error above reached no program thread within " +
            std::to_string(unraised_grace_.count()) +
            " ms (no call on the group, Work.wait() or destroy_process_group() raised it): a "
            "thread waiting on the GPU behind the failed collective cannot be reached by an "
            "exception and must not go on with its output; ending the process");
}

void Watchdog::release_finished_holds() {
  std::vector<Entry> finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto still = std::stable_partition(held_after_error_.begin(), held_after_error_.end(),
                                       [](const Entry& e) { return !e.op->gpu_done(); });
    finished.assign(std::make_move_iterator(still),
                    std::make_move_iterator(held_after_error_.end()));
    held_after_error_.erase(still, held_after_error_.end());
  }
  for (auto& e : finished) {
    e.hold->release();  // outside the lock: freeing tensors may take time
  }
}

void Watchdog::sweep() {
  release_finished_holds();
  const bool winding = winding_down_.load();
  if (hooks_.tick && !winding) {
    std::string desync = hooks_.tick();
    if (!desync.empty()) {
      std::shared_ptr<Communicator> comm;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        comm = comm_;
      }
      handle(desync, false, 0, comm);
      return;
    }
  }
  const bool to_wait = timeouts_to_wait_.load();
  if (!winding) {
    if (!to_wait) {
      check_unraised(std::chrono::steady_clock::now());
    }
    if (!check_progress(std::chrono::steady_clock::now())) {
      return;
    }
  }
  std::vector<Entry> snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot = entries_;
  }
  if (snapshot.empty()) {
    return;
  }
  auto now = std::chrono::steady_clock::now();
  // A set, not a list: an eager loop queues thousands of works per interval,
  // and the removal below runs under the lock that every call's watch() takes.
  std::unordered_set<const OpState*> done;
  for (auto& e : snapshot) {
    if (e.op->exception() != nullptr || e.op->gpu_done()) {
      done.insert(e.op.get());
      continue;
    }
    if (winding) {
      continue;  // retired once finished; the shutdown handles the rest
    }
    if (e.op->expired(now) && !to_wait) {
      handle(e.op->timeout_message(e.op->timeout(), ""), true, 0, e.comm);
      return;
    }
    if (e.comm && e.comm->is_live()) {
      ncclResult_t err = e.comm->async_error();
      if (err != ncclSuccess && err != ncclInProgress) {
        // Explained too: a peer that left or fell behind is named.
        handle("nccl_core: NCCL async error: " + std::string(nccl().GetErrorString(err)) + " (" +
                   e.comm->last_error() + ")",
               true, 0, e.comm);
        return;
      }
    }
  }
  if (done.empty()) {
    return;
  }
  for (auto& e : snapshot) {
    if (done.count(e.op.get()) != 0) {
      if (e.hold) {
        e.hold->release();
      }
      if (hooks_.on_done && e.op->exception() == nullptr) {
        hooks_.on_done(*e.op);
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) { return done.count(e.op.get()) != 0; }),
                 entries_.end());
}

} // namespace nccl_core
