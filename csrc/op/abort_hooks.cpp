#include "op/abort_hooks.h"

#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include "op/errors.h"

namespace nccl_core {

void AbortHooks::add(int64_t id, Hook hook) {
  NCCL_CORE_CHECK_VALUE(hook != nullptr, "nccl_core: abort hook ", id, " is empty");
  std::lock_guard<std::mutex> lock(mutex_);
  hooks_[id] = std::move(hook);
}

void AbortHooks::remove(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  NCCL_CORE_CHECK_VALUE(hooks_.erase(id) == 1, "nccl_core: no abort hook is registered as ", id);
}

void AbortHooks::run_once(const char* why) {
  // Held across the calls: a concurrent abort (the thread that ends the
  // process, say) waits here until the capture is done.
  std::lock_guard<std::mutex> lock(mutex_);
  if (ran_) {
    return;
  }
  ran_ = true;
  for (auto& [id, hook] : hooks_) {
    try {
      hook();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[nccl_core] abort hook %lld (%s) raised: %s\n",
                   static_cast<long long>(id), why, e.what());
    } catch (...) {
      std::fprintf(stderr, "[nccl_core] abort hook %lld (%s) raised\n",
                   static_cast<long long>(id), why);
    }
  }
}

void AbortHooks::rearm() {
  std::lock_guard<std::mutex> lock(mutex_);
  ran_ = false;
}

}  // namespace nccl_core
