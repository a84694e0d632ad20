// What the watchdog does with a failure (watchdog.h): handle() reports it
// once, applies the group's error policy (tear down, abort, end the process)
// and fails the pending ops; report() takes one found elsewhere (the NaN
// check); fail_all() ends every op it follows.
#include "failures/watchdog.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <unordered_set>

#include "comm/communicator.h"
#include "failures/heartbeat.h"
#include "nccl/api.h"
#include "op/errors.h"
#include "op/op_state.h"
#include "op/tensor_hold.h"

namespace nccl_core {

void Watchdog::handle(const std::string& msg, bool explain, uint64_t at,
                      const std::shared_ptr<Communicator>& comm, bool release) {
  std::lock_guard<std::mutex> handling(handle_mutex_);
  const bool aborts = release && policy_.aborts();
  std::string report =
      msg + (release || policy_.tears_down()
                 ? policy_.outcome()
                 : "; the communicator is kept (it did not fail): the group's later calls "
                   "raise this error");
  if (explain && hooks_.explain) {
    try {
      std::string why = hooks_.explain(at);
      if (!why.empty()) {
        report += "\n" + why;
      }
    } catch (const std::exception& e) {
      report += std::string("\n(desync report failed: ") + e.what() + ")";
    }
  }
  // The program's abort hooks run while the state they capture exists, and
  // may take seconds (torch's flight-recorder dump): the error is the group's
  // before they start, so no program thread goes on as if nothing failed.
  auto run_abort_hooks = [this] {
    if (hooks_.before_abort) {
      hooks_.before_abort();
    }
  };
  if (policy_.tears_down()) {
    // Policies 1 and 3: nothing is aborted first, so no stuck kernel leaves
    // before the process ends (error_policy.h); a program thread that would
    // see the error waits for the end.
    begin_tear_down();
    if (hooks_.on_error) {
      hooks_.on_error(report);
    }
    run_abort_hooks();
    tear_down(report);
  }
  // Policies 0 and 2: the program sees the error; the report is logged now,
  // and the process ends if no program thread raises it in time.
  log_report(report);
  if (policy_.aborts_at_once()) {
    if (hooks_.on_error) {
      hooks_.on_error(report);
    }
    run_abort_hooks();
    fail_all(report, Release::kAbortNow);
    if (comm) {
      comm->abort();
    }
  } else {
    fail_all(report, aborts ? Release::kAbortWhenRaised : Release::kKeep);
    if (aborts && comm && group_) {
      group_->abort_when_raised(comm);  // whose abort runs the hooks first (group_info.h)
    }
    if (aborts) {
      run_abort_hooks();
    }
  }
  if (!unraised_ && !(group_ && group_->raised())) {
    unraised_ = true;
    unraised_since_ = std::chrono::steady_clock::now();
    unraised_report_ = report;
  }
}

void Watchdog::report(const std::string& msg) {
  std::shared_ptr<Communicator> comm;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    comm = comm_;
  }
  handle(msg, false, 0, comm, false);
}

void Watchdog::fail_all(const std::string& msg, Release release) {
  std::vector<Entry> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed.swap(entries_);
  }
  // The backend's error, then the works', then any abort: a caller woken by
  // any of these must already see the group as failed, and aborting lets the
  // kernels exit, which a waiter polling the end event must not take for
  // success.
  if (hooks_.on_error) {
    hooks_.on_error(msg);
  }
  auto err = dist_backend_error(msg);
  for (auto& e : failed) {
    e.op->set_error(err);
  }
  {
    // The error does not stop a kernel: until the GPU has passed the op
    // (an abort ends it), its tensors stay held.
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& e : failed) {
      if (e.hold && !e.op->gpu_done()) {
        held_after_error_.push_back(e);
      }
    }
  }
  for (auto& e : failed) {
    if (!e.comm) {
      continue;
    }
    if (release == Release::kAbortNow) {
      e.comm->abort();
    } else if (release == Release::kAbortWhenRaised && group_) {
      group_->abort_when_raised(e.comm);
    }
  }
}

} // namespace nccl_core
