// One group's failure handling behind one interface: the only door into
// csrc/failures from csrc/backend (tests/cpu/test_layering.py checks; the
// types the backend hands on, the error policy, the watchdog, the NaN watch
// and the strict NaN check, come through this header).  It owns the flight
// recorder, the watchdog, the desync report, the cross-rank call check, the
// NaN watch and the ephemeral timeouts, and keeps the group's error (the
// first one wins).  The backend records each op here (recorder, watchdog)
// and asks here whether the group may still run calls; everything else
// happens on the watchdog's thread.  Timeouts are decided by
// OpState::expired alone.  (The tests' hooks in python/failure_checks.cpp
// reach the desync analysis and the call check directly.)
#pragma once

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "op/abort_hooks.h"
#include "failures/ephemeral_timeout.h"
#include "failures/error_policy.h"
#include "failures/flight_recorder.h"
#include "failures/nan_watch.h"
#include "failures/watchdog.h"
#include "op/group_info.h"

namespace nccl_core {

class CallCheck;
class Communicator;
class DesyncReporter;
class OpState;

class GroupFailures {
 public:
  // What the group's options ask of the machinery (backend/options.h).
  struct Settings {
    std::chrono::milliseconds watchdog_interval;
    ErrorPolicy policy;
    std::chrono::milliseconds heartbeat_timeout;
    std::chrono::milliseconds unraised_error_grace;
    std::chrono::milliseconds desync_report_wait;
    std::chrono::milliseconds call_check_interval;  // 0: no call check
    bool nan_watch = false;  // the NaN check without a host wait
  };

  // `trace_buffer_size`: flight-recorder entries (0: no desync report).
  // `abort_hooks`: the program's, which outlive one communicator's failures
  // (a reconfigured group keeps them); the watchdog runs them before a
  // failure aborts or ends the process, `info`'s before_abort before an
  // abort in a program thread.
  GroupFailures(std::shared_ptr<GroupInfo> info, size_t trace_buffer_size,
                std::shared_ptr<AbortHooks> abort_hooks);
  ~GroupFailures();
  GroupFailures(const GroupFailures&) = delete;
  GroupFailures& operator=(const GroupFailures&) = delete;

  // Once the group's communicator exists: the watchdog starts on it, with the
  // desync report and the call check over `store` where the recorder is on
  // and the group has peers.  `on_done`: an op finished without error.
  void start(const Settings& settings, const c10::intrusive_ptr<c10d::Store>& store,
             const std::string& tag, int rank, int size, std::shared_ptr<Communicator> comm,
             std::function<void(OpState&)> on_done);
  bool started() const { return watchdog_ != nullptr; }

  FlightRecorder& recorder() { return *recorder_; }
  // Null before start() (and when the check waits on the host or is off).
  const std::shared_ptr<NanWatch>& nan_watch() const { return nan_watch_; }
  EphemeralTimeouts& ephemeral() { return ephemeral_; }
  // Null before start().
  Watchdog* watchdog() const { return watchdog_.get(); }
  size_t pending() const { return watchdog_ ? watchdog_->pending() : 0; }
  // Tests: the watchdog sleeps `pause` before its next sweep.
  void stall_watchdog(std::chrono::milliseconds pause);
  // The flight recorder's lines, oldest first (tests, debugging).
  std::vector<std::string> recorded_ops() const;

  // The group's error: the first recorded wins.
  void record_error(const std::string& msg, bool from_watchdog = false);
  bool failed() const { return failed_.load(); }
  std::string error_message() const;  // "" while the group has not failed
  c10d::ErrorType error_type() const;
  // A DistBackendError naming the group's error, if it failed (and marks it
  // raised: error policy 2 aborts the communicator here).
  void raise_if_failed() const;

  // abort(): pending ops fail, then the watchdog stops.
  void fail_pending(const std::string& msg, Watchdog::Release release);
  void stop_watchdog();
  // destroy_process_group(), after the last op ran: a NaN found since the
  // watchdog's last look becomes the group's error; the watch stops.
  void finish_nan_watch();
  // destroy_process_group(): the desync report's final answer.
  void publish_final();
  // destroy_process_group(): an error the watchdog found that nothing raised
  // yet, as a DistBackendError, so it never passes in silence.
  void raise_unraised();

 private:
  std::string explain_timeout(uint64_t at);

  std::shared_ptr<GroupInfo> info_;
  std::unique_ptr<FlightRecorder> recorder_;
  std::unique_ptr<DesyncReporter> desync_;
  std::unique_ptr<CallCheck> call_check_;  // after desync_: reads recorder_ too
  std::shared_ptr<NanWatch> nan_watch_;    // works share it, for wait()
  std::shared_ptr<AbortHooks> abort_hooks_;  // the watchdog's thread runs them
  std::unique_ptr<Watchdog> watchdog_;     // last: its thread reads the above
  EphemeralTimeouts ephemeral_;
  mutable std::mutex error_mutex_;
  std::string error_;
  std::atomic<bool> failed_{false};
  bool timed_out_ = false;
  bool watchdog_error_ = false;  // error_ came from the watchdog, not abort()/shutdown()
};

}  // namespace nccl_core
