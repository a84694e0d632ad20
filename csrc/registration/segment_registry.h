// csrc/registration: memory registered with NCCL on the program's behalf:
// caching-allocator segments kept in step with the allocator (this file,
// torch's register_mem_pool) and the automatic symmetric windows over NCCL
// memory (symmetric.h).  It uses comm/ and memory/ only.
//
// Caching-allocator segments registered with NCCL communicators and kept in
// step with the allocator: torch's register_mem_pool / deregister_mem_pool and
// TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK, for nccl_core communicators.
//
// Process-wide, because the allocator's trace tracker cannot be detached: it
// is attached once, outlives every communicator and finds them here through
// weak references.  A communicator follows
//   - every segment on its device ("all", the allocator-hook option), as
//     ncclCommRegister buffers, and/or
//   - the segments of MemPools registered with it, as buffers or, for
//     symm=True, the segments the pool holds at registration as
//     NCCL_WIN_COLL_SYMMETRIC windows (collective, in allocation order: every
//     rank must hold as many, which is checked), later ones as buffers.
// Segments are registered when followed (snapshot) and on SEGMENT_ALLOC, and
// buffers deregistered on SEGMENT_FREE, which the allocator reports before
// the memory goes back.  Windows are never made or ended from the
// allocator's callback (a collective there would pair with whatever the
// peers run then): a window pins its segment, which stays mapped after the
// allocator frees it, until deregister_mem_pool or the communicator's end,
// points every rank reaches together.  Expandable segments (SEGMENT_MAP) are
// not followed.
//
// The registrations are resources of their communicator (comm/resources.h),
// which owns them and releases them before it is finalized; the registry only
// holds weak references.  `forget` is called before a communicator is
// finalized or aborted, so nothing new is registered on it after that.
//
// Locks: the allocator holds its per-device lock while a tracker runs, and
// the tracker then takes `mutex_`: allocator lock -> mutex_.  Nothing here
// calls into the allocator while holding `mutex_` (snapshots are taken first,
// registrations allocate nothing from it), so the order never reverses.  A
// failed registration inside the tracker cannot be thrown into the
// allocator: it is a warning (the segment stays unregistered, which is only
// slower).
#pragma once

#include <ATen/cuda/MemPool.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nccl_core {

class Communicator;
class Resource;

namespace segments {

// torch's MempoolId_t: (CaptureId_t, CaptureId_t).
using PoolId = decltype(std::declval<at::cuda::MemPool&>().id());

struct Counts {
  size_t segments = 0;  // live registrations
  size_t bytes = 0;     // their total size
  size_t windows = 0;   // of which symmetric windows
};

class Registry {
 public:
  // The process-wide registry (never destroyed: the tracker may run at exit).
  static Registry& get();

  // Registers every segment on `comm`'s device now and each new one later
  // (best effort: a segment NCCL refuses is a warning).
  void follow_all(const std::shared_ptr<Communicator>& comm);
  // Registers every segment of `pool` (device `device`) now and later.  With
  // `symm`, the segments it holds now become symmetric windows (collective:
  // every rank must hold as many, else NcclInvalid on every rank), and later
  // ones plain buffers: no collective ever runs from an allocator callback.
  // A window's segment stays mapped (pinned) until the window goes.  Throws
  // NcclInvalid if the pool is already registered on `comm`, and rolls back
  // on failure.
  void add_pool(const std::shared_ptr<Communicator>& comm, PoolId pool, int device, bool symm);
  // Deregisters the pool's segments (windows in registration order, as every
  // rank does).  Throws NcclInvalid if the pool is not registered on `comm`.
  void remove_pool(const std::shared_ptr<Communicator>& comm, PoolId pool);
  // Stops following `comm` (before it is finalized or aborted).  Its
  // registrations stay resources of the communicator, released with it.
  void forget(const Communicator* comm);
  // What `comm` has registered now (of `pool` only, if given).
  Counts counts(const Communicator* comm, std::optional<PoolId> pool = std::nullopt) const;

 private:
  static std::string pool_name(PoolId p);
  static void warn(const std::string& what, const std::exception* e);
  struct Segment {
    std::weak_ptr<Resource> handle;
    size_t size = 0;
    PoolId pool{};
    bool window = false;
    uint64_t order = 0;  // registration order (windows are released in it)
  };
  struct Pool {
    PoolId id{};
    bool symm = false;
  };
  struct Member {
    const Communicator* key = nullptr;
    std::weak_ptr<Communicator> comm;
    int device = -1;
    bool all = false;
    std::vector<Pool> pools;
    std::map<uintptr_t, Segment> segments;  // by base address
  };
  // A segment of the allocator's snapshot.
  struct Seen {
    uintptr_t addr;
    size_t size;
    PoolId pool;
  };

  Registry() = default;
  void attach_tracker();
  void on_segment_alloc(int device, uintptr_t addr, size_t size, PoolId pool);
  void on_segment_free(int device, uintptr_t addr);
  Member* find(const Communicator* comm);
  const Member* find(const Communicator* comm) const;
  Member& find_or_add(const std::shared_ptr<Communicator>& comm);
  // The segments on `device` (of `pool` only, if given) in allocation order,
  // taken so that no segment was freed meanwhile; returns with `lock` held.
  std::vector<Seen> snapshot(int device, std::optional<PoolId> pool,
                             std::unique_lock<std::mutex>& lock);
  // Registers one segment with `comm` unless it is already; throws.
  void register_segment(Member& m, const std::shared_ptr<Communicator>& comm, const Seen& s,
                        bool window);
  // Closes one registration; throws what NCCL reports.
  static void release(Segment& s);
  // Whether `m` wants segments of `pool`, and as a window.
  static bool wants(const Member& m, PoolId pool, bool& window);
  // Whether every segment of `seen` is still in the snapshot `now`.
  static bool still_held(const std::vector<Seen>& seen, const std::vector<Seen>& now);
  // `comm` no longer follows `pool` (a registration rolled back).
  void drop_pool(const Communicator* comm, PoolId pool);

  mutable std::mutex mutex_;
  std::vector<Member> members_;
  std::map<int, uint64_t> frees_;  // SEGMENT_FREE events per device
  uint64_t next_order_ = 0;
  std::once_flag tracker_once_;
};

}  // namespace segments
}  // namespace nccl_core
