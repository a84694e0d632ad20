// What torch's NCCL users reach for beyond the collectives: op timing,
// completion and abort hooks, pending-work waits, collective time estimates, memory
// statistics, split counts, sequence numbers, and the profiler's group description.
#include <algorithm>
#include <thread>

#include "backend/backend.h"
#include "op/errors.h"
#include "failures/group_failures.h"
#include "nccl/api.h"
#include "nccl/seam.h"

namespace nccl_core {

void Backend::enableCollectivesTiming() {
  timing_.store(true);
}

void Backend::registerOnCompletionHook(
    std::function<void(std::shared_ptr<c10d::WorkInfo>)>&& hook) {
  hooks_->set_on_completion(std::move(hook));
}

#if NCCL_CORE_TORCH >= 215
void Backend::registerCompletionHook(int64_t hook_id, c10d::CompletionHook hook) {
  NCCL_CORE_CHECK_VALUE(hook != nullptr, "nccl_core: completion hook ", hook_id, " is empty");
  hooks_->add(hook_id, [hook = std::move(hook)](uint64_t key, std::optional<float> ms) {
    c10d::CompletionHookArgs args;
    args.completionKey = key;
    args.duration_ms = ms;
    hook(args);
  });
}

void Backend::unregisterCompletionHook(int64_t hook_id) {
  hooks_->remove(hook_id);
}

void Backend::registerAbortHook(int64_t hook_id, c10d::AbortHook hook) {
  abort_hooks_->add(hook_id, std::move(hook));
}

void Backend::unregisterAbortHook(int64_t hook_id) {
  abort_hooks_->remove(hook_id);
}
#endif

void Backend::waitForPendingWorks() {
  check_healthy();
  if (!failures_->started()) {
    return;  // nothing was ever issued
  }
  // Polls like Work::wait on the host; an op that never finishes fails by
  // the watchdog's timeout, which ends the wait with its error.
  auto pause = std::chrono::microseconds(10);
  while (!failures_->watchdog()->drained()) {
    check_healthy();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  check_healthy();
}

void Backend::startTimeEstimate() {
  NCCL_CORE_CHECK_STATE(!estimating_, "nccl_core: startTimeEstimate inside a time estimate");
  startCoalescing();  // NCCL's group, opened once the communicator exists
  estimating_ = true;
}

float Backend::endTimeEstimate() {
  NCCL_CORE_CHECK_STATE(estimating_, "nccl_core: endTimeEstimate without startTimeEstimate");
  estimating_ = false;
  coalescing_ = false;
  bool was_open = group_open_;
  group_open_ = false;
  c10::intrusive_ptr<Work> work = std::move(coalesced_);
  coalesced_.reset();
  if (work) {
    work->epilogue.clear();  // nothing ran: nothing to copy out
    work->release_tensors();
  }
  if (!was_open) {
    destroy_redops();
    return 0.0f;  // no op reached NCCL (none issued, or a one-rank group)
  }
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  NCCL_CORE_CHECK(comm_ ? comm_->get() : nullptr, nccl().GroupSimulateEnd(&sim));
  destroy_redops();
  // NCCL leaves its initial -1 when the group held no NCCL call (a one-rank
  // group, where nccl_core reduces alone): nothing to wait for.
  return sim.estimatedTime < 0 ? 0.0f : sim.estimatedTime;
}

Communicator& Backend::live_comm(const char* what) const {
  NCCL_CORE_CHECK_STATE(comm_ != nullptr, "nccl_core: ", what,
                        ": the group has no communicator yet (pass device_id= to "
                        "init_process_group, or run a collective first)");
  return *comm_;
}

#if NCCL_CORE_TORCH >= 215
std::unordered_map<std::string, uint64_t> Backend::getMemoryStats() {
  return live_comm("memory_stats").mem_stats();
}
#endif

profiling::GroupDescription Backend::describe() const {
  profiling::GroupDescription d;
  d.name = getGroupUid().empty() ? options_->group_name : getGroupUid();
  d.desc = getGroupDesc();
  d.rank = rank_;
  d.size = size_;
  for (uint64_t r : options_->global_ranks_in_group) {
    d.global_ranks.push_back(static_cast<int64_t>(r));
  }
  return d;
}

uint64_t Backend::getSequenceNumberForGroup() {
  // The collectives, as backend nccl counts: ranks compare this number
  // (TORCH_DISTRIBUTED_DEBUG=DETAIL's checks), and send/recv differ between
  // ranks (op/op_kind.h).
  return collectives_.load();
}

void Backend::setSequenceNumberForGroup() {
  // Sequence numbers start at 0 on every rank; nothing to agree on.
}

}  // namespace nccl_core
