#include "registration/segment_registry.h"

#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <algorithm>
#include <cstdio>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "memory/allocator.h"
#include "memory/vmm.h"
#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"
#include "registration/pool_agreement.h"
#include "util/concat.h"

namespace nccl_core::segments {

namespace {

namespace alloc = c10::cuda::CUDACachingAllocator;

// Runs one tracker event.  Nothing may propagate into the allocator, which
// holds its lock and would end the process (std::terminate): not an error
// of a registration, not one of building its warning.
template <class F>
void contained(const char* event, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[nccl_core] warning: allocator %s not followed: %s\n", event, e.what());
  } catch (...) {
    std::fprintf(stderr, "[nccl_core] warning: allocator %s not followed\n", event);
  }
}

}  // namespace

std::string Registry::pool_name(PoolId p) {
  return concat("(", p.first, ", ", p.second, ")");
}

// Tracker failures cannot be raised into the allocator; fprintf, not a
// stream: see util/concat.h.
void Registry::warn(const std::string& what, const std::exception* e) {
  std::fprintf(stderr, "[nccl_core] warning: %s%s%s\n", what.c_str(), e ? ": " : "",
               e ? e->what() : "");
}

Registry& Registry::get() {
  // Leaked on purpose: the allocator may report segments during exit.
  static Registry* registry = new Registry();
  return *registry;
}

void Registry::attach_tracker() {
  std::call_once(tracker_once_, [this] {
    // The tracker attaches to the device allocators that exist: CUDA (and
    // with it the caching allocator) must be initialised first.
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    alloc::attachAllocatorTraceTracker([this](const alloc::TraceEntry& e) {
      // torch reports SEGMENT_FREE before the memory goes back (cudaFree, or
      // the pool allocator's raw_delete), so deregistering here is in time.
      if (e.action_ == alloc::TraceEntry::SEGMENT_ALLOC) {
        contained("segment allocation",
                  [&] { on_segment_alloc(e.device_, e.addr_, e.size_, e.mempool_); });
      } else if (e.action_ == alloc::TraceEntry::SEGMENT_FREE) {
        contained("segment release", [&] { on_segment_free(e.device_, e.addr_); });
      }
    });
  });
}

// A member whose communicator died is never found: a new communicator may
// live at its address, and must not inherit its registrations.
Registry::Member* Registry::find(const Communicator* comm) {
  for (auto& m : members_) {
    if (m.key == comm && !m.comm.expired()) {
      return &m;
    }
  }
  return nullptr;
}

const Registry::Member* Registry::find(const Communicator* comm) const {
  for (const auto& m : members_) {
    if (m.key == comm && !m.comm.expired()) {
      return &m;
    }
  }
  return nullptr;
}

Registry::Member& Registry::find_or_add(const std::shared_ptr<Communicator>& comm) {
  if (Member* m = find(comm.get())) {
    return *m;
  }
  // A communicator that died without `forget` left its entry: drop those.
  members_.erase(std::remove_if(members_.begin(), members_.end(),
                                [](const Member& m) { return m.comm.expired(); }),
                 members_.end());
  Member m;
  m.key = comm.get();
  m.comm = comm;
  m.device = comm->device();
  members_.push_back(std::move(m));
  return members_.back();
}

bool Registry::wants(const Member& m, PoolId pool, bool& window) {
  for (const auto& p : m.pools) {
    if (p.id == pool) {
      window = p.symm;
      return true;
    }
  }
  window = false;
  return m.all;
}

std::vector<Registry::Seen> Registry::snapshot(int device, std::optional<PoolId> pool,
                                               std::unique_lock<std::mutex>& lock) {
  while (true) {
    uint64_t frees = frees_[device];
    lock.unlock();
    // The allocator's lock is taken here, never under mutex_.
    auto snap = pool ? alloc::snapshot(*pool) : alloc::snapshot();
    std::vector<alloc::SegmentInfo> infos;
    for (auto& s : snap.segments) {
      if (s.device == device && !s.is_expandable) {
        infos.push_back(std::move(s));
      }
    }
    // Allocation order: symmetric windows are collective, and every rank
    // must register a pool's segments in the same order.
    std::sort(infos.begin(), infos.end(), [](const auto& a, const auto& b) {
      return a.registration_counter != b.registration_counter
                 ? a.registration_counter < b.registration_counter
                 : a.address < b.address;
    });
    lock.lock();
    // A segment freed after the snapshot would be registered at an address
    // that went back to the driver: take the snapshot again.
    if (frees_[device] == frees) {
      std::vector<Seen> out;
      out.reserve(infos.size());
      for (const auto& s : infos) {
        out.push_back(Seen{static_cast<uintptr_t>(s.address), s.total_size,
                           s.owner_private_pool_id});
      }
      return out;
    }
  }
}

bool Registry::still_held(const std::vector<Seen>& seen, const std::vector<Seen>& now) {
  for (const auto& s : seen) {
    auto same = [&](const Seen& n) { return n.addr == s.addr && n.size == s.size; };
    if (std::none_of(now.begin(), now.end(), same)) {
      return false;
    }
  }
  return true;
}

