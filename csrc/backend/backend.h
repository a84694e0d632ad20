// csrc/backend: nccl_core's c10d::Backend, which turns torch.distributed
// calls into NCCL calls on one Communicator.  Lifecycle in backend.cpp (its
// end, abort and shutdown, in teardown.cpp), new
// groups from this one (split, shrink) in splits.cpp, a group grown from a
// smaller one there too, a new communicator over
// other members (torch >= 2.15's reconfigure) in reconfigure.cpp and
// membership.h; the operations in collectives.cpp, gathers.cpp and p2p.cpp
// (point-to-point, all-to-all, coalescing), one-sided windows in
// group_window.h; the stream/event discipline shared by every op
// is `launch` in launch.h, its steps in op_call.cpp; each call's argument
// checks in collectives/torch_checks.h; the program's handle of an op is Work
// (work.h).  The systems it owns live in their own folders below it: op/,
// failures/, tooling/, registration/.
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

#include "backend/call_args.h"
#include "backend/comm_source.h"
#include "backend/membership.h"
#include "backend/op_call.h"
#include "backend/options.h"
#include "backend/work.h"
#include "comm/communicator.h"
#include "failures/group_failures.h"
#include "nvlink/shared_engine.h"
#include "tooling/completion_hooks.h"
#include "tooling/profiling.h"

namespace nccl_core {

struct OpSteps;  // op_call.h

// Lifecycle and dispatch: torch.distributed's calls in, NCCL calls and Works
// out.  What it owns that is a system of its own sits behind one member:
// failures_ (csrc/failures), hooks_ (csrc/tooling), fast_ (csrc/nvlink).
class Backend : public c10d::Backend {
  friend struct OpSteps;  // launch's steps, which read the group's state (op_call.h)
 public:
  Backend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
          c10::intrusive_ptr<GroupOptions> options);
  ~Backend() override;
  // --- backend.cpp, splits.cpp: the group's life --------------------------
  const std::string getBackendName() const override { return "nccl_core"; }
  BackendOptionsPtr getBackendOptions() override;
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  bool supportsShrinking() const override { return true; }
  BackendPtr shrink(const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,  // ncclCommShrink
                    const BackendOptionsPtr& opts_override) override;
  BackendPtr split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                   const BackendOptionsPtr& opts) override;
  void setTimeout(std::chrono::milliseconds timeout) override;
  void eagerConnectSingleDevice(at::Device device) override;
  uint64_t getSequenceNumberForGroup() override;
  void setSequenceNumberForGroup() override;
  c10d::ErrorType getError() override;
  void abort() override;  // the program's abort hooks first, then abort_communicator()
  void revoke();  // ncclCommRevoke; pending and later works fail (teardown.cpp)
  void shutdown() override;
  void setBoundDeviceId(std::optional<at::Device> d) NCCL_CORE_OVERRIDE_215;  // the comm's device

  // --- collectives.cpp, gathers.cpp ---------------------------------------
  WorkPtr broadcast(Tensors& t, const c10d::BroadcastOptions& o) override;
  WorkPtr allreduce(Tensors& t, const c10d::AllreduceOptions& o) override;
  WorkPtr allreduce_coalesced(Tensors& t, const c10d::AllreduceCoalescedOptions& o) override;
  WorkPtr reduce(Tensors& t, const c10d::ReduceOptions& o) override;
  WorkPtr allgather(TensorLists& out, Tensors& in, const c10d::AllgatherOptions& o) override;
  WorkPtr _allgather_base(at::Tensor& out, at::Tensor& in, const c10d::AllgatherOptions& o) override;
  WorkPtr allgather_coalesced(TensorLists& out, Tensors& in, const c10d::AllgatherOptions& o) override;
  WorkPtr allgather_into_tensor_coalesced(Tensors& out, Tensors& in,
                                          const c10d::AllgatherOptions& o) override;
  WorkPtr gather(TensorLists& out, Tensors& in, const c10d::GatherOptions& o) override;
  WorkPtr scatter(Tensors& out, TensorLists& in, const c10d::ScatterOptions& o) override;
  WorkPtr reduce_scatter(Tensors& out, TensorLists& in, const c10d::ReduceScatterOptions& o) override;
  WorkPtr _reduce_scatter_base(at::Tensor& out, at::Tensor& in,
                               const c10d::ReduceScatterOptions& o) override;
  WorkPtr reduce_scatter_tensor_coalesced(Tensors& out, Tensors& in,
                                          const c10d::ReduceScatterOptions& o) override;
  WorkPtr barrier(const c10d::BarrierOptions& o) override;

  // --- p2p.cpp: point-to-point, all-to-all, coalescing ---------------------
  WorkPtr alltoall_base(at::Tensor& out, at::Tensor& in, std::vector<int64_t>& out_splits,
                        std::vector<int64_t>& in_splits, const c10d::AllToAllOptions& o) override;
  WorkPtr alltoall(Tensors& out, Tensors& in, const c10d::AllToAllOptions& o) override;
  WorkPtr send(Tensors& t, int dst, int tag) override;
  WorkPtr recv(Tensors& t, int src, int tag) override;
  WorkPtr recvAnysource(Tensors& t, int tag) override;
  void startCoalescing() override;
  WorkPtr endCoalescing() override;

  // --- mem_pools.cpp: NCCL memory; MemPools registered (as registerMemPool)
  std::shared_ptr<c10::Allocator> getMemAllocator() override;
  at::Tensor allocateTensor(long size, at::TensorOptions options = {}) override;
  bool supportsTensorAlloc(c10::DeviceIndex device) override;
  void register_mem_pool(at::cuda::MemPool* pool, bool symm = false);
  void deregister_mem_pool(at::cuda::MemPool* pool);
  // (segments, bytes, windows) registered now, of `pool` if given (tests):
  std::tuple<size_t, size_t, size_t> registered_segments(at::cuda::MemPool* pool) const;

  // --- torch_tools.cpp: what torch's NCCL users reach for ------------------
  void enableCollectivesTiming() override;  // op_timing.h
  bool timing_enabled() const { return timing_.load(std::memory_order_relaxed); }
  void registerOnCompletionHook(std::function<void(std::shared_ptr<c10d::WorkInfo>)>&& hook) override;
  void waitForPendingWorks() override;  // every op issued so far has ended
  bool supportsTimeEstimation() const override { return true; }  // ops in between only simulated
  void startTimeEstimate() NCCL_CORE_OVERRIDE_215;
  float endTimeEstimate() NCCL_CORE_OVERRIDE_215;

  // --- torch >= 2.15's hooks: torch_tools.cpp, gathers.cpp, reconfigure.cpp,
  // group_window.cpp --------------------------------------------------------
