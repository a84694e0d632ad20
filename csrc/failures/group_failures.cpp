#include "failures/group_failures.h"

#include <c10/util/Exception.h>

#include "failures/call_check.h"
#include "failures/desync.h"
#include "op/errors.h"

namespace nccl_core {

GroupFailures::GroupFailures(std::shared_ptr<GroupInfo> info, size_t trace_buffer_size,
                             std::shared_ptr<AbortHooks> abort_hooks)
    : info_(std::move(info)),
      recorder_(std::make_unique<FlightRecorder>(trace_buffer_size)),
      abort_hooks_(std::move(abort_hooks)) {
  info_->before_abort = [hooks = abort_hooks_] { hooks->run_once("an abort in a program thread"); };
}

GroupFailures::~GroupFailures() {
  // The watchdog's thread reads the reports and the recorder: it goes first.
  watchdog_.reset();
}

void GroupFailures::start(const Settings& settings, const c10::intrusive_ptr<c10d::Store>& store,
                          const std::string& tag, int rank, int size,
                          std::shared_ptr<Communicator> comm,
                          std::function<void(OpState&)> on_done) {
  if (recorder_->capacity() > 0 && size > 1 && store) {
    desync_ = std::make_unique<DesyncReporter>(store, tag, rank, size, *recorder_,
                                               settings.desync_report_wait);
    if (settings.call_check_interval.count() > 0) {
      call_check_ = std::make_unique<CallCheck>(store, tag, rank, size, *recorder_,
                                                settings.call_check_interval);
    }
  }
  if (settings.nan_watch) {
    nan_watch_ = std::make_shared<NanWatch>();
  }
  Watchdog::Hooks hooks;
  hooks.on_error = [this](const std::string& msg) { record_error(msg, true); };
  hooks.explain = [this](uint64_t at) { return explain_timeout(at); };
  hooks.tick = [this] {
    if (nan_watch_) {
      nan_watch_->watchdog_look();  // to the watchdog's report() (set below)
    }
    if (desync_) {
      desync_->tick();
    }
    return call_check_ ? call_check_->tick() : std::string();
  };
  hooks.on_done = std::move(on_done);
  hooks.before_abort = [this] { abort_hooks_->run_once("the watchdog's abort"); };
  watchdog_ = std::make_unique<Watchdog>(settings.watchdog_interval, settings.policy,
                                         std::move(hooks), settings.heartbeat_timeout, info_,
                                         settings.unraised_error_grace);
  watchdog_->set_comm(std::move(comm));
  if (nan_watch_) {
    nan_watch_->set_handler([this](const std::string& msg) { watchdog_->report(msg); });
  }
}

void GroupFailures::stall_watchdog(std::chrono::milliseconds pause) {
  NCCL_CORE_CHECK_VALUE(watchdog_ != nullptr, "nccl_core: the group has no watchdog yet");
  watchdog_->stall_for(pause);
}

std::vector<std::string> GroupFailures::recorded_ops() const {
  std::vector<std::string> out;
  for (const auto& op : recorder_->snapshot()) {
    out.push_back(op.line());
  }
  return out;
}

std::string GroupFailures::explain_timeout(uint64_t at) {
  std::string out = "group " + info_->label;
  if (desync_) {
    return out + ": " + desync_->explain(at);
  }
  for (const auto& op : recorder_->snapshot()) {
    if (at != 0 ? op.seq == at : !op.done) {
      return out + ": waits in seq " + std::to_string(op.seq) + " " + op.describe();
    }
  }
  return out;
}

void GroupFailures::record_error(const std::string& msg, bool from_watchdog) {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (!failed_.load()) {
    error_ = msg;
    timed_out_ = msg.find("timed out") != std::string::npos ||
                 msg.find("collective operation timeout") != std::string::npos;
    watchdog_error_ = from_watchdog;
    failed_.store(true);
  }
}

std::string GroupFailures::error_message() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return failed_.load() ? error_ : std::string();
}

c10d::ErrorType GroupFailures::error_type() const {
  if (!failed_.load()) {
    return c10d::ErrorType::SUCCESS;
  }
  std::lock_guard<std::mutex> lock(error_mutex_);
  return timed_out_ ? c10d::ErrorType::TIMEOUT : c10d::ErrorType::COMM_ERROR;
}

void GroupFailures::raise_if_failed() const {
  if (!failed_.load()) {
    return;
  }
  block_if_tearing_down();
  std::string error = error_message();
  info_->mark_raised();  // policy 2 aborts here, in the raising thread
  C10_THROW_ERROR(DistBackendError, "nccl_core: this group failed earlier: " + error);
}

void GroupFailures::fail_pending(const std::string& msg, Watchdog::Release release) {
  if (nan_watch_) {
    nan_watch_->set_handler(nullptr);  // works may outlive the watchdog
  }
  if (watchdog_) {
    watchdog_->fail_all(msg, release);
  }
}

void GroupFailures::stop_watchdog() {
  if (watchdog_) {
    watchdog_->stop();
  }
}

void GroupFailures::finish_nan_watch() {
  if (nan_watch_) {
    nan_watch_->handle_if_found();
    nan_watch_->set_handler(nullptr);
  }
}

void GroupFailures::publish_final() {
  if (desync_) {
    desync_->publish_final();  // peers that time out later learn we left
  }
}

void GroupFailures::raise_unraised() {
  std::string unreported;
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (watchdog_error_ && !info_->mark_raised()) {
      unreported = error_;
    }
  }
  if (!unreported.empty()) {
    C10_THROW_ERROR(DistBackendError, "nccl_core: an error of this group was never raised "
                                      "before destroy_process_group: " + unreported);
  }
}

}  // namespace nccl_core