void Registry::register_segment(Member& m, const std::shared_ptr<Communicator>& comm,
                                const Seen& s, bool window) {
  auto it = m.segments.find(s.addr);
  if (it != m.segments.end()) {
    auto handle = it->second.handle.lock();
    if (handle && handle->is_valid()) {
      return;  // the tracker or an earlier call got it first
    }
    m.segments.erase(it);
  }
  void* ptr = reinterpret_cast<void*>(s.addr);
  Communicator::Use use(*comm);
  std::shared_ptr<Resource> handle;
  if (window) {
    NCCL_CORE_REQUIRE(vmm::is_vmm(ptr), "segment ", s.addr, " of MemPool ", pool_name(s.pool),
                      " is not NCCL memory: symm=True needs a MemPool on the group's "
                      "mem_allocator (ncclMemAlloc), which NCCL can map on every rank");
    // The window keeps its memory pinned (memory/allocator.h): a segment the
    // allocator frees stays mapped until the window goes at an agreed point
    // (deregister_mem_pool, the communicator's end), never from one rank's
    // allocator callback.
    // Every rank's k-th segment has this size (agree_on_segments): no size
    // exchange, and so no allocation, while mutex_ is held.
    handle = Window::create(comm, ptr, s.size, newer::kWinCollSymmetric,
                            memory::pinned_storage(ptr),
                            std::vector<size_t>(static_cast<size_t>(comm->nranks()), s.size));
    NCCL_CORE_REQUIRE(handle != nullptr, "NCCL registered no symmetric window for segment ",
                      s.addr, " of MemPool ", pool_name(s.pool),
                      " (no NVLink peers, or NCCL_WIN_ENABLE=0)");
  } else {
    handle = RegisteredBuffer::create(comm, ptr, s.size, c10::Storage());
  }
  m.segments[s.addr] = Segment{handle, s.size, s.pool, window, next_order_++};
}

void Registry::release(Segment& s) {
  if (auto handle = s.handle.lock()) {
    handle->close();  // idempotent; a dead communicator already freed it
  }
  s.handle.reset();
}

void Registry::on_segment_alloc(int device, uintptr_t addr, size_t size, PoolId pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& m : members_) {
    bool window = false;
    if (m.device != device || !wants(m, pool, window)) {
      continue;
    }
    auto comm = m.comm.lock();
    if (!comm || !comm->is_live()) {
      continue;
    }
    try {
      // A plain buffer even in a symm pool: a window is collective, and one
      // rank's allocator grows its pool when it needs to, not when its peers'
      // do.  register_mem_pool makes windows of what the pool
      // holds then, on every rank at once.
      register_segment(m, comm, Seen{addr, size, pool}, false);
    } catch (const std::exception& e) {
      warn(concat("could not register the new segment ", addr, " (", size,
                  " bytes) with NCCL; collectives on it run unregistered"),
           &e);
    }
  }
}

void Registry::on_segment_free(int device, uintptr_t addr) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++frees_[device];
  for (auto& m : members_) {
    if (m.device != device) {
      continue;
    }
    auto it = m.segments.find(addr);
    if (it == m.segments.end() || it->second.window) {
      continue;  // a window keeps its memory pinned until it goes (register_segment)
    }
    Segment s = it->second;
    m.segments.erase(it);
    try {
      release(s);
    } catch (const std::exception& e) {
      warn(concat("could not deregister segment ", addr, " from NCCL before it was freed"), &e);
    }
  }
}

void Registry::follow_all(const std::shared_ptr<Communicator>& comm) {
  attach_tracker();
  std::unique_lock<std::mutex> lock(mutex_);
  // Followed first, so segments allocated from here on reach the tracker.
  find_or_add(comm).all = true;
  auto seen = snapshot(comm->device(), std::nullopt, lock);
  Member* m = find(comm.get());
  if (m == nullptr) {
    return;  // forgotten meanwhile
  }
  for (const auto& s : seen) {
    bool window = false;
    wants(*m, s.pool, window);
    try {
      register_segment(*m, comm, s, window);
    } catch (const std::exception& e) {
      warn(concat("could not register segment ", s.addr, " (", s.size,
                  " bytes) with NCCL; collectives on it run unregistered"),
           &e);
    }
  }
}

void Registry::forget(const Communicator* comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  members_.erase(std::remove_if(members_.begin(), members_.end(),
                                [&](const Member& m) { return m.key == comm || m.comm.expired(); }),
                 members_.end());
}

Counts Registry::counts(const Communicator* comm, std::optional<PoolId> pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts out;
  const Member* m = find(comm);
  if (m == nullptr) {
    return out;
  }
  for (const auto& [addr, s] : m->segments) {
    auto handle = s.handle.lock();
    if (!handle || !handle->is_valid() || (pool && s.pool != *pool)) {
      continue;
    }
    out.segments += 1;
    out.bytes += s.size;
    out.windows += s.window ? 1 : 0;
  }
  return out;
}

}  // namespace nccl_core::segments
