// Communicator creation: ncclCommInitRankConfig (bounded in time, blocking
// or not), children by ncclCommSplit / ncclCommShrink, and larger
// communicators by ncclCommGrow.  The rest of the
// Communicator (lifetime, resources, errors) is in communicator.cpp.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "comm/communicator.h"
#include "comm/device_scope.h"
#include "comm/bounded_call.h"
#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/seam.h"

namespace nccl_core {

namespace {

ncclConfig_t to_nccl(const CommConfig& c) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = c.blocking ? 1 : 0;
  config.cgaClusterSize = c.cga_cluster_size;
  config.minCTAs = c.min_ctas;
  config.maxCTAs = c.max_ctas;
  config.splitShare = c.split_share;
  config.CTAPolicy = c.cta_policy;
  config.trafficClass = c.traffic_class;
  config.netName = c.net_name.empty() ? nullptr : c.net_name.c_str();
  config.commName = c.comm_name.empty() ? nullptr : c.comm_name.c_str();
  return config;
}

// Polls a freshly created/split comm; aborts and throws on error or timeout.
void await_comm(ncclComm_t comm, std::chrono::milliseconds timeout,
                const char* what) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(10);
  while (true) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = nccl().CommGetAsyncError(comm, &state);
    if (r != ncclSuccess) {
      state = r;
    }
    if (state == ncclSuccess) {
      return;
    }
    if (state != ncclInProgress) {
      std::string last = nccl().GetLastError(comm);
      (void)nccl().CommAbort(comm);
      throw NcclError(state, std::string(what) + " failed: " +
                                 nccl().GetErrorString(state) +
                                 (last.empty() ? "" : " (" + last + ")"));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      (void)nccl().CommAbort(comm);
      throw NcclError(
          ncclInProgress,
          std::string(what) + " did not complete within " +
              std::to_string(timeout.count()) +
              " ms (a rank may be missing or stuck); communicator aborted");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

} // namespace

ncclUniqueId Communicator::new_unique_id() {
  ncclUniqueId id;
  NCCL_CORE_CHECK(nullptr, nccl().GetUniqueId(&id));
  return id;
}

std::shared_ptr<Communicator> Communicator::adopt(
    ncclComm_t comm, int device, std::chrono::milliseconds timeout,
    bool blocking, const char* what) {
  await_comm(comm, timeout, what);
  int nranks = 0, rank = 0;
  NCCL_CORE_CHECK(comm, nccl().CommCount(comm, &nranks));
  NCCL_CORE_CHECK(comm, nccl().CommUserRank(comm, &rank));
  return std::shared_ptr<Communicator>(
      new Communicator(comm, nranks, rank, device, timeout, blocking));
}

namespace {

// A blocking ncclCommInitRankConfig on a helper thread, so that the caller
// can give up after `timeout` (there is no handle to abort yet).  A late
// result of an abandoned init is aborted by the helper itself.
// `start(&comm, &config)` makes the call (ncclCommInitRankConfig, or
// ncclCommGrow from a new rank), named `what`; the helper keeps a copy.
template <class Start>
ncclComm_t init_bounded(const char* what, Start start, int device, const CommConfig& config,
                        std::chrono::milliseconds timeout) {
  struct Job {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false, abandoned = false;
    ncclComm_t comm = nullptr;
    ncclResult_t result = ncclSuccess;
    std::string last;
  };
  auto job = std::make_shared<Job>();
  std::thread([job, start, device, config] {
    if (device >= 0) {  // none for the lab's fake NCCL (device_scope.h)
      (void)cudaSetDevice(device);
    }
    ncclConfig_t cfg = to_nccl(config);
    ncclComm_t comm = nullptr;
    ncclResult_t r = start(&comm, &cfg);
    const char* last = nccl().GetLastError(comm);
    std::lock_guard<std::mutex> lock(job->mutex);
    job->comm = comm;
    job->result = r;
    job->last = last == nullptr ? "" : last;
    job->done = true;
    if (job->abandoned && comm != nullptr) {
      (void)nccl().CommAbort(comm);
    }
    job->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(job->mutex);
  if (!job->cv.wait_for(lock, timeout, [&] { return job->done; })) {
    job->abandoned = true;
    throw NcclError(ncclInProgress,
                    std::string(what) + " did not complete within " +
                        std::to_string(timeout.count()) + " ms (a rank may be missing or stuck)");
  }
  if (job->result != ncclSuccess) {
    if (job->comm != nullptr) {
      (void)nccl().CommAbort(job->comm);
    }
    throw NcclError(job->result, std::string(what) + " failed: " +
                                     nccl().GetErrorString(job->result) +
                                     (job->last.empty() ? "" : " (" + job->last + ")"));
  }
  return job->comm;
}

} // namespace

namespace {

// The handle of a new communicator from `start`: made on a helper thread,
// bounded by `timeout`, where the config blocks; else started here, for
// adopt to await.
template <class Start>
ncclComm_t start_comm(const char* what, const Start& start, int device, const CommConfig& config,
                      std::chrono::milliseconds timeout) {
  if (config.blocking) {
    return init_bounded(what, start, device, config, timeout);
  }
  ncclConfig_t cfg = to_nccl(config);
  ncclComm_t comm = nullptr;
  ncclResult_t r = start(&comm, &cfg);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (comm != nullptr) {
      (void)nccl().CommAbort(comm);
    }
    api::check(r, what, nullptr);
  }
  return comm;
}

}  // namespace

std::shared_ptr<Communicator> Communicator::create(
    const ncclUniqueId& id, int nranks, int rank, int device,
    const CommConfig& config, std::chrono::milliseconds timeout) {
  const char* what = "ncclCommInitRankConfig";
  DeviceScope scope(device);
  // By value: an abandoned init's helper thread outlives this call.
  auto start = [id, nranks, rank](ncclComm_t* comm, ncclConfig_t* cfg) {
    return nccl().CommInitRankConfig(comm, nranks, id, rank, cfg);
  };
  return adopt(start_comm(what, start, device, config, timeout), device, timeout,
               config.blocking, what);
}

std::shared_ptr<Communicator> Communicator::null_communicator() {
  auto c = std::shared_ptr<Communicator>(
      new Communicator(nullptr, 0, -1, -1, std::chrono::milliseconds(0), true));
  c->state_ = State::Null;
  return c;
}

ncclUniqueId Communicator::grow_unique_id() {
  nccl().require("ncclCommGetUniqueId", "Communicator.get_unique_id", newer::kGrowVersion);
  ncclUniqueId id;
  ncclComm_t comm = get();
  NCCL_CORE_CHECK(comm, nccl().CommGetUniqueId(comm, &id));
  return id;
}

std::shared_ptr<Communicator> Communicator::grow(int nranks, const ncclUniqueId* id,
                                                 const CommConfig& config,
                                                 std::chrono::milliseconds timeout) {
  nccl().require("ncclCommGrow", "Communicator.grow", newer::kGrowVersion);
  NCCL_CORE_REQUIRE(nranks > nranks_, "grow to ", nranks, " ranks: the communicator has ",
                    nranks_, " already; grow adds ranks");
  DeviceScope scope(device_);
  ncclConfig_t cfg = to_nccl(config);
  ncclComm_t parent = get();
  auto child = make_child("ncclCommGrow", config.blocking, timeout, [&](ncclComm_t* out) {
    return nccl().CommGrow(parent, nranks, id, -1, out, &cfg);
  });
  if (!child) {
    throw NcclError(ncclInternalError, "ncclCommGrow produced no communicator for this rank");
  }
  return child;
}

std::shared_ptr<Communicator> Communicator::join_grow(const ncclUniqueId& id, int nranks,
                                                      int rank, int device,
                                                      const CommConfig& config,
                                                      std::chrono::milliseconds timeout) {
  nccl().require("ncclCommGrow", "Communicator.grow", newer::kGrowVersion);
  NCCL_CORE_REQUIRE(rank >= 0 && rank < nranks, "grow: rank ", rank,
                    " is outside the grown communicator of ", nranks, " ranks");
  const char* what = "ncclCommGrow";
  DeviceScope scope(device);
  auto start = [id, nranks, rank](ncclComm_t* comm, ncclConfig_t* cfg) {  // by value, as above
    return nccl().CommGrow(nullptr, nranks, &id, rank, comm, cfg);
  };
  return adopt(start_comm(what, start, device, config, timeout), device, timeout,
               config.blocking, what);
}

template <class F>
std::shared_ptr<Communicator> Communicator::make_child(const char* what, bool blocking,
                                                       std::chrono::milliseconds timeout,
                                                       F&& start) {
  ncclComm_t parent = get();
  ncclComm_t child = nullptr;
  if (blocking_ && blocking) {
    // Collective on the parent: bounded like any blocking host call.  A
    // non-blocking child (or parent) hands out the child asynchronously.
    BoundedCall guard = bounded(what);
    ncclResult_t r = start(&child);
    guard.rethrow_if_expired();
    api::check(r, what, parent);
  } else {
    ncclResult_t r = start(&child);
    if (r != ncclSuccess && r != ncclInProgress) {
      api::check(r, what, parent);
    }
    // A non-blocking parent hands out the child only when the job finishes;
    // polling the parent completes that job.  After NCCL_SHRINK_ABORT the
    // parent may report an error, so wait on the handle itself.
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      ncclResult_t state = ncclSuccess;
      (void)nccl().CommGetAsyncError(parent, &state);
      if (__atomic_load_n(&child, __ATOMIC_ACQUIRE) != nullptr) {
        break;
      }
      if (state == ncclSuccess) {
        return nullptr;  // NCCL_SPLIT_NOCOLOR: finished without a child
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw NcclError(ncclInProgress, std::string(what) + " did not produce a communicator within " +
                                            std::to_string(timeout.count()) + " ms");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (child == nullptr) {
    return nullptr;
  }
  return adopt(child, device_, timeout, blocking, what);
}

std::shared_ptr<Communicator> Communicator::split(
    int color, int key, const CommConfig& config,
    std::chrono::milliseconds timeout) {
  DeviceScope scope(device_);
  ncclConfig_t cfg = to_nccl(config);
  ncclComm_t parent = get();
  splits_.fetch_add(1);
  return make_child("ncclCommSplit", config.blocking, timeout, [&](ncclComm_t* child) {
    return nccl().CommSplit(parent, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, child, &cfg);
  });
}

std::shared_ptr<Communicator> Communicator::shrink(
    const std::vector<int>& exclude, int flags, const CommConfig& config,
    std::chrono::milliseconds timeout) {
  // NCCL refuses an empty list ("excludeRanksList argument is NULL"):
  // named here, for both surfaces (dist: ValueError; raw: NcclInvalid).
  NCCL_CORE_REQUIRE(!exclude.empty(),
                    "shrink: the list of ranks to exclude (exclude_ranks, ranks_to_exclude) "
                    "names no rank: ncclCommShrink removes at least one (the remaining ranks "
                    "call shrink, the excluded ones do not)");
  DeviceScope scope(device_);
  ncclConfig_t cfg = to_nccl(config);
  ncclComm_t parent = get();
  if (flags & NCCL_SHRINK_ABORT) {
    // NCCL aborts the parent's kernels; ours must stop waiting as well.
    raise_abort_flag();
  }
  std::vector<int> ranks(exclude);
  auto child = make_child("ncclCommShrink", config.blocking, timeout, [&](ncclComm_t* out) {
    return nccl().CommShrink(parent, ranks.data(), static_cast<int>(ranks.size()), out, &cfg, flags);
  });
  if (!child) {
    throw NcclError(ncclInternalError, "ncclCommShrink produced no communicator for this rank");
  }
  return child;
}

} // namespace nccl_core
