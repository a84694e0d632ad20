// What a group does when its watchdog finds a timeout or an NCCL error:
// torch's TORCH_NCCL_ASYNC_ERROR_HANDLING contract, with the same values
// (torchrun sets 1 for its workers where the variable is unset).
//   0 none         fail the pending work, keep the communicator (stuck work
//                  and all: dist.shrink_group(..., SHRINK_ABORT) recovers)
//   1 tear down    end the process (see below)
//   2 clean up     fail the pending work; the communicator is aborted when
//                  the error reaches the program
//   3 skip cleanup end the process at once, nothing aborted (the default)
// A group made with enable_reconfigure=True (torch >= 2.15) takes its own
// mode whatever the variable says, as backend nccl's: the communicator is
// aborted at once, so that no kernel waits for a peer that is gone, the
// pending work fails, and the process goes on to dist._reconfigure().
// Nothing releases a stuck kernel before the program can no longer read its
// output: NCCL's abort makes the kernel leave, and a program thread waiting
// on the GPU behind it (torch.cuda.synchronize(), .item()) would go on with a
// result that was never reduced.  So policy 1 ends the process with the
// communicator in place (the end of the process releases it), and policy 2
// aborts in the thread that raises the error.
// Where the process is not ended, the next call on the group, Work.wait()
// and destroy_process_group() raise the error; an error that no program
// thread raised within the group's unraised-error grace ends the process (a
// thread blocked on the GPU behind the failed collective cannot be reached
// by an exception, and must not be let go with wrong data).
#pragma once

#include <string>

namespace nccl_core {

struct ErrorPolicy {
  enum Mode : int { kNone = 0, kTearDown = 1, kCleanUpOnly = 2, kSkipCleanUp = 3, kReconfigure = 4 };
  int mode = kSkipCleanUp;

  // Aborts the communicator (when the error is raised, policy 2; at once,
  // reconfigurable groups).
  bool aborts() const { return mode == kCleanUpOnly || mode == kReconfigure; }
  bool aborts_at_once() const { return mode == kReconfigure; }
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

// Writes a report to stderr where the process goes on (policies 0 and 2),
// as backend nccl logs every timeout.
void log_report(const std::string& report);

}  // namespace nccl_core
