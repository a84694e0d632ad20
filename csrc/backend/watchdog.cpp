#include "backend/watchdog.h"

#include <c10/cuda/CUDAGraphsC10Utils.h>

#include <algorithm>
#include <unordered_set>

#include "backend/errors.h"
#include "backend/work.h"
#include "comm/communicator.h"
#include "fast/progress.h"
#include "nccl/api.h"

namespace nccl_core {

Watchdog::Watchdog(std::chrono::milliseconds interval, bool abort_on_error,
                   std::function<void(const std::string&)> on_error)
    : interval_(interval), abort_on_error_(abort_on_error), on_error_(std::move(on_error)) {
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  stop();
}

void Watchdog::stop() {
  if (stop_.exchange(true)) {
    return;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
}

void Watchdog::watch(c10::intrusive_ptr<Work> work,
                     std::shared_ptr<Communicator> comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(Entry{std::move(work), std::move(comm)});
}

void Watchdog::follow(std::shared_ptr<fast::Progress> progress,
                      std::shared_ptr<Communicator> comm,
                      std::function<std::chrono::milliseconds()> timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  progress_ = std::move(progress);
  progress_comm_ = std::move(comm);
  progress_timeout_ = std::move(timeout);
  since_ = std::chrono::steady_clock::now();
}

bool Watchdog::check_progress(std::chrono::steady_clock::time_point now) {
  std::shared_ptr<fast::Progress> progress;
  std::shared_ptr<Communicator> comm;
  std::function<std::chrono::milliseconds()> timeout_of;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    progress = progress_;
    comm = progress_comm_;
    timeout_of = progress_timeout_;
  }
  if (!progress) {
    return true;
  }
  uint64_t done = progress->done();
  if (done != last_done_ || !progress->tracked_pending()) {
    last_done_ = done;
    since_ = now;  // progress, or nothing pending: the clock starts again
    return true;
  }
  auto timeout = timeout_of();
  if (timeout.count() <= 0 || now - since_ <= timeout) {
    return true;
  }
  const char* outcome = abort_on_error_
                            ? "; communicator aborted"
                            : "; communicator kept for recovery (shrink_group with SHRINK_ABORT)";
  fail_all("nccl_core: caught collective operation timeout: a collective on the fast path "
           "(call " + std::to_string(done + 1) +
               " of the group's plain calls) timed out after " +
               std::to_string(timeout.count()) + " ms" + outcome,
           abort_on_error_);
  if (abort_on_error_ && comm) {
    comm->abort();  // ends the kernel waiting in its barrier
  }
  since_ = now;
  return false;
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
    if (e.work->exception() == nullptr && !e.work->gpu_done()) {
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
    try {
      sweep();
    } catch (const std::exception& e) {
      fail_all(std::string("nccl_core watchdog: ") + e.what(), abort_on_error_);
    }
    lock.lock();
  }
}

void Watchdog::sweep() {
  if (!check_progress(std::chrono::steady_clock::now())) {
    return;
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
  std::unordered_set<const Work*> done;
  for (auto& e : snapshot) {
    if (e.work->exception() != nullptr || e.work->gpu_done()) {
      done.insert(e.work.get());
      continue;
    }
    const char* outcome = abort_on_error_
                              ? "; communicator aborted"
                              : "; communicator kept for recovery (shrink_group with SHRINK_ABORT)";
    if (e.work->expired(now)) {
      fail_all(e.work->timeout_message(e.work->getTimeout(), outcome), abort_on_error_);
      return;
    }
    if (e.comm && e.comm->is_live()) {
      ncclResult_t err = e.comm->async_error();
      if (err != ncclSuccess && err != ncclInProgress) {
        fail_all("nccl_core: NCCL async error: " + std::string(ncclGetErrorString(err)) + " (" +
                     e.comm->last_error() + ")" + outcome,
                 abort_on_error_);
        return;
      }
    }
  }
  if (done.empty()) {
    return;
  }
  for (auto& e : snapshot) {
    if (done.count(e.work.get()) != 0) {
      e.work->release_tensors();
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) { return done.count(e.work.get()) != 0; }),
                 entries_.end());
}

void Watchdog::fail_all(const std::string& msg, bool abort) {
  std::vector<Entry> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed.swap(entries_);
  }
  // The backend's error, then the works', then the abort: a caller woken by
  // any of these must already see the group as failed, and aborting lets the
  // kernels exit, which a waiter polling the end event must not take for
  // success.
  on_error_(msg);
  auto err = dist_backend_error(msg);
  for (auto& e : failed) {
    e.work->set_error(err);
  }
  if (!abort) {
    return;
  }
  for (auto& e : failed) {
    if (e.comm) {
      e.comm->abort();
    }
  }
}

} // namespace nccl_core
