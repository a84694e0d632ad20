// Completion hooks: the watchdog hands every op it sees finish here.
//
// - `ProcessGroup._register_on_completion_hook(fn)` (torch's onCompletion
//   hook, one per group): `fn(WorkInfo)` runs on a thread of this object, so
//   a Python hook (which takes the GIL) never delays the watchdog.
// - torch >= 2.15's `registerCompletionHook(id, hook)`: short C++ hooks keyed
//   by id, run on the watchdog thread, told the op's completion key and its
//   GPU time where timing is on.
// Both fire for ops that finished without error, as backend nccl's do.  Ops
// tracked by their own kernel's report are watched instead while any hook is
// set (launch.h), so none is missed; ops captured in CUDA graphs never fire.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace nccl_core {

class OpState;

class CompletionHooks {
 public:
  using OnCompletion = std::function<void(std::shared_ptr<c10d::WorkInfo>)>;
  // (completion key, GPU milliseconds if timed)
  using Keyed = std::function<void(uint64_t, std::optional<float>)>;

  CompletionHooks() = default;
  ~CompletionHooks();
  CompletionHooks(const CompletionHooks&) = delete;
  CompletionHooks& operator=(const CompletionHooks&) = delete;

  // Raises if one is already set (as backend nccl does) or `hook` is empty.
  void set_on_completion(OnCompletion hook);
  void add(int64_t id, Keyed hook);   // raises on a duplicate id
  void remove(int64_t id);            // raises on an unknown id
  // One atomic load: whether finished ops must be reported.
  bool active() const { return active_.load(std::memory_order_acquire); }
  // The watchdog: `op` finished without error.
  void finished(OpState& op);
  // Lets the queued on-completion calls run (waiting for them at most a few
  // seconds: the caller may hold the GIL that a Python hook needs), then
  // ends the thread (idempotent).  Later ops report nothing.
  void stop();

 private:
  // Shared with the thread, which may outlive this object after a bounded
  // stop (it then finishes the queue on its own).
  struct Queue {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::shared_ptr<c10d::WorkInfo>> items;
    OnCompletion hook;
    bool stopping = false;
    bool finished = false;
  };
  static void run(std::shared_ptr<Queue> q);
  void update_active();  // under mutex_

  mutable std::mutex mutex_;
  std::map<int64_t, Keyed> keyed_;
  std::shared_ptr<Queue> queue_;  // null until an on-completion hook is set
  std::thread thread_;
  bool stopped_ = false;
  std::atomic<bool> active_{false};
};

}  // namespace nccl_core
