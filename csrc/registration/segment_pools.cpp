// The MemPools a communicator follows (register_mem_pool): adding one
// registers what it holds, every rank agreeing first (pool_agreement.h);
// removing one deregisters it (segment_registry.h).
#include "registration/segment_registry.h"

#include <algorithm>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "memory/allocator.h"
#include "memory/vmm.h"
#include "nccl/api.h"
#include "registration/pool_agreement.h"
#include "util/concat.h"

namespace nccl_core::segments {

void Registry::add_pool(const std::shared_ptr<Communicator>& comm, PoolId pool, int device,
                        bool symm) {
  attach_tracker();
  std::unique_lock<std::mutex> lock(mutex_);
  Member& added = find_or_add(comm);
  for (const auto& p : added.pools) {
    NCCL_CORE_REQUIRE(p.id != pool, "MemPool ", pool_name(pool),
                      " is already registered with this group (symm=", p.symm ? "True" : "False",
                      "); call deregister_mem_pool first");
  }
  added.pools.push_back(Pool{pool, symm});
  auto seen = snapshot(device, pool, lock);
  const uint64_t frees = frees_[device];
  Member* m = find(comm.get());
  NCCL_CORE_REQUIRE(m != nullptr, "the communicator was released while registering MemPool ",
                    pool_name(pool));
  if (symm) {
    // One window per segment, each a collective: every rank must hold as
    // many, of the same sizes in the same order, or the registrations would
    // pair up wrongly.  Checked by exchanges (pool_agreement.h), so every
    // rank raises alike before any window is made.  mutex_ is let go for
    // them (they may allocate, and the allocator's hook takes it).
    std::vector<size_t> sizes;
    for (const auto& s : seen) {
      sizes.push_back(s.size);
    }
    bool freed = false;
    try {
      lock.unlock();
      agree_on_segments(*comm, sizes, pool_name(pool));
      lock.lock();
      // A segment of the pool freed meanwhile, by another thread of this
      // rank, must not become a window: every rank hears of it.
      freed = frees_[device] != frees && !still_held(seen, snapshot(device, pool, lock));
      const uint64_t checked = frees_[device];
      lock.unlock();
      agree_none_freed(*comm, freed, pool_name(pool));
      lock.lock();
      // A free that completed during this last exchange is refused here
      // alone (rare: its peers time out).  After this check mutex_ stays
      // held until the windows are made, so no free of the pool's memory
      // completes meanwhile (the allocator's hook waits for mutex_).
      freed = frees_[device] != checked && !still_held(seen, snapshot(device, pool, lock));
    } catch (...) {
      if (!lock.owns_lock()) {
        lock.lock();
      }
      drop_pool(comm.get(), pool);
      throw;
    }
    if (freed) {
      drop_pool(comm.get(), pool);
      NCCL_CORE_REQUIRE(false, "register_mem_pool(symm=True): a segment of MemPool ",
                        pool_name(pool), " was freed while it was being registered; register "
                        "it while no other thread frees its memory (its peers time out)");
    }
    m = find(comm.get());  // after every unlock above: members_ may have moved
    NCCL_CORE_REQUIRE(m != nullptr, "the communicator was released while registering MemPool ",
                      pool_name(pool));
  }
  std::vector<uintptr_t> done;
  try {
    for (const auto& s : seen) {
      auto it = m->segments.find(s.addr);
      bool had = it != m->segments.end() && !it->second.handle.expired();
      if (had && symm && !it->second.window) {
        // Registered as a plain buffer (the allocator-hook option): a window
        // replaces it.
        release(it->second);
        m->segments.erase(it);
        had = false;
      }
      register_segment(*m, comm, s, symm);
      if (!had) {
        done.push_back(s.addr);
      }
    }
  } catch (...) {
    // Nothing half-registered stays behind: this call's segments go, and the
    // pool is not followed.
    for (auto addr = done.rbegin(); addr != done.rend(); ++addr) {
      auto it = m->segments.find(*addr);
      if (it != m->segments.end()) {
        try {
          release(it->second);
        } catch (...) {
        }
        m->segments.erase(it);
      }
    }
    drop_pool(comm.get(), pool);
    throw;
  }
}

void Registry::drop_pool(const Communicator* comm, PoolId pool) {
  Member* m = find(comm);
  if (m != nullptr) {
    m->pools.erase(std::remove_if(m->pools.begin(), m->pools.end(),
                                  [&](const Pool& p) { return p.id == pool; }),
                   m->pools.end());
  }
}

void Registry::remove_pool(const std::shared_ptr<Communicator>& comm, PoolId pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  Member* m = find(comm.get());
  auto p = m == nullptr ? std::vector<Pool>::iterator()
                        : std::find_if(m->pools.begin(), m->pools.end(),
                                       [&](const Pool& q) { return q.id == pool; });
  NCCL_CORE_REQUIRE(m != nullptr && p != m->pools.end(), "MemPool ", pool_name(pool),
                    " is not registered with this group (register_mem_pool first)");
  m->pools.erase(p);
  // Registration order, as every rank registered them: window deregistration
  // is collective.  Plain buffers stay when the group follows every segment.
  std::vector<std::pair<uint64_t, uintptr_t>> mine;
  for (const auto& [addr, s] : m->segments) {
    if (s.pool == pool && (s.window || !m->all)) {
      mine.emplace_back(s.order, addr);
    }
  }
  std::sort(mine.begin(), mine.end());
  auto live = m->comm.lock();
  std::exception_ptr first;
  for (const auto& [order, addr] : mine) {
    auto it = m->segments.find(addr);
    Seen seen{addr, it->second.size, pool};
    const bool was_window = it->second.window;
    try {
      release(it->second);
    } catch (...) {
      if (!first) {
        first = std::current_exception();
      }
    }
    m->segments.erase(it);
    const bool still_there = !was_window || memory::find(reinterpret_cast<void*>(addr));
    if (m->all && live && live->is_live() && still_there) {
      // The group follows every segment: a plain buffer replaces the window
      // (unless the allocator had freed the segment: its window held it).
      try {
        register_segment(*m, live, seen, false);
      } catch (const std::exception& e) {
        warn(concat("could not register segment ", addr, " with NCCL again"), &e);
      }
    }
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

} // namespace nccl_core::segments
