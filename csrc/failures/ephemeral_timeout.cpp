#include "failures/ephemeral_timeout.h"

#include <algorithm>

#include "op/errors.h"
#include "op/op_state.h"

namespace nccl_core {

void EphemeralTimeouts::add(std::chrono::milliseconds delta) {
  NCCL_CORE_CHECK_VALUE(delta.count() >= 0, "nccl_core: _add_ephemeral_timeout: negative "
                        "timeout ", delta.count(), " ms");
  std::lock_guard<std::mutex> lock(mutex_);
  live_.push_back(Extension{delta, {}, false});
  any_.store(true, std::memory_order_release);
}

void EphemeralTimeouts::expire() {
  live_.erase(std::remove_if(live_.begin(), live_.end(),
                             [](Extension& e) {
                               if (!e.bound) {
                                 return false;
                               }
                               auto op = e.ends_with.lock();
                               // Gone: nothing tracks it any more (the watchdog
                               // retired it, or the program and the ring let go).
                               return !op || op->completed();
                             }),
              live_.end());
  any_.store(!live_.empty(), std::memory_order_release);
}

std::chrono::milliseconds EphemeralTimeouts::extension_for(
    const std::shared_ptr<OpState>& first) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (live_.empty()) {
    return std::chrono::milliseconds(0);
  }
  expire();
  std::chrono::milliseconds total(0);
  for (auto& e : live_) {
    if (!e.bound) {
      e.ends_with = first;
      e.bound = true;
    }
    total += e.delta;
  }
  return total;
}

std::chrono::milliseconds EphemeralTimeouts::current() {
  std::lock_guard<std::mutex> lock(mutex_);
  expire();
  std::chrono::milliseconds total(0);
  for (const auto& e : live_) {
    total += e.delta;
  }
  return total;
}

}  // namespace nccl_core
