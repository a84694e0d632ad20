// The push all-reduce's staging window of one group (push.h): where peers
// store what they send this rank, its flags, and this rank's per-block call
// counters (at its end; only this rank reads them).
//
// Made at the first call that needs it and remade larger at a call that
// needs more; every rank makes the same calls, so every rank does this at
// the same call, outside graph capture:
//   - every rank learns whether every rank could allocate before any window
//     collective starts: a rank short of memory turns the push off on every
//     rank alike instead of leaving its peers in a window collective until
//     the timeout;
//   - fresh memory is zeroed on a private stream: no user stream (which may
//     hold another group's stuck kernel) is waited on;
//   - a window that a captured graph has used is kept, with its counters,
//     until the engine ends: replays go on storing through its peer
//     pointers, and their counters must stay in step with its flags.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "nvlink/push.h"

namespace nccl_core {

class Communicator;
class Window;

namespace nvlink {

class PushStaging {
 public:
  enum class Outcome {
    kReady,      // made: shared() is filled but for the progress words
    kNoWindows,  // this system registers no windows (the same on every rank)
    kNoMemory,   // some rank could not allocate: every rank answers this
  };

  // Whether a window of at least `bytes` is made.
  bool holds(size_t bytes) const;
  // Collective: (re)makes the window with `capacity` bytes of flags and
  // slots.  The caller has waited for the earlier push kernels launched
  // outside capture; `keep_old` keeps the current window alive (a graph
  // captured a push on it).
  Outcome make(Communicator& comm, size_t capacity, bool keep_old);
  // Pointers and sizes for the kernel (PushShared's window part).
  const PushShared& shared() const { return shared_; }

 private:
  struct Made {
    std::shared_ptr<Window> window;
    at::Tensor memory;  // flags and slots, then the counters
  };
  void drop_current(bool keep_old);

  Made current_;
  size_t capacity_ = 0;  // bytes of flags and slots in current_
  std::vector<Made> kept_;
  PushShared shared_{};
};

}  // namespace nvlink
}  // namespace nccl_core
