// The one fast-path engine of a communicator (engine.h), shared by the
// surfaces that call it: a dist group's Backend and the raw Communicator API
// (raw.h).  It lives as long as the communicator (Communicator::extension);
// its windows are resources of their own, closed with the others and set up
// again at the next eligible call.  Calls take `mutex` from arming to the
// ticket (engine.h): raw calls may come from any thread.  Which calls take
// it: the paths of whoever asked first (a group's options and the table;
// for a communicator no group made, the table with the process's
// NCCL_CORE_*FAST_PATH_MAX_BYTES and no push: raw.cpp).
#pragma once

#include <memory>
#include <mutex>

#include "nvlink/engine.h"
#include "nvlink/path_table.h"

namespace nccl_core {
class Communicator;
}

namespace nccl_core::nvlink {

struct SharedEngine {
  explicit SharedEngine(const GroupPaths& paths) : engine(paths) {}
  std::mutex mutex;
  Engine engine;
};

// `c`'s engine, made with `paths` if it has none yet: on `c`'s device, with
// the abort and close hooks that let its kernels leave the windows first.
std::shared_ptr<SharedEngine> engine_of(Communicator& c, const GroupPaths& paths);
// `c`'s engine, or nullptr when none was made.
std::shared_ptr<SharedEngine> engine_if_any(const Communicator& c);

}  // namespace nccl_core::nvlink
