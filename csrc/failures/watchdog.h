// csrc/failures: what happens when a collective fails or a rank hangs: the
// watchdog (this file), the error policy (TORCH_NCCL_ASYNC_ERROR_HANDLING),
// the heartbeat monitor, the flight recorder and the reports built from it
// (desync.h, call_check.h: the cross-rank "same collective?" check),
// ephemeral timeouts and the NaN watch.  The backend reaches all of it
// through one class, GroupFailures (group_failures.h).  It reads OpState
// (csrc/op), never a Work, and includes nothing of tooling/, registration/ or
// backend/.
//
// Watchdog: one thread per backend that retires finished ops (releasing an
// async call's tensors if its wait() has not), and turns timeouts and NCCL async errors into a
// DistBackendError on every pending work, then applies the group's error
// policy (error_policy.h: abort the communicator, end the process).
#pragma once

#include "failures/error_policy.h"
#include "op/group_info.h"

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

class OpState;
class TensorHold;
class Communicator;
namespace nvlink {
class Progress;
}

class Watchdog {
 public:
  struct Hooks {
    // Records the error in the backend, for later calls (first error wins).
    std::function<void(const std::string&)> on_error;
    // After a timeout or a mismatch: what the other ranks were doing at
    // sequence number `at` (0: where this rank waits), the desync report
    // (desync.h); bounded in time, may return "".
    std::function<std::string(uint64_t at)> explain;
    // Every sweep: lets the backend answer peers' requests for its state.
    // Returns a desync found meanwhile (call_check.h), "" if none.
    std::function<std::string()> tick;
    // An op finished without error (completion_hooks.h); also for those
    // found finished when the watchdog stops.
    std::function<void(OpState&)> on_done;
    // Before a failure aborts the communicator or ends the process: the
    // program's abort hooks (op/abort_hooks.h).
    std::function<void()> before_abort;
  };
  // `heartbeat`: how long the thread may go without a sweep before the
  // heartbeat monitor ends the process (0: not watched); `group` names the
  // group there and tells whether an error reached the program; an error
  // that did not within `unraised_grace` (policies 0 and 2) ends the process.
  Watchdog(std::chrono::milliseconds interval, ErrorPolicy policy, Hooks hooks,
           std::chrono::milliseconds heartbeat, std::shared_ptr<GroupInfo> group,
           std::chrono::milliseconds unraised_grace);
  ~Watchdog();

  // Watches `op` until it ends or fails; `hold` (async calls; null for
  // plain ones) is released when it ends.  Neither is a Work: what the
  // program dropped is not kept alive here.
  void watch(std::shared_ptr<OpState> op, std::shared_ptr<Communicator> comm,
             std::shared_ptr<TensorHold> hold);
  // Also watches the calls that report their own completion (nvlink/progress.h,
  // no Work here): no ticket finishing for `timeout()` while one is pending
  // is a timeout of `comm`.
  // Call set_comm() first: a stalled followed call is a timeout of that
  // communicator.
  void follow(std::shared_ptr<nvlink::Progress> progress,
              std::function<std::chrono::milliseconds()> timeout);
  // The group's communicator, for errors that belong to no pending work (a
  // desync found after the calls completed).
  void set_comm(std::shared_ptr<Communicator> comm);
  // Number of works not yet retired.
  size_t pending() const;
  // True once every watched work has passed its end event (or failed) and
  // every followed call has reported: the GPU is done with them, on whatever
  // stream they ran.
  bool drained() const;
  // Stops the thread; pending work is dropped (the comm is gone).
  void stop();
  // The group is being destroyed (destroy_process_group): from here the
  // thread retires finished work but raises nothing, as backend nccl's
  // watchdog stops at shutdown; the shutdown itself bounds its wait and
  // aborts (a call that never matched ended the process by
  // SIGABRT while the program was leaving).
  void wind_down() { winding_down_.store(true); }
  // TORCH_NCCL_BLOCKING_WAIT: timeouts reach the program through wait()
  // alone, and an error nothing raised never ends the process, as with
  // backend nccl, which starts no watchdog then.  Errors the GPU reports (an
  // NCCL async error, a fast-path desync) still fail the works, for wait().
  void leave_timeouts_to_wait() { timeouts_to_wait_.store(true); }
  // Tests: the thread sleeps `pause` before its next sweep (a stuck watchdog).
  void stall_for(std::chrono::milliseconds pause) { stall_ms_.store(pause.count()); }
  // What happens to the failed works' communicators.
  enum class Release { kKeep, kAbortNow, kAbortWhenRaised };
  // Records `msg` as the backend's error, fails every pending work with it
  // and releases their communicators as `release` says.
  void fail_all(const std::string& msg, Release release);
  // A timeout, mismatch or NCCL error found: the report (with the desync
  // explanation if `explain`, at sequence number `at`), then the policy:
  // fail, abort `comm` and the works' communicators, end the process.
  // Any thread; one report at a time.  `release`: false for an error that
  // leaves the communicator healthy (nothing is aborted for it).
  void handle(const std::string& msg, bool explain, uint64_t at,
              const std::shared_ptr<Communicator>& comm, bool release = true);
  // An error of the data, not of the communication, found outside the sweep
  // (the NaN check, nan_watch.h), from any thread: policies 1 and 3 end the
  // process; 0 and 2 fail the group without aborting its communicator.
  void report(const std::string& msg);

 private:
  void run();
  void sweep();
  // False after failing everything for a followed call that stalled.
  bool check_progress(std::chrono::steady_clock::time_point now);
  // Ends the process if the error of handle() was not raised in time.
  void check_unraised(std::chrono::steady_clock::time_point now);

  // Releases the tensors of failed ops that the GPU has passed.
  void release_finished_holds();
  struct Entry {
    std::shared_ptr<OpState> op;
    std::shared_ptr<Communicator> comm;
    std::shared_ptr<TensorHold> hold;
  };

  const std::chrono::milliseconds interval_;
  const ErrorPolicy policy_;
  Hooks hooks_;
  const std::shared_ptr<GroupInfo> group_;
  const std::chrono::milliseconds unraised_grace_;
  // Set by handle() under policies 0 and 2 (under handle_mutex_).
  std::mutex handle_mutex_;
  bool unraised_ = false;
  std::chrono::steady_clock::time_point unraised_since_;
  std::string unraised_report_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  // Failed ops whose kernels may still run (no abort yet, or one not yet
  // felt): their tensors stay held until the GPU has passed them, so no
  // freed memory is reused under a kernel that still writes it.  Released by sweep().
  std::vector<Entry> held_after_error_;
  // Set once by set_comm() and follow(), before calls are made; read by the
  // watchdog thread.
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<nvlink::Progress> progress_;
  std::function<std::chrono::milliseconds()> progress_timeout_;
  uint64_t last_done_ = 0;  // watchdog thread only
  bool fault_handled_ = false;  // watchdog thread only
  // The stall handled last (watchdog thread only): the progress it was on and
  // its done count.  Another followed progress, or progress, is a new stall.
  const nvlink::Progress* stalled_progress_ = nullptr;
  uint64_t stalled_done_ = 0;
  std::chrono::steady_clock::time_point since_;  // when last_done_ was seen to change
  std::atomic<bool> stop_{false};
  std::atomic<bool> winding_down_{false};
  std::atomic<bool> timeouts_to_wait_{false};
  std::atomic<uint64_t> beat_{0};       // one more every loop (heartbeat.h)
  std::atomic<int64_t> stall_ms_{0};
  std::thread thread_;
};

} // namespace nccl_core
