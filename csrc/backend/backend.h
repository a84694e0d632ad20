// csrc/backend: nccl_core's c10d::Backend, which turns torch.distributed
// calls into NCCL calls on one Communicator.  Lifecycle in backend.cpp, new
// groups from this one (split, shrink) in splits.cpp; the
// operations in collectives.cpp, gathers.cpp and p2p.cpp (point-to-point,
// all-to-all, coalescing); the stream/event discipline shared by every op is
// `launch` in launch.h; per-call argument checks in argument_checks.h; the
// program's handle of an op is Work (work.h).  The systems it owns live in
// their own folders below it: op/, failures/, tooling/, registration/.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/MemPool.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <tuple>

#if NCCL_CORE_TORCH >= 215
#include <torch/csrc/distributed/c10d/Hooks.hpp>
#define NCCL_CORE_OVERRIDE_215 override
#else
#define NCCL_CORE_OVERRIDE_215
#endif

#include "tooling/completion_hooks.h"
#include "failures/call_check.h"
#include "failures/desync.h"
#include "failures/ephemeral_timeout.h"
#include "failures/flight_recorder.h"
#include "failures/nan_watch.h"
#include "fast/engine.h"
#include "backend/options.h"
#include "tooling/profiling.h"
#include "backend/work.h"
#include "comm/communicator.h"

namespace nccl_core {

class Watchdog;

class Backend : public c10d::Backend {
 public:
  Backend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
          c10::intrusive_ptr<GroupOptions> options);
  ~Backend() override;

