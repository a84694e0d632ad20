// Opt-in attribution of the host time of one collective call to its phases
// (bench/hostpath.py turns it on for one loop and prints it).  Off, a mark
// costs one relaxed load and a branch; on, one clock read.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nccl_core::host_profile {

// The phases of Backend::launch, in call order, then Work::wait; then the
// raw path's.
enum Phase : int {
  kSetup,    // health check, communicator, device guard, streams, capture state
  kWork,     // the Work and what it keeps alive
  kGuard,    // current-stream guard and the BoundedCall registration
  kEnqueue,  // the operation itself (our kernel or NCCL's enqueue)
  kEpilogue, // the BoundedCall check and release, the work's epilogue
  kRecord,   // the end event
  kWatch,    // handing the work to the watchdog
  kWait,     // Work::wait, which torch calls after every plain call
  // Parts of kEnqueue, timed on their own (not in the sum of the above):
  kReady,    // the fast path's checks: eligible, scratch window, stream order
  kLaunch,   // the fast path's kernel launch
  kMark,     // the fast path's ordering event and ticket after the launch
  // Communicator.allreduce (the raw path), in call order:
  kRawArgs,  // the binding's conversion of the Python arguments
  kRawPath,  // argument checks, the communicator's engine, device guard
  kRawCall,  // the engine's call (split as kReady, kLaunch, kMark)
  kRawOp,    // the operation: its checks, then kRawPath and kRawCall (the GIL
             // released and taken back only where it may wait)
  kPhases
};

extern std::atomic<bool> g_enabled;

void set_enabled(bool on);
void add(Phase phase, uint64_t ns);
// (phase name, calls, mean µs) per phase; `reset` zeroes the counters.
std::vector<std::pair<std::string, std::pair<uint64_t, double>>> snapshot(bool reset);

// Marks the end of each phase since the previous mark (or construction).
class Timer {
 public:
  Timer() : on_(g_enabled.load(std::memory_order_relaxed)) {
    if (on_) {
      last_ = now();
    }
  }
  void mark(Phase phase) {
    if (on_) {
      uint64_t t = now();
      add(phase, t - last_);
      last_ = t;
    }
  }

 private:
  static uint64_t now() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count());
  }
  bool on_;
  uint64_t last_ = 0;
};

}  // namespace nccl_core::host_profile
