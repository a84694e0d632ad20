#include "tooling/completion_hooks.h"

#include <c10/util/Exception.h>

#include "op/errors.h"
#include "op/op_state.h"

namespace nccl_core {

namespace {
// How long stop() lets queued Python hooks run before leaving them to the
// thread (which then ends on its own).
constexpr std::chrono::seconds kDrainLimit{5};
}  // namespace

CompletionHooks::~CompletionHooks() {
  stop();
}

void CompletionHooks::update_active() {
  active_.store(!stopped_ && (queue_ != nullptr || !keyed_.empty()), std::memory_order_release);
}

void CompletionHooks::set_on_completion(OnCompletion hook) {
  NCCL_CORE_CHECK_VALUE(hook != nullptr, "nccl_core: the on-completion hook is None");
  std::lock_guard<std::mutex> lock(mutex_);
  NCCL_CORE_CHECK_STATE(queue_ == nullptr,
                        "nccl_core: an on-completion hook is already registered on this group");
  NCCL_CORE_CHECK_STATE(!stopped_, "nccl_core: the group is shut down");
  queue_ = std::make_shared<Queue>();
  queue_->hook = std::move(hook);
  thread_ = std::thread(&CompletionHooks::run, queue_);
  update_active();
}

void CompletionHooks::add(int64_t id, Keyed hook) {
  NCCL_CORE_CHECK_VALUE(hook != nullptr, "nccl_core: completion hook ", id, " is empty");
  std::lock_guard<std::mutex> lock(mutex_);
  NCCL_CORE_CHECK_VALUE(keyed_.count(id) == 0, "nccl_core: completion hook id ", id,
                        " is already registered");
  keyed_.emplace(id, std::move(hook));
  update_active();
}

void CompletionHooks::remove(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  NCCL_CORE_CHECK_VALUE(keyed_.erase(id) == 1, "nccl_core: no completion hook with id ", id);
  update_active();
}

void CompletionHooks::finished(OpState& op) {
  if (!active()) {
    return;
  }
  auto info = op.info(std::chrono::steady_clock::now());
  std::map<int64_t, Keyed> keyed;
  std::shared_ptr<Queue> q;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {
      return;
    }
    keyed = keyed_;  // a hook may unregister itself
    q = queue_;
  }
  if (q) {
    std::lock_guard<std::mutex> lock(q->mutex);
    q->items.push_back(info);
    q->cv.notify_all();
  }
  std::optional<float> ms;
  if (op.timer) {
    ms = info->activeDuration.count() * 1000.0f;
  }
  for (auto& [id, hook] : keyed) {
    try {
      hook(op.completion_key, ms);
    } catch (const std::exception& e) {
      TORCH_WARN("nccl_core: completion hook ", id, " raised: ", e.what());
    }
  }
}

void CompletionHooks::run(std::shared_ptr<Queue> q) {
  std::unique_lock<std::mutex> lock(q->mutex);
  for (;;) {
    q->cv.wait(lock, [&] { return q->stopping || !q->items.empty(); });
    if (q->items.empty()) {
      break;  // stopping, and everything queued has run
    }
    auto info = std::move(q->items.front());
    q->items.pop_front();
    lock.unlock();
    try {
      q->hook(info);
    } catch (const std::exception& e) {
      // A hook's error must not end the thread (later ops still report).
      TORCH_WARN("nccl_core: the on-completion hook raised: ", e.what());
    }
    lock.lock();
  }
  q->finished = true;
  q->cv.notify_all();
}

void CompletionHooks::stop() {
  std::shared_ptr<Queue> q;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    update_active();
    q = queue_;
  }
  if (!q) {
    return;
  }
  bool finished = false;
  {
    std::unique_lock<std::mutex> lock(q->mutex);
    q->stopping = true;
    q->cv.notify_all();
    finished = q->cv.wait_for(lock, kDrainLimit, [&] { return q->finished; });
  }
  if (thread_.joinable()) {
    if (finished && thread_.get_id() != std::this_thread::get_id()) {
      thread_.join();
    } else {
      thread_.detach();  // it owns its queue and ends after the last hook
    }
  }
}

}  // namespace nccl_core
