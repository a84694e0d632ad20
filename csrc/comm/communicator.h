// Communicator: the single owner of an ncclComm_t.
//
// Blocking by default: on a non-blocking communicator NCCL runs every
// ncclGroupEnd (every collective) on a new thread, ~100 µs per call.  The
// calls that can wait on a missing rank stay bounded by the timeout anyway:
// init runs on a helper thread we wait for, and the rest run inside a
// BoundedCall scope (bounded_call.h).  CommConfig::blocking = false selects NCCL's
// non-blocking mode, where we poll with the same deadline.
// Lifecycle transitions (finalize, destroy, abort) are idempotent; after any
// of them `get()` raises instead of handing out a dangling handle.
//
// Its definitions, one concern a file: state and errors (communicator.cpp),
// creation, split and shrink (creation.cpp), bounded waits (waits.cpp), the
// end of its life (lifetime.cpp), host calls in flight (host_uses.cpp), the
// list of its resources (resource_list.cpp).
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/bounded_call.h"
#include "nccl/newer_than_2_28.h"
#include "memory/mapped_host.h"

namespace nccl_core {

// User-settable fields of ncclConfig_t; INT_MIN / empty = NCCL's default.
struct CommConfig {
  int cga_cluster_size = INT_MIN;
  int min_ctas = INT_MIN;
  int max_ctas = INT_MIN;
  int split_share = INT_MIN;
  int cta_policy = INT_MIN;
  int traffic_class = INT_MIN;
  std::string net_name;
  std::string comm_name;
  bool blocking = true;
};

class Resource;

class Communicator : public Abortable, public std::enable_shared_from_this<Communicator> {
 public:
  // Null: nccl.core's `Communicator()`, no handle; it only joins a grow.
  enum class State { Live, Finalized, Destroyed, Aborted, Null };

  // A host call using the handle from a thread of the user's (a raw or
  // one-sided operation, a group waiting for group_end).  finalize() and
  // destroy() wait until every Use has left before they release anything;
  // abort() waits a short grace (kAbortGrace) for calls that are only
  // enqueueing, then aborts anyway, since its purpose is to end calls stuck
  // on peers.  Taking a Use once the communicator is closing or dead throws
  // NcclInvalid.  Costs two atomic operations.
  class Use {
   public:
    explicit Use(Communicator& c);
    ~Use() { leave(); }
    Use(Use&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
    Use& operator=(Use&& o) noexcept {
      if (this != &o) {
        leave();
        c_ = o.c_;
        o.c_ = nullptr;
      }
      return *this;
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    void leave() noexcept;
    Communicator* c_;
  };
  static constexpr std::chrono::milliseconds kAbortGrace{1000};

  // This thread's open NCCL group (group_start .. group_end, collectives/raw_ops.h)
  // holds a Use of each communicator its calls used until group_end has
  // launched the group, so that finalize, destroy or abort on another thread
  // wait for it; those ask held_by_open_group() to not wait for themselves.
  struct GroupHold {
    std::shared_ptr<Communicator> comm;
    Use use;
  };
  void hold_for_open_group();  // once per communicator and group
  bool held_by_open_group() const;
  // group_end: every hold of this thread's group, first used first.
  static std::vector<GroupHold> release_open_group();

  // ncclCommInitRankConfig; blocks (polling) until ready or `timeout`.
  static std::shared_ptr<Communicator> create(
      const ncclUniqueId& id, int nranks, int rank, int device,
      const CommConfig& config, std::chrono::milliseconds timeout);
  // 128-byte id from ncclGetUniqueId.
  static ncclUniqueId new_unique_id();

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // ncclCommSplit; color < 0 (NCCL_SPLIT_NOCOLOR) returns nullptr.  All ranks
  // of this communicator must call it.
  std::shared_ptr<Communicator> split(int color, int key,
                                      const CommConfig& config,
                                      std::chrono::milliseconds timeout);
  // ncclCommShrink (NCCL >= 2.27): a new communicator without `exclude`.
  // ncclCommGrow (2.29.2, creation.cpp): the existing ranks come first;
  // `id` (grow_unique_id's) on the one rank that leads, null on the others.
  // A new rank joins from a null communicator.
  static std::shared_ptr<Communicator> null_communicator();
  ncclUniqueId grow_unique_id();  // ncclCommGetUniqueId
  std::shared_ptr<Communicator> grow(int nranks, const ncclUniqueId* id, const CommConfig& config,
                                     std::chrono::milliseconds timeout);
  static std::shared_ptr<Communicator> join_grow(const ncclUniqueId& id, int nranks, int rank,
                                                 int device, const CommConfig& config,
                                                 std::chrono::milliseconds timeout);
  std::shared_ptr<Communicator> shrink(const std::vector<int>& exclude,
                                       int flags, const CommConfig& config,
                                       std::chrono::milliseconds timeout);

  // Live handle; throws NcclInvalid once finalized, destroyed or aborted.
  ncclComm_t get() const;
  bool is_live() const { return state_.load() == State::Live; }
  bool is_null() const { return state_.load() == State::Null; }  // null_communicator()
  State state() const { return state_.load(); }

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }

