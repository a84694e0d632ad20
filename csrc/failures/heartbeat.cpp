#include "failures/heartbeat.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "failures/error_policy.h"

namespace nccl_core::heartbeat {

namespace {

struct Watched {
  const std::atomic<uint64_t>* beat;
  std::chrono::milliseconds limit;
  std::string label;
  uint64_t last;
  std::chrono::steady_clock::time_point since;
};

// Never destroyed: groups may unwatch during static destruction.
class Monitor {
 public:
  static Monitor& get() {
    static Monitor* m = new Monitor();
    return *m;
  }

  void add(const std::atomic<uint64_t>* beat, std::chrono::milliseconds limit,
           const std::string& label) {
    std::lock_guard<std::mutex> lock(mutex_);
    watched_.push_back(Watched{beat, limit, label, beat->load(), std::chrono::steady_clock::now()});
    if (!thread_.joinable()) {
      thread_ = std::thread([this] { run(); });
      thread_.detach();  // lives as long as the process
    }
  }

  void remove(const std::atomic<uint64_t>* beat) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < watched_.size(); ++i) {
      if (watched_[i].beat == beat) {
        watched_.erase(watched_.begin() + static_cast<long>(i));
        return;
      }
    }
  }

 private:
  void run() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      std::lock_guard<std::mutex> lock(mutex_);
      auto now = std::chrono::steady_clock::now();
      for (auto& w : watched_) {
        uint64_t b = w.beat->load(std::memory_order_relaxed);
        if (b != w.last) {
          w.last = b;
          w.since = now;
        } else if (now - w.since > w.limit) {
          tear_down("nccl_core heartbeat monitor: the watchdog of group " + w.label +
                    " made no progress for " +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - w.since).count()) +
                    " s (stuck in a CUDA or NCCL call); ending the process so that the job can be "
                    "restarted (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, TORCH_NCCL_ENABLE_MONITORING=0 "
                    "turns this off)");
        }
      }
    }
  }

  std::mutex mutex_;
  std::vector<Watched> watched_;
  std::thread thread_;
};

}  // namespace

void watch(const std::atomic<uint64_t>* beat, std::chrono::milliseconds limit,
           const std::string& label) {
  if (limit.count() > 0) {
    Monitor::get().add(beat, limit, label);
  }
}

void unwatch(const std::atomic<uint64_t>* beat) { Monitor::get().remove(beat); }

}  // namespace nccl_core::heartbeat
