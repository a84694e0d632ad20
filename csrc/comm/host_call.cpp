#include "comm/host_call.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "comm/communicator.h"
#include "nccl/api.h"

namespace nccl_core {

namespace {

using Clock = std::chrono::steady_clock;

// One thread for the whole process, started on first use and never joined
// (it may outlive static destruction; it owns only heap state).
class Monitor {
 public:
  static Monitor& get() {
    static Monitor* m = new Monitor();
    return *m;
  }

  uint64_t add(std::weak_ptr<Communicator> comm, Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t id = ++next_;
    calls_.emplace(id, Entry{std::move(comm), deadline});
    if (!started_) {
      started_ = true;
      std::thread([this] { run(); }).detach();
    }
    return id;
  }

  // Returns true if the call expired (and its communicator was aborted).
  bool remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.erase(id);
    return expired_.erase(id) > 0;
  }

  bool expired(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return expired_.count(id) > 0;
  }

 private:
  struct Entry {
    std::weak_ptr<Communicator> comm;
    Clock::time_point deadline;
  };

  void run() {
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::vector<std::shared_ptr<Communicator>> victims;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto now = Clock::now();
        for (auto it = calls_.begin(); it != calls_.end();) {
          if (now < it->second.deadline) {
            ++it;
            continue;
          }
          if (auto c = it->second.comm.lock()) {
            victims.push_back(std::move(c));
          }
          expired_.insert(it->first);
          it = calls_.erase(it);
        }
      }
      // Outside the lock: abort makes NCCL return from the stuck call.
      for (auto& c : victims) {
        c->abort();
      }
    }
  }

  mutable std::mutex mutex_;
  bool started_ = false;
  uint64_t next_ = 0;
  std::unordered_map<uint64_t, Entry> calls_;
  std::unordered_set<uint64_t> expired_;
};

} // namespace

HostCall::HostCall(Communicator& comm, const char* what) : what_(what) {
  if (!comm.blocking()) {
    return;
  }
  auto timeout = comm.timeout();
  timeout_ms_ = timeout.count();
  id_ = Monitor::get().add(comm.weak_from_this(), Clock::now() + timeout);
}

HostCall::~HostCall() {
  if (id_ != 0) {
    Monitor::get().remove(id_);
  }
}

bool HostCall::expired() const {
  return id_ != 0 && Monitor::get().expired(id_);
}

void HostCall::rethrow_if_expired() const {
  if (expired()) {
    throw NcclError(ncclInProgress,
                    std::string(what_) + " did not return within " + std::to_string(timeout_ms_) +
                        " ms (a rank may be missing or stuck); communicator aborted");
  }
}

} // namespace nccl_core