  // Checks an NCCL result for this communicator; waits out ncclInProgress.
  void call(ncclResult_t result, const char* what);
  // Runs `f` (one NCCL call returning ncclResult_t) bounded by the timeout
  // (see bounded_call.h), then checks its result like call().
  template <class F>
  void run(const char* what, F&& f) {
    BoundedCall guard = bounded(what);
    ncclResult_t r = f();
    guard.rethrow_if_expired();
    call(r, what);
  }
  bool blocking() const { return blocking_; }
  // A BoundedCall scope for the call `what` on this communicator (bounded_call.h).
  BoundedCall bounded(const char* what) {
    if (!blocking_) {
      return BoundedCall({}, false, {}, what);  // polls with its own deadline: no monitor
    }
    return BoundedCall(weak_from_this(), true, timeout(), what);
  }
  // NCCL 2.29.x has been seen to fail a window registration that is the
  // communicator's very first operation.  Window::create calls this first:
  // on NCCL >= 2.29 the first call runs one tiny all-reduce (collective, like
  // the registration that follows, so every rank does it at the same point).
  void warm_up_for_windows();
  // Every rank's `value`, by rank: one ncclAllGather on a private stream,
  // waited for (collective: every rank calls it at the same point).  For
  // layouts exchanged at registration (window sizes).
  std::vector<size_t> all_gather_sizes(size_t value, const char* what);
  // Whether every rank can load and store every other rank's window memory
  // (one LSA team spans the communicator: one NVLink domain).  False on an
  // NCCL without the device API.  The same answer on every rank.
  bool lsa_spans_all();
  // Polls ncclCommGetAsyncError until the comm is no longer in progress.
  void wait_ready(const char* what);
  // The host waits for everything queued on `stream` so far, where that
  // includes a collective of this communicator (a peer may never join): up
  // to the timeout, watching NCCL's asynchronous error meanwhile.  At the
  // timeout the communicator is aborted (which ends the stuck kernel) and
  // NcclError names `what`, as wait_ready does.
  void wait_stream(cudaStream_t stream, const char* what);

  ncclResult_t async_error() const;
  std::string last_error() const;
  // ncclCommMemStats (NCCL >= 2.29.7).
  uint64_t mem_stat(newer::MemStat stat) const;
  // Every statistic by torch's getMemoryStats names (gpu_mem_suspend, ...).
  std::unordered_map<std::string, uint64_t> mem_stats() const;
  // ncclCommSuspend / ncclCommResume (NCCL >= 2.29.7): `flags`
  // (NCCL_SUSPEND_MEM) releases the communicator's suspendable device
  // memory until resume(); the group's collectives wait for resume().
  void suspend(int flags);
  void resume();
  // ncclCommRevoke (NCCL >= 2.28.7): stops the operations in flight; the
  // communicator stays live for destroy(), split and shrink, but finalize()
  // is refused from now on, as NCCL forbids it.  `flags` is reserved (0).
  void revoke(int flags);
  bool revoked() const { return revoked_.load(); }
  // ncclCommSplit calls made on this communicator (color or no color).
  uint64_t split_count() const { return splits_.load(); }

  // Best-effort cudaDeviceSynchronize on this device (relaxed capture
  // mode, errors cleared), waited for up to the timeout: before memory that
  // a resource kept mapped or alive is released, no queued kernel may still
  // use it.  False when the device was still busy at the timeout.
  bool quiesce() noexcept;

