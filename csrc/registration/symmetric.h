// Symmetric windows over NCCL memory, registered automatically (issue 6).
//
// An all_reduce on NCCL's path whose tensor lies in NCCL memory (allocated
// by nccl_core_backend.torch.empty, Backend::allocateTensor or a MemPool on
// our allocator) of at most `max_bytes` first registers that allocation as a
// symmetric window of the communicator, once; NCCL then picks its symmetric
// kernels for that memory where its tuning says they are faster.  No user
// call: the cache is keyed by allocation.
//
// Window registration is collective, and NCCL reads peers' windows at this
// rank's offset, so the cache relies on the contract NCCL states for
// registered buffers: for one call, every rank passes NCCL memory or none
// does, in allocations of equal size at equal offsets (what an SPMD program
// does).  A rank that breaks the first half waits in the registration until
// the group's timeout, which fails the call; `symmetric_max_bytes = 0` turns
// it off.  The sizes are not trusted: before registering, every rank's
// allocation size is exchanged (one all-gather), and an allocation whose
// size differs on some rank is not registered, on every rank alike (they
// all see the same sizes), and remembered as refused: its calls take NCCL's
// plain path on every rank, so neither NCCL's symmetric kernels nor the push
// all-reduce ever address a peer's allocation past its end.  With equal
// sizes, every rank's call range [offset, offset + bytes) lies inside its
// own allocation, hence inside every peer's: a push can only land inside
// the peer's allocation.  Offsets are not exchanged (that would cost a
// collective per call); a program that passes equal sizes at different
// offsets breaks NCCL's contract and gets its results at the wrong place
// inside the peers' allocations, as with NCCL's own symmetric kernels.
//
// The same windows serve the push all-reduce (fast/push.h): its calls need
// every rank's copy of the tensor.  Allocations above `max_bytes` are
// registered for it too, at their first call it covers, as plain (not
// symmetric) windows: NCCL's symmetric kernels lose to its ring there.
//
// A registered allocation is pinned (memory/allocator.h): when its tensor
// dies it stays mapped until every rank has released it.  Each new
// registration first agrees, with one small all_reduce, on the windows
// released everywhere and deregisters them, so the cache follows the
// program's allocations instead of growing with them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace nccl_core {

class Communicator;
class Window;

class SymmetricCache {
 public:
  // `pushes(bytes)`: the push all-reduce takes calls of that size.
  SymmetricCache(size_t max_bytes, std::function<bool(size_t)> pushes)
      : max_bytes_(max_bytes), pushes_(std::move(pushes)) {}
  ~SymmetricCache();
  SymmetricCache(const SymmetricCache&) = delete;
  SymmetricCache& operator=(const SymmetricCache&) = delete;

  // Where every rank maps one registered allocation.
  struct Entry {
    void* base;
    size_t size;                     // the same on every rank (else refused)
    std::shared_ptr<Window> window;  // null: refused (sizes differ across ranks)
    std::vector<char*> peers;  // each rank's copy of [base, base + size)
  };

  // Before a collective reads or writes [ptr, ptr + bytes) on `stream`:
  // registers the NCCL allocation holding it if it is not yet and qualifies
  // (at most max_bytes, or a call size the push all-reduce takes).  Returns
  // its entry once registered; nullptr for other memory, allocations that do
  // not qualify, or under capture before registration.  The entry lives
  // until the next admit().
  const Entry* admit(Communicator& comm, const void* ptr, size_t bytes, cudaStream_t stream);

  // Windows registered now (refused allocations not counted).
  size_t windows() const {
    size_t n = 0;
    for (const auto& e : entries_) {
      n += e.window ? 1 : 0;
    }
    return n;
  }

  // Deregisters every window (collective: every rank, when the group ends)
  // and frees the allocations that were released meanwhile.
  void clear();

 private:
  // Deregisters the windows whose memory every rank has released.
  void sweep(Communicator& comm, cudaStream_t stream);

  const size_t max_bytes_;
  const std::function<bool(size_t)> pushes_;
  bool disabled_ = false;  // NCCL registers no windows here (same on every rank)
  std::vector<Entry> entries_;  // registration order: the same on every rank
};

}  // namespace nccl_core
