// One process-wide listener told when a group's communicator comes to life
// and before it goes.  The Python package installs one on torch >= 2.15 that
// publishes the communicator for torch's NCCL symmetric memory
// (torch.distributed._symmetric_memory._nccl.register_external_nccl_comm), so
// that rendezvous over an nccl_core group finds it; on older torch nothing is
// installed and nothing is called.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace nccl_core::comm_listener {

struct Notice {
  std::string group;  // torch's group name
  uintptr_t comm;     // the ncclComm_t
  int device;
  bool up;            // true: created; false: about to be finalized or aborted
};

using Listener = std::function<void(const Notice&)>;

// Replaces the listener (an empty one removes it).
void install(Listener listener);
bool installed();
// Calls the listener, if any, outside every lock of the caller's; a listener
// that throws is reported on stderr, never propagated.
void notify(const Notice& notice) noexcept;

}  // namespace nccl_core::comm_listener
