// Our NVLink kernels for the raw API: a collective of the Communicator API
// (Python, outside any group) takes the path the dist.* call of its size
// takes (collectives/path_choice.h): the fast path (kernels.h), the push
// (an all_reduce in place), or NCCL.
//
// Both go through the communicator's one engine (shared_engine.h), and so
// through its paths: a group's (its options and the path table) for the
// communicator of a dist group, else the table with the process's
// NCCL_CORE_FAST_PATH_MAX_BYTES (both modes) and
// NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES (eager calls), read once, which the
// ranks compare at the first raw collective outside a capture (the caller's
// `agree`), before any call may take our kernels.  The scratch window is
// created at the first eligible call, a call every rank makes.
// Eligibility depends on the call's arguments, whether it is captured, and
// the communicator alone, as in engine.h.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <c10/cuda/CUDAGuard.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "comm/buffer.h"
#include "util/host_profile.h"

namespace nccl_core {
class Communicator;
}

namespace nccl_core::nvlink {

class Engine;
struct SharedEngine;
struct GroupPaths;

// Raises where the ranks' paths for `c` differ (collectives/path_agreement.h,
// a floor above); a collective over `c`.
using AgreePaths = void (*)(Communicator& c, const GroupPaths& paths);

// The communicator's engine, held (its mutex, the device) and armed for one
// raw call that stages `staged` bytes (its input on each rank), from
// construction to destruction, where the engine may take a call of that
// size (`push`: an all_reduce in place, which the push may take too);
// engine() is null where it may not (no NVLink engine for `c`, or a size
// only NCCL runs), and then nothing is held.  Where no group made an
// engine, a call outside a capture on `stream` first has `agree` check
// the raw paths (once: it keeps its verdict), then makes the engine; a
// captured one goes to NCCL (a capture cannot all-gather, and every rank
// captures the same calls).
class RawEngineCall {
 public:
  RawEngineCall(Communicator& c, size_t staged, bool push, cudaStream_t stream,
                AgreePaths agree);
  ~RawEngineCall();  // disarms (takes the ticket), then releases
  RawEngineCall(const RawEngineCall&) = delete;
  RawEngineCall& operator=(const RawEngineCall&) = delete;
  Engine* engine() const;

 private:
  friend bool raw_all_reduce_now(Communicator&, const Buffer&, void*, ncclRedOp_t, cudaStream_t);
  // For `shared`, whose mutex `lock` holds already.
  RawEngineCall(Communicator& c, std::shared_ptr<SharedEngine> shared,
                std::unique_lock<std::mutex> lock);
  void hold(Communicator& c);  // the device, arming: once the lock is held

  host_profile::Timer prof_;
  std::shared_ptr<SharedEngine> shared_;
  std::unique_lock<std::mutex> lock_;
  std::optional<c10::cuda::CUDAGuard> on_device_;
};

// The same for a caller holding the GIL: runs the call only where it costs
// a kernel launch, on an engine already set up and not busy; false with
// nothing done otherwise (the call then takes its path as any other does,
// through RawEngineCall, so every rank still takes the same path).
bool raw_all_reduce_now(Communicator& c, const Buffer& send, void* out, ncclRedOp_t op,
                        cudaStream_t stream);

// Calls of `c`'s engine that took the fast path so far, dist.* and raw alike
// (tests: proof that it ran).
uint64_t raw_fast_path_calls(Communicator& c);

}  // namespace nccl_core::nvlink
