// The program's abort hooks (torch's registerAbortHook): callables with no
// argument, run before the group aborts, so that debug state (torch's flight
// recorder dump among them) is captured while it still exists.  They run at
// most once per communicator of the group, at its first abort: the watchdog's on a timeout or an
// error that aborts the communicator or ends the process, or the program's
// abort().  A second abort that comes while they run waits for them, so the
// process never ends in the middle of a capture.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace nccl_core {

class AbortHooks {
 public:
  using Hook = std::function<void()>;

  // Replaces the hook of the same id, if any.
  void add(int64_t id, Hook hook);
  // Raises a ValueError for an id with no hook.
  void remove(int64_t id);
  // Runs every hook once, in id order, the first time it is called; a hook
  // that throws is reported on stderr and the others still run.  Later calls
  // return once the first has finished.
  void run_once(const char* why);
  // A new communicator of the group (reconfigure): its first abort runs them again.
  void rearm();

 private:
  mutable std::mutex mutex_;  // held while the hooks run
  std::map<int64_t, Hook> hooks_;
  bool ran_ = false;
};

}  // namespace nccl_core
