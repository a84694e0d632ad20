// How the nccl_core backend's group fails and ends: its health and error
// (check_healthy, getError), abort (the abort hooks, then the communicator)
// and shutdown, which drains the pending work first (backend.h).
#include "backend/backend.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "failures/group_failures.h"
#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/seam.h"
#include "op/errors.h"
#include "registration/segment_registry.h"
#include "tooling/comm_listener.h"

namespace nccl_core {

void Backend::check_healthy() const {
  if (comm_ && !comm_->is_live() && !failures_->failed()) {
    C10_THROW_ERROR(DistBackendError,
                    "nccl_core: the communicator has been aborted or destroyed");
  }
  failures_->raise_if_failed();
}

c10d::ErrorType Backend::getError() {
  return failures_->error_type();
}

void Backend::abort() {
  // Later calls raise at once, while the program's abort hooks (which may
  // take seconds: torch's flight-recorder dump) run before anything is torn down.
  failures_->record_error("process group aborted");
  abort_hooks_->run_once("abort()");
  abort_communicator();
}

void Backend::abort_communicator() {
  // Nothing registers on the communicator any more, and torch's symmetric
  // memory lets it go, before NCCL frees it.
  retire_registrations();
  // Pending works must fail, not complete: the aborted kernels exit, and a
  // waiter polling their end events would otherwise see success.
  failures_->fail_pending("nccl_core: process group aborted", Watchdog::Release::kAbortNow);
  if (comm_) {
    comm_->abort();
  }
  failures_->stop_watchdog();
  failures_->record_error("process group aborted");
}

void Backend::revoke() {
  Communicator& c = live_comm("revoke");
  nccl().require("ncclCommRevoke", "revoke", newer::kRevokeVersion);
  // The revoked kernels exit without finishing, so the pending works fail
  // before NCCL is told: a watchdog sweep after the revoke would take their
  // end events for success.  The communicator stays for
  // destroy_process_group(), which aborts a failed group's.
  failures_->fail_pending("nccl_core: process group revoked", Watchdog::Release::kKeep);
  failures_->record_error("process group revoked");
  c.revoke(0);
}

void Backend::shutdown() {
  // An error the watchdog found is raised below: the program is here, in
  // destroy_process_group(), so it no longer counts as unraised, and a
  // communicator that failed is aborted rather than finalized (finalize
  // would wait for the kernels that failed).
  if (failures_->failed() && failures_->started()) {
    failures_->stop_watchdog();
    if (comm_ && comm_->is_live()) {
      comm_->abort();
    }
  }
  // From here the program is leaving: the watchdog retires finished work but
  // raises nothing; the waits below are bounded and end in an abort.
  if (failures_->started()) {
    failures_->watchdog()->wind_down();
  }
  retire_registrations();
  failures_->publish_final();
  if (fast_ && stream_ && comm_ && comm_->is_live()) {
    // Fast-path and push kernels reach the peers' memory through windows
    // that finalize deregisters: let them finish first, on our stream and on
    // the callers' streams where plain calls ran.  A kernel still waiting after
    // the timeout waits for a rank that is gone; aborting ends it.
    auto deadline = std::chrono::steady_clock::now() + options_->timeout;
    auto* watchdog = failures_->watchdog();
    while (cudaStreamQuery(stream_->stream()) == cudaErrorNotReady ||
           (watchdog && !watchdog->drained())) {
      if (std::chrono::steady_clock::now() > deadline) {
        comm_->abort();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (comm_ && comm_->is_live()) {
    try {
      // Finalize flushes everything enqueued (bounded by the timeout); only
      // then may the watchdog drop the tensors that work kept alive.
      comm_->finalize();
    } catch (...) {
      comm_->abort();
    }
  }
  // Every scan ran by now: a NaN found since the last look is the group's
  // error, raised below.
  failures_->finish_nan_watch();
  failures_->stop_watchdog();
  hooks_->stop();  // the hooks of ops that finished have run (bounded)
  failures_->record_error("process group has been shut down");
  // An error the watchdog found that nothing raised yet reaches the program
  // here, at destroy_process_group(), instead of passing in silence.
  failures_->raise_unraised();
}

void Backend::destroy_redops() {
  if (redops_.empty()) {
    return;
  }
  ncclComm_t comm = comm_->get();
  for (ncclRedOp_t op : redops_) {
    NCCL_CORE_CHECK(comm, nccl().RedOpDestroy(op, comm));
  }
  redops_.clear();
}

} // namespace nccl_core