#if NCCL_CORE_TORCH >= 215
  void addEphemeralTimeout(const std::chrono::milliseconds& t) override { failures_->ephemeral().add(t); }
  bool supportsCompletionHooks() const override { return true; }
  void registerCompletionHook(int64_t hook_id, c10d::CompletionHook hook) override;
  void unregisterCompletionHook(int64_t hook_id) override;
  bool supportsAbortHooks() const override { return true; }
  void registerAbortHook(int64_t hook_id, c10d::AbortHook hook) override;
  void unregisterAbortHook(int64_t hook_id) override;
  std::unordered_map<std::string, uint64_t> getMemoryStats() override;  // NCCL >= 2.29.7 ...
  void suspend() override { live_comm("suspend").suspend(newer::kSuspendMem); }
  void resume() override { live_comm("resume").resume(); }  // ... as suspend, resume
  bool isInitialized() override { return has_communicator(); }  // split_group asks the parent
  WorkPtr gather_into_tensor(at::Tensor& out, at::Tensor& in,  // dist.gather_single
                             const c10d::GatherOptions& o) override;
  bool supportsReconfigure() const override;  // ncclCommRevoke is there (2.28.7)
  c10d::ReconfigureHandle get_reconfigure_handle() const override;
  WorkPtr reconfigure(const c10d::ReconfigureOptions& opts) override;
  bool supportsWindow() const override { return true; }
  c10::intrusive_ptr<c10d::Window> new_window(const std::optional<at::Tensor>& tensor) override;
