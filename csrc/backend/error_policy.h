// What a group does when its watchdog finds a timeout or an NCCL error:
// torch's TORCH_NCCL_ASYNC_ERROR_HANDLING contract, with the same values.
//   0 none         fail the pending work, keep the communicator (stuck work
//                  and all: dist.shrink_group(..., SHRINK_ABORT) recovers)
//   1 tear down    abort the communicator, then end the process
//   2 clean up     abort the communicator; the error reaches the program
//   3 skip cleanup end the process at once, nothing aborted (the default)
// Where the process is not ended, the next call on the group, Work.wait()
// and destroy_process_group() raise the error if nothing raised it yet.
#pragma once

#include <string>

namespace nccl_core {

struct ErrorPolicy {
  enum Mode : int { kNone = 0, kTearDown = 1, kCleanUpOnly = 2, kSkipCleanUp = 3 };
  int mode = kSkipCleanUp;

  bool aborts() const { return mode == kTearDown || mode == kCleanUpOnly; }
  bool tears_down() const { return mode == kTearDown || mode == kSkipCleanUp; }
  // The clause an error message ends with.
  const char* outcome() const;
};

// Ends the process the way backend nccl's watchdog does (SIGABRT), after
// writing `report` to stderr, so that torchrun sees a failed worker.
[[noreturn]] void tear_down(const std::string& report);

// The process is about to end (policies 1 and 3): from now on a program
// thread that would see the error (the next call, Work.wait()) waits for the
// end instead, so it can neither go on with bad data nor exit 0 first.
void begin_tear_down();
void block_if_tearing_down();

}  // namespace nccl_core
