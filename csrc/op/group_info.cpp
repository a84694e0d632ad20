#include "op/group_info.h"

#include "comm/communicator.h"

namespace nccl_core {

void GroupInfo::abort_when_raised(const std::shared_ptr<Communicator>& comm) {
  if (!comm) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  deferred_.push_back(comm);
}

bool GroupInfo::mark_raised() {
  bool before = raised_.exchange(true);
  std::vector<std::weak_ptr<Communicator>> due;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    due.swap(deferred_);
  }
  if (!due.empty() && before_abort) {
    before_abort();  // the program's abort hooks, once: before the communicator goes
  }
  for (auto& weak : due) {
    if (auto comm = weak.lock()) {
      comm->abort();  // idempotent; ends the kernels that waited for peers
    }
  }
  return before;
}

}  // namespace nccl_core
