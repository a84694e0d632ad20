// Watchdog: one thread per backend that retires finished work (releasing the
// tensors it kept alive), and turns timeouts and NCCL async errors into an
// aborted communicator plus a DistBackendError on every pending work.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nccl_core {

class Work;
class Communicator;
namespace fast {
class Progress;
}

class Watchdog {
 public:
  // `on_error(msg)` runs on the watchdog thread after the communicator has
  // been aborted (the backend records the error for later calls).
  Watchdog(std::chrono::milliseconds interval, bool abort_on_error,
           std::function<void(const std::string&)> on_error);
  ~Watchdog();

  void watch(c10::intrusive_ptr<Work> work, std::shared_ptr<Communicator> comm);
  // Also watches the calls that report their own completion (fast/progress.h,
  // no Work here): no ticket finishing for `timeout()` while one is pending
  // is a timeout of `comm`.
  void follow(std::shared_ptr<fast::Progress> progress, std::shared_ptr<Communicator> comm,
              std::function<std::chrono::milliseconds()> timeout);
  // Number of works not yet retired.
  size_t pending() const;
  // True once every watched work has passed its end event (or failed) and
  // every followed call has reported: the GPU is done with them, on whatever
  // stream they ran.
  bool drained() const;
  // Stops the thread; pending work is dropped (the comm is gone).
  void stop();
  // Records `msg` as the backend's error, fails every pending work with it
  // and, if `abort`, aborts their communicators.
  void fail_all(const std::string& msg, bool abort);

 private:
  void run();
  void sweep();
  // False after failing everything for a followed call that stalled.
  bool check_progress(std::chrono::steady_clock::time_point now);

  struct Entry {
    c10::intrusive_ptr<Work> work;
    std::shared_ptr<Communicator> comm;
  };

  const std::chrono::milliseconds interval_;
  const bool abort_on_error_;
  std::function<void(const std::string&)> on_error_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  // Set once by follow(), before calls are made; read by the watchdog thread.
  std::shared_ptr<fast::Progress> progress_;
  std::shared_ptr<Communicator> progress_comm_;
  std::function<std::chrono::milliseconds()> progress_timeout_;
  uint64_t last_done_ = 0;  // watchdog thread only
  std::chrono::steady_clock::time_point since_;  // when last_done_ was seen to change
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

} // namespace nccl_core
