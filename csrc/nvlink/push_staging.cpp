#include "nvlink/push_staging.h"

#include <exception>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "memory/allocator.h"
#include "nccl/api.h"

namespace nccl_core::nvlink {

bool PushStaging::holds(size_t bytes) const {
  return current_.window && current_.window->is_valid() && capacity_ >= bytes;
}

void PushStaging::drop_current(bool keep_old) {
  if (current_.window && current_.window->is_valid()) {
    if (keep_old) {
      kept_.push_back(current_);
    } else {
      current_.window->close_unused();  // the caller waited for its kernels
    }
  }
  current_ = Made{};
  capacity_ = 0;
  shared_ = PushShared{};
}

PushStaging::Outcome PushStaging::make(Communicator& comm, size_t capacity, bool keep_old) {
  drop_current(keep_old);
  const size_t total = capacity + kPushCounterBytes;
  at::Tensor memory;
  size_t got = 0;
  try {
    memory = memory::empty({static_cast<int64_t>(total)}, at::kByte, comm.device(), false);
    got = total;
  } catch (const std::exception&) {
    got = 0;  // out of memory here: every rank hears of it below
  }
  // Before any window collective: a rank that cannot take part says so.
  std::vector<size_t> sizes = comm.all_gather_sizes(got, "ncclAllGather (push staging sizes)");
  for (size_t s : sizes) {
    if (s != total) {
      return Outcome::kNoMemory;
    }
  }
  // Peers raise our flags as soon as their first push runs: zeros first
  // (the window collective below orders them before any peer's store).
  char* base = static_cast<char*>(memory.data_ptr());
  memory::zero_fresh(base, kPushFlagBytes);
  memory::zero_fresh(base + capacity, kPushCounterBytes);
  auto window = Window::create(comm.shared_from_this(), base, total, 0, memory.storage(), sizes);
  if (!window) {
    return Outcome::kNoWindows;  // no windows on this system: the same on every rank
  }
  PushShared s{};
  for (int r = 0; r < comm.nranks(); ++r) {
    auto p = window->peer_pointer(r, 0);
    if (!p) {
      window->close_unused();  // reachability is symmetric: every rank sees a gap
      return Outcome::kNoWindows;
    }
    s.staging[r] = static_cast<char*>(*p);
  }
  // From the smallest window, which every rank knows alike (push.h).
  s.slot_bytes = push_slot_bytes(window->min_size() - kPushCounterBytes, comm.nranks());
  s.calls = reinterpret_cast<unsigned long long*>(base + capacity);
  current_ = Made{std::move(window), std::move(memory)};
  capacity_ = capacity;
  shared_ = s;
  return Outcome::kReady;
}

}  // namespace nccl_core::nvlink
