// New groups from others: split (new_group, split_group), the members'
// split source, the non-members' no-color split, and shrink
// (dist.shrink_group), each a child Backend that adopts the communicator NCCL
// split or shrank from this group's; and a group grown from a smaller one
// (nc.grow_group), whose communicator ncclCommGrow makes when the group first
// needs one.  grow_group checks on every rank, before any collective, that the
// smaller group's ranks are the grown group's first ranks in the same order,
// and hands each member the smaller group's communicator and every rank the
// unique id its rank 0 took.
#include "backend/backend.h"

#include <algorithm>

#include "comm/communicator.h"
#include "op/errors.h"
#include "util/checked.h"

namespace nccl_core {

void Backend::set_split_source(c10::intrusive_ptr<Backend> parent,
                               int color) {
  NCCL_CORE_CHECK_VALUE(color >= 0, "nccl_core: split color must be >= 0");
  source_.split_parent = std::move(parent);
  source_.split_color = color;
}

void Backend::perform_nocolor_split(std::optional<at::Device> device) {
  surface_errors([&] {
    auto child = communicator(device ? *device : pick_device(nullptr))->split(-1, rank_, options_->config,
                                             options_->timeout);
    TORCH_INTERNAL_ASSERT(!child, "nocolor split returned a communicator");
  });
}

c10::intrusive_ptr<c10d::Backend> Backend::split(
    const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  auto it = std::find(ranks.begin(), ranks.end(), rank_);
  auto parent = communicator();
  if (it == ranks.end()) {
    perform_nocolor_split(*device_);
    return nullptr;
  }
  // Same color on every member: a hash of the sorted member list.
  uint32_t color = 2166136261u;
  for (int r : ranks) {
    color = (color ^ static_cast<uint32_t>(r)) * 16777619u;
  }
  int key = checked::narrow<int, raise_value_error>(it - ranks.begin(), "split rank index");
  // A copy: torch 2.11 hands us the parent's live options object.
  auto given = c10::dynamic_intrusive_pointer_cast<GroupOptions>(opts);
  auto child_opts = c10::make_intrusive<GroupOptions>(given ? *given : *options_);
  if (!given && opts) {
    child_opts->timeout = opts->timeout;
    child_opts->group_name = opts->group_name;
  }
  auto child = surface_errors([&] {
    return parent->split(static_cast<int>(color & 0x7fffffff), key,
                         child_opts->config, child_opts->timeout);
  });
  auto backend = c10::make_intrusive<Backend>(
      store, key, checked::narrow<int, raise_value_error>(ranks.size(), "split group size"),
      child_opts);
  backend->adopt(std::move(child), *device_);
  backend->announce(true);
  return backend;
}

c10::intrusive_ptr<c10d::Backend> Backend::shrink(
    const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts_override) {
  std::vector<int> exclude;
  int below = 0;
  for (int64_t r : ranks_to_exclude) {
    NCCL_CORE_CHECK_VALUE(r >= 0 && r < size_, "nccl_core shrink: rank ", r,
                          " is outside the group of ", size_);
    NCCL_CORE_CHECK_VALUE(r != rank_, "nccl_core shrink: an excluded rank (", r,
                          ") must not take part in the shrink");
    // A duplicate would be counted twice below (a wrong new rank and size).
    NCCL_CORE_CHECK_VALUE(std::find(exclude.begin(), exclude.end(), r) == exclude.end(),
                          "nccl_core shrink: rank ", r,
                          " is listed twice in ranks_to_exclude; list each rank once");
    exclude.push_back(static_cast<int>(r));
    below += r < rank_ ? 1 : 0;
  }
  NCCL_CORE_CHECK_VALUE(comm_ != nullptr,
                        "nccl_core shrink: the group has no communicator yet (run a collective "
                        "or pass device_id to init_process_group first)");
  auto given = c10::dynamic_intrusive_pointer_cast<GroupOptions>(opts_override);
  auto child_opts = c10::make_intrusive<GroupOptions>(given ? *given : *options_);
  // The parent may have failed (a rank died): shrinking is how to recover,
  // so its error state is not checked here; NCCL decides.
  auto child = surface_errors([&] {
    return comm_->shrink(exclude, shrink_flags, child_opts->config, child_opts->timeout);
  });
  auto backend = c10::make_intrusive<Backend>(
      store_, rank_ - below, size_ - static_cast<int>(exclude.size()), child_opts);
  backend->adopt(std::move(child), *device_);
  backend->announce(true);
  return backend;
}

void Backend::set_grow_source(GrowSource source) {
  std::lock_guard<std::mutex> lock(init_mutex_);
  NCCL_CORE_CHECK_STATE(!comm_, "nccl_core grow_group: the group already has a communicator");
  if (source.parent) {
    NCCL_CORE_CHECK_VALUE(source.parent->is_live(),
                          "nccl_core grow_group: the group that grows has no live communicator");
    NCCL_CORE_CHECK_VALUE(source.parent->rank() == rank_ && source.parent->nranks() < size_,
                          "nccl_core grow_group: rank ", source.parent->rank(), " of ",
                          source.parent->nranks(), " cannot become rank ", rank_, " of ", size_,
                          " (a member keeps its rank; a grow adds ranks)");
  }
  source_ = CommSource{};
  source_.grow = std::move(source);
}

std::shared_ptr<Communicator> grown_communicator(const GrowSource& source, int rank, int size,
                                                 int device, const CommConfig& config,
                                                 std::chrono::milliseconds timeout) {
  if (!source.parent) {
    return Communicator::join_grow(source.id, size, rank, device, config, timeout);
  }
  NCCL_CORE_CHECK_VALUE(source.parent->device() == device, "nccl_core grow_group: the group "
                        "that grows is on cuda:", source.parent->device(), ", the grown one on cuda:",
                        device);
  // NCCL takes the id from the rank that leads alone (rank 0, which made it).
  return source.parent->grow(size, rank == 0 ? &source.id : nullptr, config, timeout);
}

}  // namespace nccl_core
