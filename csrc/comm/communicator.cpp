#include "comm/communicator.h"

#include <functional>
#include <thread>

#include "comm/device_scope.h"
#include "nccl/agreements.h"
#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/seam.h"

namespace nccl_core {

Communicator::Communicator(ncclComm_t comm, int nranks, int rank, int device,
                           std::chrono::milliseconds timeout, bool blocking)
    : comm_(comm),
      nranks_(nranks),
      rank_(rank),
      device_(device),
      blocking_(blocking),
      timeout_(timeout) {}

Communicator::~Communicator() {
  // An owner that forgot to finalize must not leak the comm; abort never
  // blocks on peers, unlike destroy.
  abort();
}

void Communicator::raise_abort_flag() noexcept {
  if (int* flag = abort_flag_host_.load()) {
    *static_cast<volatile int*>(flag) = 1;
  }
}

const volatile int* Communicator::abort_flag() {
  std::lock_guard<std::mutex> lock(abort_flag_mutex_);
  if (!abort_flag_mem_) {
    DeviceScope scope(device_);
    abort_flag_mem_ = std::make_unique<MappedHost>(sizeof(int));
    int* host = static_cast<int*>(abort_flag_mem_->host());
    *static_cast<volatile int*>(host) = state_.load() == State::Aborted ? 1 : 0;
    abort_flag_host_ = host;
  }
  return static_cast<const volatile int*>(abort_flag_mem_->device());
}

void Communicator::before_abort(std::function<void()> drain) {
  std::lock_guard<std::mutex> lock(before_abort_mutex_);
  before_abort_.push_back(std::move(drain));
}

bool Communicator::lsa_spans_all() {
  int known = lsa_spans_all_.load();
  if (known < 0) {
    known = 0;
    int lsa_ranks = 0, lsa_rank = 0, stride = 0;
    if (nccl().provides("ncclTeamLsa") &&
        nccl().TeamLsa(get(), &lsa_ranks, &lsa_rank, &stride) == ncclSuccess) {
      known = lsa_ranks == nranks() ? 1 : 0;
    }
    lsa_spans_all_.store(known);
  }
  return known == 1;
}

namespace {

// A private stream and `bytes` of device memory, both released on every path
// (for the communicator's own small collectives at registration).
struct Scratch {
  cudaStream_t stream = nullptr;
  void* value = nullptr;
  Scratch() = default;
  // Separate from the constructor so the destructor runs if it throws.
  void init(size_t bytes) {
    NCCL_CORE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    NCCL_CORE_CUDA_CHECK(cudaMallocAsync(&value, bytes, stream));
    NCCL_CORE_CUDA_CHECK(cudaMemsetAsync(value, 0, bytes, stream));
  }
  ~Scratch() {
    if (value != nullptr) {
      (void)cudaFreeAsync(value, stream);
    }
    if (stream != nullptr) {
      (void)cudaStreamSynchronize(stream);
      (void)cudaStreamDestroy(stream);
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

}  // namespace

void Communicator::warm_up_for_windows() {
  if (warmed_up_.exchange(true) || api::loaded_version() < api::version_code(2, 29, 0)) {
    return;
  }
  DeviceScope scope(device_);
  Scratch s;
  s.init(sizeof(float));
  ncclComm_t c = get();
  run("ncclAllReduce (window warm-up)",
      [&] { return agreements::sum_one_float(static_cast<float*>(s.value), c, s.stream); });
  wait_stream(s.stream, "ncclAllReduce (window warm-up)");
}

std::vector<size_t> Communicator::all_gather_sizes(size_t value, const char* what) {
  DeviceScope scope(device_);
  Scratch s;
  s.init(sizeof(uint64_t) * static_cast<size_t>(nranks_));
  auto* all = static_cast<uint64_t*>(s.value);
  uint64_t mine = value;
  NCCL_CORE_CUDA_CHECK(cudaMemcpyAsync(all + rank_, &mine, sizeof(mine), cudaMemcpyHostToDevice,
                                       s.stream));
  ncclComm_t c = get();
  run(what, [&] { return agreements::gather_one_word(all, rank_, c, s.stream); });
  std::vector<uint64_t> host(static_cast<size_t>(nranks_));
  NCCL_CORE_CUDA_CHECK(cudaMemcpyAsync(host.data(), all, host.size() * sizeof(uint64_t),
                                       cudaMemcpyDeviceToHost, s.stream));
  wait_stream(s.stream, what);
  return std::vector<size_t>(host.begin(), host.end());
}

ncclComm_t Communicator::get() const {
  State s = state_.load();
  if (s != State::Live) {
    throw NcclInvalid(s == State::Aborted ? "communicator has been aborted"
                      : s == State::Null  ? "communicator is not initialized (Communicator())"
                                          : "communicator has been destroyed");
  }
  return comm_;
}

ncclResult_t Communicator::async_error() const {
  ncclResult_t state = ncclSuccess;
  NCCL_CORE_CHECK(comm_, nccl().CommGetAsyncError(get(), &state));
  return state;
}

std::string Communicator::last_error() const {
  const char* s = nccl().GetLastError(get());
  return s == nullptr ? "" : s;
}

uint64_t Communicator::mem_stat(newer::MemStat stat) const {
  nccl().require("ncclCommMemStats", "get_mem_stat", newer::kMemStatsVersion);
  uint64_t value = 0;
  ncclComm_t comm = get();
  NCCL_CORE_CHECK(comm, nccl().CommMemStats(comm, static_cast<int>(stat), &value));
  return value;
}

std::unordered_map<std::string, uint64_t> Communicator::mem_stats() const {
  return {
      {"gpu_mem_suspend", mem_stat(newer::MemStat::GpuMemSuspend)},
      {"gpu_mem_suspended", mem_stat(newer::MemStat::GpuMemSuspended)},
      {"gpu_mem_persist", mem_stat(newer::MemStat::GpuMemPersist)},
      {"gpu_mem_total", mem_stat(newer::MemStat::GpuMemTotal)},
  };
}

void Communicator::suspend(int flags) {
  nccl().require("ncclCommSuspend", "suspend", newer::kSuspendVersion);
  DeviceScope scope(device_);
  ncclComm_t comm = get();
  api::check(nccl().CommSuspend(comm, flags), "ncclCommSuspend", comm);
}

void Communicator::resume() {
  nccl().require("ncclCommResume", "resume", newer::kSuspendVersion);
  DeviceScope scope(device_);
  ncclComm_t comm = get();
  api::check(nccl().CommResume(comm), "ncclCommResume", comm);
}

void Communicator::revoke(int flags) {
  NCCL_CORE_REQUIRE(flags == 0, "Invalid revoke flags: ", flags, " (reserved: must be 0)");
  nccl().require("ncclCommRevoke", "revoke", newer::kRevokeVersion);
  DeviceScope scope(device_);
  ncclComm_t comm = get();
  api::check(nccl().CommRevoke(comm, flags), "ncclCommRevoke", comm);
  revoked_ = true;
}

} // namespace nccl_core
