// The communicator's list of its resources: Communicator members, beside the
// Resource they manage (resources.h), so that the communicator itself needs
// nothing of that file.
#include "comm/communicator.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/resources.h"

namespace nccl_core {


void Communicator::track(std::shared_ptr<Resource> resource) {
  std::lock_guard<std::mutex> lock(resources_mutex_);
  resources_.push_back(std::move(resource));
}

void Communicator::untrack(const Resource* resource) {
  std::lock_guard<std::mutex> lock(resources_mutex_);
  for (auto it = resources_.begin(); it != resources_.end(); ++it) {
    if (it->get() == resource) {
      resources_.erase(it);
      return;
    }
  }
}

std::shared_ptr<Resource> Communicator::attachment(const std::string& key) const {
  std::lock_guard<std::mutex> lock(resources_mutex_);
  for (const auto& [k, weak] : attachments_) {
    if (k == key) {
      auto r = weak.lock();
      return r && r->is_valid() ? r : nullptr;
    }
  }
  return nullptr;
}

std::shared_ptr<void> Communicator::extension(
    const std::string& key, const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard<std::mutex> lock(resources_mutex_);
  auto& slot = extensions_[key];
  if (!slot) {
    slot = make();
  }
  return slot;
}

std::shared_ptr<void> Communicator::extension(const std::string& key) const {
  std::lock_guard<std::mutex> lock(resources_mutex_);
  auto it = extensions_.find(key);
  return it == extensions_.end() ? nullptr : it->second;
}

void Communicator::attach(const std::string& key, std::shared_ptr<Resource> resource) {
  {
    std::lock_guard<std::mutex> lock(resources_mutex_);
    bool replaced = false;
    for (auto& [k, weak] : attachments_) {
      if (k == key) {
        weak = resource;
        replaced = true;
      }
    }
    if (!replaced) {
      attachments_.emplace_back(key, resource);
    }
  }
  track(std::move(resource));
}

size_t Communicator::resource_count() const {
  std::lock_guard<std::mutex> lock(resources_mutex_);
  return resources_.size();
}

std::vector<std::shared_ptr<Resource>> Communicator::resources() const {
  std::lock_guard<std::mutex> lock(resources_mutex_);
  return resources_;
}

void Communicator::close_all_resources() noexcept {
  std::vector<std::function<void()>> drains;
  {
    std::lock_guard<std::mutex> lock(before_abort_mutex_);
    drains = before_close_;
  }
  if (is_live()) {
    for (auto& d : drains) {
      try {
        d();
      } catch (...) {
      }
    }
  }
  std::vector<std::shared_ptr<Resource>> all;
  {
    std::lock_guard<std::mutex> lock(resources_mutex_);
    all.swap(resources_);
  }
  if (!all.empty() && is_live()) {
    quiesce();  // queued kernels may still use windows and buffers
  }
  // Newest first: a resource may depend on one registered before it.
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      (*it)->close();
    } catch (...) {
      (*it)->forget(); // best effort: still mark it closed
    }
  }
}

void Communicator::forget_all_resources() noexcept {
  std::vector<std::shared_ptr<Resource>> all;
  {
    std::lock_guard<std::mutex> lock(resources_mutex_);
    all.swap(resources_);
  }
  for (auto& r : all) {
    r->forget();
  }
}

} // namespace nccl_core
