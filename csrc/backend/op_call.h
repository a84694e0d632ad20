// One operation on its way through Backend::launch (launch.h): what it runs
// on, its Work, what it moves, and the scopes that last the whole call.
//
// launch() keeps only the part that needs the operation's own code (the
// bounded enqueue); the steps around it are OpSteps' (a friend of the
// Backend), in op_call.cpp, each one concern:
//   enter_call       health, communicator, device, streams, capture state,
//                    the group's per-call config
//   describe_call    elements and dtype moved; torch's record_param_comms
//   make_work        the Work (or the coalescing block's) and its OpState
//   order_streams    our stream after the caller's, when not on the caller's
//   scan_for_nan     the NaN watch's scan or the strict check of what is sent
//   keep_tensors     what the Work holds alive, and its outputs
//   arm_fast_path    the engine's lock; whether its kernel report tracks the op
//   record_call      the ticket (the lock ends), the flight recorder's entry
//   finish_call      end event or kernel report, then the watchdog
// The order is the discipline's (launch.h's opening comment); no step may
// move without reading it.
#pragma once

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "backend/call_args.h"
#include "collectives/nccl_calls.h"
#include "backend/work.h"
#include "comm/communicator.h"
#include "failures/group_failures.h"
#include "tooling/profiling.h"
#include "util/host_profile.h"

namespace nccl_core {

class Backend;
namespace collectives {
class CollConfig;
}
namespace nvlink {
class Engine;
}

// The per-call config of the dist.* operation this thread is launching:
// the one a `coll_config(...)` block gave the group (NextCollConfig), held
// by the OpCall and current for the whole call.  While one is current the
// fast path stands aside (a configured call is NCCL's) and the collectives
// take it into their targets (Backend::fast_path, on()).
class OpConfig {
 public:
  // Makes `config` (null: none) current on this thread until destroyed.
  explicit OpConfig(const collectives::CollConfig* config);
  ~OpConfig();
  OpConfig(const OpConfig&) = delete;
  OpConfig& operator=(const OpConfig&) = delete;
  static const collectives::CollConfig* current();  // or null

 private:
  const collectives::CollConfig* previous_;
};

// Where a dist.* collective goes: with the config of the call being
// launched (OpConfig::current()).
collectives::Target on(Communicator& c, cudaStream_t s,
                       collectives::Check check = collectives::Check::kWait);

// The config of a group's next collectives (nc.coll_config(...); null:
// none), which each call takes as it starts (OpSteps::enter_call).  Without
// one, a call reads one atomic flag and takes no lock.
class NextCollConfig {
 public:
  // Returns the config it replaces.
  std::shared_ptr<const collectives::CollConfig> swap(
      std::shared_ptr<const collectives::CollConfig> config);
  std::shared_ptr<const collectives::CollConfig> get() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const collectives::CollConfig> config_;
  std::atomic<bool> set_{false};  // config_ != nullptr
};

struct OpCall {
  OpCall(c10d::OpType type, const char* what) : type(type), what(what) {}
  OpCall(const OpCall&) = delete;
  OpCall& operator=(const OpCall&) = delete;

  const c10d::OpType type;
  const char* const what;
  // Members in the order the steps make them, so that they end in reverse,
  // as the locals of one function would.
  host_profile::Timer prof;
  std::optional<NanWatch::InCall> in_call;  // the NaN watch holds its report meanwhile
  std::shared_ptr<Communicator> comm;
  std::optional<c10::cuda::CUDAGuard> device_guard;
  std::optional<c10::cuda::CUDAStream> current;  // the caller's
  std::optional<c10::cuda::CUDAStream> stream;   // the op's: the caller's or ours
  bool on_current = false;
  bool capturing = false;
  bool profiling = false;
  uint64_t seq = 0;
  uint64_t collective = 0;  // the group's collective count at this op; 0 for send/recv
  int64_t numel_in = 0;
  int64_t numel_out = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  std::optional<profiling::CommsRecord> comms_record;  // open until the call returns
  c10::intrusive_ptr<Work> work;
  // The group's per-call config when the call started (OpConfig).
  std::shared_ptr<const collectives::CollConfig> coll_config;
  // The communicator's engine is shared with raw calls from any thread: held
  // from arming to the ticket (nvlink/shared_engine.h).
  std::unique_lock<std::mutex> engine_lock;
  nvlink::Engine* reporter = nullptr;  // the fast path whose kernel reports, if any
  uint64_t ticket = 0;                 // of the call, once the fast path launched it
};

// launch's steps, in call order.
struct OpSteps {
  static void enter_call(Backend& b, OpCall& op, at::Device device, const CallOpts& call);
  static void describe_call(Backend& b, OpCall& op, const Tensors& inputs,
                            const Tensors& outputs, const CallOpts& call);
  static void make_work(Backend& b, OpCall& op, at::Device device, const Tensors& inputs,
                        const CallOpts& call);
  static void order_streams(Backend& b, OpCall& op);
  static void scan_for_nan(Backend& b, OpCall& op, const Tensors& inputs,
                           const Tensors& outputs, const CallOpts& call);
  static void keep_tensors(Backend& b, OpCall& op, Tensors& inputs, Tensors& outputs);
  static void arm_fast_path(Backend& b, OpCall& op, const CallOpts& call);
  static void disarm_fast_path(OpCall& op);  // the enqueue threw
  static void record_call(Backend& b, OpCall& op);
  static WorkPtr finish_call(Backend& b, OpCall& op);
};

}  // namespace nccl_core
