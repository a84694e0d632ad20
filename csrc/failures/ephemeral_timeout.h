// Ephemeral timeout extensions (`backend._add_ephemeral_timeout(delta)`,
// torch's `_add_ephemeral_timeout_for_all_pgs`, Inductor around long
// compiles): `delta` is added to the timeout of every op issued after the
// call until the first of them completes on the GPU; ops issued before keep
// theirs.  Extensions add up and each ends on its own.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

namespace nccl_core {

class OpState;

class EphemeralTimeouts {
 public:
  // Raises on a negative `delta`.
  void add(std::chrono::milliseconds delta);
  // The extra time for an op being issued now.  `first` becomes the op that
  // ends the extensions added since the last op.
  std::chrono::milliseconds extension_for(const std::shared_ptr<OpState>& first);
  // The extensions in force (tests).
  std::chrono::milliseconds current();
  // One atomic load: whether any extension may be in force.  While one is,
  // every op is watched by the watchdog, which keeps it until it completes.
  bool any() const { return any_.load(std::memory_order_acquire); }

 private:
  struct Extension {
    std::chrono::milliseconds delta;
    std::weak_ptr<OpState> ends_with;  // null until an op is issued
    bool bound = false;
  };
  void expire();  // under mutex_: drops extensions whose op has completed

  std::mutex mutex_;
  std::vector<Extension> live_;
  std::atomic<bool> any_{false};
};

}  // namespace nccl_core
