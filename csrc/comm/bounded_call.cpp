#include "comm/bounded_call.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "nccl/api.h"

namespace nccl_core {

namespace {

using Clock = std::chrono::steady_clock;

// One thread for the whole process, started on first use and never joined
// (it may outlive static destruction; it owns only heap state).  Calls live
// in reused slots, so registering one allocates nothing in steady state.
//
// The communicator it aborts may lose its other owners meanwhile (the call
// raised, the program ended): the monitor's reference is then the last, and
// destroying a communicator frees CUDA memory.  Once exit() has begun, the
// CUDA caching allocator may already be gone (freeing then throws, in a
// destructor: std::terminate), so from then on the monitor neither aborts
// nor destroys; exit() waits for an abort or destruction under way.
class Monitor {
 public:
  static Monitor& get() {
    static Monitor* m = [] {
      auto* made = new Monitor();
      std::atexit([] { Monitor::get().at_exit(); });
      return made;
    }();
    return *m;
  }

  size_t add(std::weak_ptr<Abortable> comm, Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_) {
      started_ = true;
      std::thread([this] { run(); }).detach();
    }
    size_t slot;
    if (free_.empty()) {
      slot = slots_.size();
      slots_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    slots_[slot] = Slot{std::move(comm), deadline, true, false};
    return slot;
  }

  // Frees the slot; returns whether the call expired (comm aborted).
  bool remove(size_t slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    bool expired = slots_[slot].expired;
    slots_[slot] = Slot{};
    free_.push_back(slot);
    return expired;
  }

  bool expired(size_t slot) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return slots_[slot].expired;
  }

 private:
  struct Slot {
    std::weak_ptr<Abortable> comm;
    Clock::time_point deadline;
    bool active = false;
    bool expired = false;
  };

  void run() {
    std::vector<std::shared_ptr<Abortable>> victims;
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto now = Clock::now();
        for (auto& s : slots_) {
          if (!s.active || s.expired || now < s.deadline) {
            continue;
          }
          s.expired = true;
          if (auto c = s.comm.lock()) {
            victims.push_back(std::move(c));
          }
        }
      }
      if (victims.empty()) {
        continue;
      }
      // Outside the lock: abort makes NCCL return from the stuck call.
      std::lock_guard<std::mutex> releasing(release_mutex_);
      if (exiting_) {
        kept_.insert(kept_.end(), victims.begin(), victims.end());  // never destroyed
      } else {
        for (auto& c : victims) {
          c->abort();
        }
      }
      victims.clear();  // may destroy a communicator: exit() waits for it
    }
  }

  void at_exit() {
    std::lock_guard<std::mutex> releasing(release_mutex_);
    exiting_ = true;
  }

  mutable std::mutex mutex_;
  std::mutex release_mutex_;  // held while aborting or releasing victims
  bool exiting_ = false;      // under release_mutex_
  std::vector<std::shared_ptr<Abortable>> kept_;  // under release_mutex_
  bool started_ = false;
  std::vector<Slot> slots_;
  std::vector<size_t> free_;
};

} // namespace

BoundedCall::BoundedCall(std::weak_ptr<Abortable> target, bool blocking,
                   std::chrono::milliseconds timeout, const char* what)
    : what_(what) {
  if (!blocking) {
    return;
  }
  timeout_ms_ = timeout.count();
  slot_ = Monitor::get().add(std::move(target), Clock::now() + timeout);
  registered_ = true;
}

BoundedCall::~BoundedCall() {
  if (registered_) {
    Monitor::get().remove(slot_);
  }
}

bool BoundedCall::expired() const {
  return registered_ && Monitor::get().expired(slot_);
}

void BoundedCall::rethrow_if_expired() const {
  if (expired()) {
    throw NcclError(ncclInProgress,
                    std::string(what_) + " timed out: it did not return within " +
                        std::to_string(timeout_ms_) +
                        " ms (a rank may be missing or stuck); communicator aborted");
  }
}

} // namespace nccl_core
