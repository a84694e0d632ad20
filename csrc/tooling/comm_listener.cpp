#include "tooling/comm_listener.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>

namespace nccl_core::comm_listener {

namespace {

std::mutex& listener_mutex() {
  static auto* m = new std::mutex();  // leaked: notices may come at exit
  return *m;
}

std::shared_ptr<Listener>& current() {
  static auto* l = new std::shared_ptr<Listener>();
  return *l;
}

std::atomic<bool> any{false};

}  // namespace

void install(Listener listener) {
  std::lock_guard<std::mutex> lock(listener_mutex());
  current() = listener ? std::make_shared<Listener>(std::move(listener)) : nullptr;
  any.store(current() != nullptr);
}

bool installed() {
  return any.load();
}

void notify(const Notice& notice) noexcept {
  if (!any.load()) {
    return;
  }
  std::shared_ptr<Listener> l;
  {
    std::lock_guard<std::mutex> lock(listener_mutex());
    l = current();
  }
  if (!l) {
    return;
  }
  try {
    (*l)(notice);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[nccl_core] warning: communicator listener failed for group %s: %s\n",
                 notice.group.c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "[nccl_core] warning: communicator listener failed for group %s\n",
                 notice.group.c_str());
  }
}

}  // namespace nccl_core::comm_listener