  const std::string getBackendName() const override { return "nccl_core"; }
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override;
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  bool supportsShrinking() const override { return true; }
  // dist.shrink_group: a backend over the ranks not excluded, through
  // ncclCommShrink (flags: NCCL_SHRINK_DEFAULT / NCCL_SHRINK_ABORT).
  c10::intrusive_ptr<c10d::Backend> shrink(
      const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,
      const c10::intrusive_ptr<c10d::Backend::Options>& opts_override) override;
  void setTimeout(std::chrono::milliseconds timeout) override;
  void eagerConnectSingleDevice(at::Device device) override;
  c10::intrusive_ptr<c10d::Backend> split(
      const c10::intrusive_ptr<c10d::Store>& store,
      const std::vector<int>& ranks,
      const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
  uint64_t getSequenceNumberForGroup() override;
  void setSequenceNumberForGroup() override;
  c10d::ErrorType getError() override;
  void abort() override;
  void shutdown() override;

  // --- collectives.cpp -------------------------------------------------
  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>& tensors,
      const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(
      std::vector<at::Tensor>& tensors,
      const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& opts) override;

  // --- p2p.cpp ---------------------------------------------------------
  c10::intrusive_ptr<c10d::Work> alltoall_base(
      at::Tensor& output, at::Tensor& input,
      std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits,
      const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors,
                                      int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors,
                                      int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(
      std::vector<at::Tensor>& tensors, int tag) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // --- memory.cpp: NCCL memory for torch.cuda.MemPool --------------------
  std::shared_ptr<c10::Allocator> getMemAllocator() override;
  at::Tensor allocateTensor(long size, at::TensorOptions options = {}) override;
  bool supportsTensorAlloc(c10::DeviceIndex device) override;

  // --- torch_tools.cpp: what torch's NCCL users reach for ----------------
  // TORCH_NCCL_ENABLE_TIMING at run time: later ops are timed (op_timing.h).
  void enableCollectivesTiming() override;
  bool timing_enabled() const { return timing_.load(std::memory_order_relaxed); }
  // ProcessGroup._register_on_completion_hook (completion_hooks.h).
  void registerOnCompletionHook(
      std::function<void(std::shared_ptr<c10d::WorkInfo>)>&& hook) override;
  // Blocks until every op issued so far has finished on the GPU (or failed).
  void waitForPendingWorks() override;
  // torch.distributed._time_estimator: ops between start and end are handed
  // to NCCL's simulator (ncclGroupSimulateEnd), never run; end returns NCCL's
  // estimate in microseconds.  Outputs of those ops are left undefined.
  bool supportsTimeEstimation() const override { return true; }
  void startTimeEstimate() NCCL_CORE_OVERRIDE_215;
  float endTimeEstimate() NCCL_CORE_OVERRIDE_215;
  // ephemeral_timeout.h
  void add_ephemeral_timeout(std::chrono::milliseconds delta) { ephemeral_.add(delta); }
  std::chrono::milliseconds ephemeral_timeout() { return ephemeral_.current(); }
  // NCCL's memory statistics of the communicator (ncclCommMemStats, NCCL
  // >= 2.29.7; raises naming the release before).
  std::unordered_map<std::string, uint64_t> memory_stats();
  // ncclCommSuspend(NCCL_SUSPEND_MEM) / ncclCommResume on the group's
  // communicator (NCCL >= 2.29.7): its suspendable device memory goes back
  // to the driver until resume().
  void suspend_communicator();
  void resume_communicator();
  // Splits (ncclCommSplit) the group's communicator has performed.
  uint64_t comm_split_count() const;
  CompletionHooks& completion_hooks() { return *hooks_; }
#if NCCL_CORE_TORCH >= 215
  void addEphemeralTimeout(const std::chrono::milliseconds& timeout) override {
    add_ephemeral_timeout(timeout);
  }
  bool supportsCompletionHooks() const override { return true; }
  void registerCompletionHook(int64_t hook_id, c10d::CompletionHook hook) override;
  void unregisterCompletionHook(int64_t hook_id) override;
  std::unordered_map<std::string, uint64_t> getMemoryStats() override { return memory_stats(); }
  void suspend() override { suspend_communicator(); }
  void resume() override { resume_communicator(); }
#endif
  // --- mem_pools.cpp: torch MemPools registered with the communicator ----
  // ProcessGroupNCCL's registerMemPool: every segment of `pool`, now and
  // later, as ncclCommRegister buffers or (symm) symmetric windows.
  void register_mem_pool(at::cuda::MemPool* pool, bool symm = false);
  void deregister_mem_pool(at::cuda::MemPool* pool);
  // Tests: (segments, bytes, windows) registered on the communicator now, of
  // `pool` only if given (backend/segment_registry.h).
  std::tuple<size_t, size_t, size_t> registered_segments(at::cuda::MemPool* pool) const;

  // --- beyond c10d -----------------------------------------------------
  // The communicator on `device`, created on first use.
  std::shared_ptr<Communicator> communicator(
      std::optional<at::Device> device = std::nullopt);
  bool has_communicator() const { return comm_ != nullptr; }
  // Calls that took the fast path so far (tests: proof that it ran).
  uint64_t fast_path_calls() const { return fast_ ? fast_->calls() : 0; }
  // Of those, push all-reduces (fast/push.h).
  uint64_t push_calls() const { return fast_ ? fast_->push_calls() : 0; }
  // new_group: non-members take part in the parent's split with no color
  // (torch passes the default group's bound device, which may be None).
  void perform_nocolor_split(std::optional<at::Device> device);
  // new_group: members create their communicator by splitting `parent`.
  void set_split_source(c10::intrusive_ptr<Backend> parent, int color);
  const c10::intrusive_ptr<GroupOptions>& options() const { return options_; }
  c10::cuda::CUDAStream stream();
  size_t pending_works() const;
  // Tests: the watchdog sleeps `pause` before its next sweep.
  void stall_watchdog(std::chrono::milliseconds pause);
  // The flight recorder's lines, oldest first (tests, debugging).
  std::vector<std::string> recorded_ops() const;
  // The error the group failed with ("" while it has not).
  std::string error_message() const;

  // Buffer view of a tensor: pointer, element count and NCCL type.  Complex
  // tensors are pairs of their real type.  Checks device and layout.
  struct Buf {
    void* ptr;
    size_t count;
    ncclDataType_t type;
  };
  Buf buf(const at::Tensor& t, const char* op) const;

 private:
  // What a caller asks of one op: its timeout, and whether it may complete
  // after the call returns (torch.distributed's async_op).
  struct CallOpts {
    std::chrono::milliseconds timeout;
    bool async_op = true;
    // The NaN check (nan_check.h) reads what this rank sends; false where
    // the buffer holds nothing sent (a broadcast's non-root ranks).
    bool sends = true;
    // all_to_all_single's split sizes, for the profiler's record (the
    // caller's vectors, alive for the call; null: none).
    const std::vector<int64_t>* in_splits = nullptr;
    const std::vector<int64_t>* out_splits = nullptr;
  };
  template <class O>
  static CallOpts call_opts(const O& o) {
    return CallOpts{o.timeout, o.asyncOp};
  }
  // Runs `fn(comm, stream, work)` on the caller's current stream (async_op
  // false) or on the backend stream after it has waited for the caller's;
  // see launch.h.
  template <class Fn>
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, at::Device device,
                                        std::vector<at::Tensor> inputs,
                                        std::vector<at::Tensor> outputs, CallOpts call,
                                        const char* what, Fn&& fn);
  at::Device pick_device(const at::Tensor* t) const;
  // communicator(): creates comm_ on `dev` unless it exists (init_mutex_).
  void create_communicator(at::Device dev);
  // The communicator a MemPool call acts on, after checking the pool.
  std::shared_ptr<Communicator> pool_communicator(at::cuda::MemPool* pool, const char* what);
  void adopt(std::shared_ptr<Communicator> comm, at::Device device);
  // Tells the communicator listener (backend/comm_listener.h) that the
  // communicator came up, or is about to go; each once, outside every lock.
  void announce(bool up);
  // Stops the allocator-segment and MemPool registrations on the
  // communicator (before it is finalized or aborted) and withdraws it.
  void retire_registrations();
  void check_healthy() const;
  void record_error(const std::string& msg, bool from_watchdog = false);
  // After a timeout (watchdog thread): the group, the op this rank waits in,
  // and what the other ranks were doing (desync.h).
  std::string explain_timeout(uint64_t at);
  // Reduce op for `t`; PreMulSum ops are queued for destruction after the
  // enqueue (or after the coalescing group ends).
  ncclRedOp_t reduce_op(const c10d::ReduceOp& op, const at::Tensor& t,
                        ncclDataType_t type, Work& work, const char* what);
  void destroy_redops();
  // The fast path for the call being launched, or nullptr (off, or inside a
  // coalescing block, whose calls NCCL must group).
  fast::Engine* fast_path() const { return coalescing_ ? nullptr : fast_.get(); }
  // Runs an all_reduce as the push all-reduce where its arguments qualify
  // (fast/push.h).  False: NCCL's turn.
  bool pushed(Communicator& c, const Buf& b, ncclRedOp_t op, cudaStream_t s);
  std::chrono::milliseconds timeout_of(std::chrono::milliseconds t) const;

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<GroupOptions> options_;
  std::shared_ptr<Communicator> comm_;
  std::optional<c10::cuda::CUDAStream> stream_;
  std::unique_ptr<at::cuda::CUDAEvent> ready_event_; // reused for stream sync
  std::optional<at::Device> device_;
  // Declared before the watchdog, whose thread reads them.
  std::unique_ptr<CompletionHooks> hooks_;  // finished ops are reported here
  std::unique_ptr<FlightRecorder> recorder_;
  std::unique_ptr<DesyncReporter> desync_;
  std::unique_ptr<CallCheck> call_check_;  // after desync_: reads recorder_ too
  // The NaN check without a host wait (nan_watch.h); null when off or strict.
  // Works share it, for wait().
  std::shared_ptr<NanWatch> nan_watch_;
  std::unique_ptr<Watchdog> watchdog_;
  // null unless fast_path_max_bytes or push_max_bytes > 0
  std::unique_ptr<fast::Engine> fast_;
  std::mutex init_mutex_;
  std::atomic<uint64_t> seq_{0};
  uint64_t uid_counter_ = 0;
  mutable std::mutex error_mutex_;
  std::string error_;
  std::atomic<bool> failed_{false};
  bool timed_out_ = false;
  bool watchdog_error_ = false;  // error_ came from the watchdog, not abort()/shutdown()
  std::shared_ptr<GroupInfo> info_;
  EphemeralTimeouts ephemeral_;
  std::atomic<bool> timing_{false};
  bool estimating_ = false;  // inside startTimeEstimate .. endTimeEstimate
  // The record_param_comms description of this group (profiling.h).
  profiling::GroupDescription describe() const;
  std::atomic<bool> announced_{false};
  uintptr_t announced_comm_ = 0;  // the ncclComm_t announced

  c10::intrusive_ptr<Backend> split_parent_;
  int split_color_ = -1;

  // Coalescing block (startCoalescing .. endCoalescing).
  bool coalescing_ = false;
  bool group_open_ = false;  // ncclGroupStart called for the open block
  // Inside a block: opens NCCL's group once the communicator exists.
  void open_group();
  c10::intrusive_ptr<Work> coalesced_;
  std::vector<ncclRedOp_t> redops_;

  // Caching pool behind allocateTensor (created on first use).
  std::mutex pool_mutex_;
  std::unique_ptr<at::cuda::MemPool> pool_;
};

} // namespace nccl_core
