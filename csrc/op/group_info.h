// What every op of a group shares with it: its label for reports, whether an
// error of the group has reached the program, the communicators whose abort
// waits for that moment (error policy 2), and what runs before an abort.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nccl_core {

class Communicator;

class GroupInfo {
 public:
  std::string label;  // "name (rank r of n)", for error reports
  // The program's abort hooks (op/abort_hooks.h), for the aborts that happen
  // in a program thread (a blocking wait's timeout, an error raised under
  // policy 2); null where none are set up.
  std::function<void()> before_abort;

  // The watchdog failed the group under policy 2: `comm` is aborted once the
  // error reaches the program.  Aborting at once would let a stuck kernel
  // leave, and a program thread waiting on the GPU behind it (synchronize,
  // .item()) would go on with a result the collective never produced.
  void abort_when_raised(const std::shared_ptr<Communicator>& comm);
  // An error of the group is being raised to the program (by the raising
  // thread, before it throws): aborts what waited for it.  Returns whether
  // one had been raised before.
  bool mark_raised();
  bool raised() const { return raised_.load(); }

 private:
  std::atomic<bool> raised_{false};
  std::mutex mutex_;
  std::vector<std::weak_ptr<Communicator>> deferred_;
};

}  // namespace nccl_core