#endif

  // --- beyond c10d ----------------------------------------------------------
  // The communicator on `device`, made at first use; live_comm: the one made.
  std::shared_ptr<Communicator> communicator(std::optional<at::Device> device = std::nullopt);
  Communicator& live_comm(const char* what) const;
  bool has_communicator() const { return comm_ != nullptr; }
  GroupFailures& failures() { return *failures_; }
  const nvlink::Engine* fast_engine() const { return fast_ ? &fast_->engine : nullptr; }  // or null
  void perform_nocolor_split(std::optional<at::Device> device);  // new_group's non-members
  void set_split_source(c10::intrusive_ptr<Backend> parent, int color);  // and its members
  void set_grow_source(GrowSource source);  // nc.grow_group's ranks (splits.cpp)
  const c10::intrusive_ptr<GroupOptions>& options() const { return options_; }
  c10::cuda::CUDAStream stream();
  size_t pending_works() const;
  Buf buf(const at::Tensor& t, const char* op) const;  // checks device, layout
  NextCollConfig next_coll_config;  // nc.coll_config(...)'s (op_call.h); locks itself

 private:
  // fn(comm, stream, work) on the caller's stream or the group's (launch.h).
  template <class Fn>
  WorkPtr launch(c10d::OpType type, at::Device device, Tensors inputs, Tensors outputs,
                 CallOpts call, const char* what, Fn&& fn);
  at::Device pick_device(const at::Tensor* t) const;
  void create_communicator(at::Device dev);  // under init_mutex_
  // Rank 0 publishes a fresh unique id under `key`; the others wait for it.
  ncclUniqueId unique_id(const std::string& key, std::chrono::milliseconds timeout);
  void adopt(std::shared_ptr<Communicator> comm, at::Device device);
  std::shared_ptr<Communicator> pool_communicator(at::cuda::MemPool* pool, const char* what);
  void announce(bool up);  // to the communicator listener: up, or about to go
  void retire_registrations();  // segment registrations stop; announce(false)
  void check_healthy() const;
  void abort_communicator();  // pending works fail, the communicator aborts, the watchdog stops
#if NCCL_CORE_TORCH >= 215
  friend class GroupWindow;  // its put / signal (`sends`) and wait_signal as Works:
  WorkPtr one_sided(bool sends, Tensors inputs, CallOpts call, const char* what,
                    const std::function<void(Communicator&, cudaStream_t)>& fn);
  void end_communicator(const std::string& why);  // reconfigure
#endif
  ncclRedOp_t reduce_op(const c10d::ReduceOp& op, const at::Tensor& t, ncclDataType_t type,
                        Work& work, const char* what);
  void destroy_redops();  // the PreMulSum ops, after the enqueue or the block
  // The fast path, or nullptr (off, coalescing, a configured call: op_call.cpp).
  nvlink::Engine* fast_path() const;
  std::chrono::milliseconds timeout_of(std::chrono::milliseconds t) const;
  profiling::GroupDescription describe() const;  // record_param_comms
  void open_group();  // in a coalescing block, once the communicator exists

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<GroupOptions> options_;
  std::shared_ptr<GroupInfo> info_;
  std::unique_ptr<CompletionHooks> hooks_;  // before failures_: its watchdog calls it
  std::shared_ptr<AbortHooks> abort_hooks_;  // the program's; every GroupFailures runs them
  std::unique_ptr<GroupFailures> failures_;
  std::shared_ptr<nvlink::SharedEngine> fast_;  // the communicator's; null if all paths are NCCL
  std::shared_ptr<Communicator> comm_;
  std::optional<c10::cuda::CUDAStream> stream_;
  std::unique_ptr<at::cuda::CUDAEvent> ready_event_;  // reused for stream sync
  std::optional<at::Device> device_;
  std::mutex init_mutex_;
  std::atomic<uint64_t> seq_{0};          // every op
  std::atomic<uint64_t> collectives_{0};  // collectives only (not send/recv)
  uint64_t uid_counter_ = 0;
  std::atomic<bool> timing_{false};
  bool estimating_ = false;  // inside startTimeEstimate .. endTimeEstimate
  std::atomic<bool> announced_{false};
  uintptr_t announced_comm_ = 0;
  CommSource source_;  // a split or grow parent, until the communicator exists
  bool coalescing_ = false;  // startCoalescing .. endCoalescing
  bool group_open_ = false;  // ncclGroupStart called for the open block
  c10::intrusive_ptr<Work> coalesced_;
  std::vector<ncclRedOp_t> redops_;
  membership::Generations generations_;  // reconfigure: this process's handle, uuids used
  std::mutex pool_mutex_;  // allocateTensor's caching pool, made at first use
  std::unique_ptr<at::cuda::MemPool> pool_;
};

}  // namespace nccl_core