  // Resources (resources.h).  The communicator owns every resource created
  // on it until the resource is closed.
  void track(std::shared_ptr<Resource> resource);
  void untrack(const Resource* resource);
  size_t resource_count() const;
  // The tracked resources now (a copy; closed ones may follow).
  std::vector<std::shared_ptr<Resource>> resources() const;
  // Closes every tracked resource, ignoring errors; idempotent.
  void close_all_resources() noexcept;
  // Two kinds of per-communicator state of the layers above, by key:
  // an attachment is a Resource (the RMA signal area), closed with the
  // communicator's resources; nullptr when absent or closed.
  std::shared_ptr<Resource> attachment(const std::string& key) const;
  void attach(const std::string& key, std::shared_ptr<Resource> resource);
  // An extension is any object that lives as long as the communicator and is
  // never closed (the nvlink engine, whose own windows are resources):
  // the one under `key`, made by `make` at the first request.  `make` runs
  // under the communicator's resource lock: it must not ask for resources.
  std::shared_ptr<void> extension(const std::string& key,
                                  const std::function<std::shared_ptr<void>()>& make);
  // The one under `key`, or nullptr.
  std::shared_ptr<void> extension(const std::string& key) const;

  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Each of these first releases every resource.
  // Flushes outstanding work, then destroys (ncclCommFinalize + Destroy).
  void finalize();
  // ncclCommDestroy without finalize: for communicators with no pending work.
  void destroy();
  // ncclCommAbort: safe from any thread, unblocks calls in flight.  NCCL
  // frees the resources itself; they are marked closed afterwards.
  void abort() noexcept override;

  // Device address of a host-mapped word that the extension's own kernels
  // poll while they wait on peers (nvlink/kernels.cu).  abort() sets it before
  // ncclCommAbort, so such a kernel ends instead of spinning forever (NCCL
  // does the same for its own kernels).  Allocated at the first request.
  const volatile int* abort_flag();
  // `drain` runs in abort(), after the abort flag is up and before
  // ncclCommAbort: a user of memory that NCCL maps (the fast path's scratch
  // window) waits there until its kernels have left that memory.
  void before_abort(std::function<void()> drain);
  // `drain` runs first in close_all_resources (so in finalize and destroy):
  // a user of memory that a resource maps (the fast path's windows) waits
  // there until its kernels have left that memory.
  void before_close(std::function<void()> drain);

 private:
  // abort(): marks every tracked resource closed (NCCL freed them); in
  // resources.cpp with the rest of the resource list.
  void forget_all_resources() noexcept;
  // Polls with backoff: each round reads NCCL's asynchronous state once,
  // raises an error it shows, and stops once `done(state)` holds; past the
  // timeout aborts the communicator and throws NcclError: `what` + `stuck` +
  // the timeout in ms.
  void poll_bounded(const char* what, const char* stuck,
                    const std::function<bool(ncclResult_t)>& done);
  // finalize() (flush: ncclCommFinalize first) and destroy(): the gate,
  // the resources, then ncclCommDestroy.
  void end_life(const char* what, bool flush);
  Communicator(ncclComm_t comm, int nranks, int rank, int device,
               std::chrono::milliseconds timeout, bool blocking);
  static std::shared_ptr<Communicator> adopt(ncclComm_t comm, int device,
                                             std::chrono::milliseconds timeout,
                                             bool blocking, const char* what);
  // ncclCommShrink / ncclCommSplit: `start` issues the call into `child`.
  void raise_abort_flag() noexcept;
  template <class F>
  std::shared_ptr<Communicator> make_child(const char* what, bool blocking,
                                           std::chrono::milliseconds timeout, F&& start);
  // Waits until at most `own` Uses remain (those of the calling thread's
  // open group), up to `limit`; false on expiry.
  bool wait_for_users(int own, std::chrono::milliseconds limit);
  // finalize/destroy: refuses new Uses and waits for the others to leave.
  void close_gate(const char* what);

  ncclComm_t comm_;
  const int nranks_;
  const int rank_;
  const int device_;
  const bool blocking_;
  std::atomic<bool> warmed_up_{false};
  std::atomic<uint64_t> splits_{0};
  std::atomic<int> lsa_spans_all_{-1};  // -1 not asked yet
  std::atomic<std::chrono::milliseconds> timeout_;
  std::atomic<State> state_{State::Live};
  std::atomic<int> users_{0};
  std::atomic<bool> closing_{false};
  std::atomic<bool> revoked_{false};
  std::mutex users_mutex_;
  std::condition_variable users_cv_;
  std::mutex lifecycle_mutex_;
  mutable std::mutex resources_mutex_;
  std::vector<std::shared_ptr<Resource>> resources_;
  std::vector<std::pair<std::string, std::weak_ptr<Resource>>> attachments_;
  std::mutex abort_flag_mutex_;
  std::unique_ptr<MappedHost> abort_flag_mem_;  // under abort_flag_mutex_; made once
  std::atomic<int*> abort_flag_host_{nullptr};  // abort_flag_mem_'s host view
  std::mutex before_abort_mutex_;
  std::vector<std::function<void()>> before_abort_;
  std::vector<std::function<void()>> before_close_;  // under before_abort_mutex_
  // Last: they end first, while the communicator is whole.
  std::unordered_map<std::string, std::shared_ptr<void>> extensions_;  // under resources_mutex_
};

} // namespace nccl_core
