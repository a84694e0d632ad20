#include "comm/communicator.h"

#include <functional>
#include <thread>

#include "comm/device_scope.h"
#include "nccl/agreements.h"
#include "nccl/api.h"
#include "nccl/newer.h"

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
    if (api::find_symbol("ncclTeamLsa") != nullptr) {
      auto team = api::require<newer::TeamLsaFn>("ncclTeamLsa", "the LSA team",
                                                 newer::kDeviceApiVersion)(get());
      known = team.nranks == nranks() ? 1 : 0;
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
    throw NcclInvalid(s == State::Aborted
                          ? "communicator has been aborted"
                          : "communicator has been destroyed");
  }
  return comm_;
}

void Communicator::call(ncclResult_t result, const char* what) {
  if (api::check(result, what, comm_)) {
    wait_ready(what);
  }
}

void Communicator::poll_bounded(const char* what, const char* stuck,
                                const std::function<bool(ncclResult_t)>& done) {
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + timeout_.load();
  // Short waits are the common case: yield for 200 µs before sleeping (a
  // sleep lasts ~50 µs at least on Linux, longer than most enqueues).
  auto spin_until = start + std::chrono::microseconds(200);
  auto pause = std::chrono::microseconds(20);
  while (true) {
    ncclResult_t state = async_error();
    if (state != ncclSuccess && state != ncclInProgress) {
      api::check(state, what, comm_);
    }
    if (done(state)) {
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      abort();
      throw NcclError(ncclInProgress, std::string(what) + stuck +
                                          std::to_string(timeout_.load().count()) +
                                          " ms; communicator aborted");
    }
    if (std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

void Communicator::wait_ready(const char* what) {
  poll_bounded(what, " still in progress after ",
               [](ncclResult_t state) { return state == ncclSuccess; });
}

void Communicator::wait_stream(cudaStream_t stream, const char* what) {
  DeviceScope scope(device_);
  cudaEvent_t done = nullptr;
  NCCL_CORE_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  struct Destroy {
    cudaEvent_t e;
    ~Destroy() { (void)cudaEventDestroy(e); }
  } destroy{done};
  NCCL_CORE_CUDA_CHECK(cudaEventRecord(done, stream));
  poll_bounded(what, " did not complete (a rank did not join it) within ", [done](ncclResult_t) {
    cudaError_t state = cudaEventQuery(done);
    if (state != cudaSuccess && state != cudaErrorNotReady) {
      NCCL_CORE_CUDA_CHECK(state);
    }
    return state == cudaSuccess;
  });
}

ncclResult_t Communicator::async_error() const {
  ncclResult_t state = ncclSuccess;
  NCCL_CORE_CHECK(comm_, ncclCommGetAsyncError(get(), &state));
  return state;
}

std::string Communicator::last_error() const {
  const char* s = ncclGetLastError(get());
  return s == nullptr ? "" : s;
}

uint64_t Communicator::mem_stat(newer::MemStat stat) const {
  auto fn = api::require<newer::CommMemStatsFn>("ncclCommMemStats", "get_mem_stat",
                                                newer::kMemStatsVersion);
  uint64_t value = 0;
  ncclComm_t comm = get();
  NCCL_CORE_CHECK(comm, fn(comm, static_cast<int>(stat), &value));
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
  auto fn = api::require<newer::CommSuspendFn>("ncclCommSuspend", "suspend",
                                               newer::kSuspendVersion);
  DeviceScope scope(device_);
  ncclComm_t comm = get();
  api::check(fn(comm, flags), "ncclCommSuspend", comm);
}

void Communicator::resume() {
  auto fn = api::require<newer::CommResumeFn>("ncclCommResume", "resume", newer::kSuspendVersion);
  DeviceScope scope(device_);
  ncclComm_t comm = get();
  api::check(fn(comm), "ncclCommResume", comm);
}

void Communicator::before_close(std::function<void()> drain) {
  std::lock_guard<std::mutex> lock(before_abort_mutex_);
  before_close_.push_back(std::move(drain));
}

void Communicator::finalize() {
  end_life("finalize", true);
}

void Communicator::destroy() {
  end_life("destroy", false);
}

void Communicator::end_life(const char* what, bool flush) {
  if (state_.load() != State::Live) {
    return;  // idempotent
  }
  // Operations of other threads finish first; later ones are refused.
  close_gate(what);
  try {
    close_all_resources();
    std::lock_guard<std::mutex> lock(lifecycle_mutex_);
    if (state_.load() != State::Live) {
      return;
    }
    DeviceScope scope(device_);
    if (flush) {
      run("ncclCommFinalize", [&] { return ncclCommFinalize(comm_); });
      state_ = State::Finalized;
    }
    NCCL_CORE_CHECK(comm_, ncclCommDestroy(comm_));
    state_ = State::Destroyed;
  } catch (...) {
    closing_ = false;
    throw;
  }
}

void Communicator::abort() noexcept {
  // No lock: abort must be able to interrupt a finalize stuck in another
  // thread.  The exchange makes it run once.
  State expected = State::Live;
  if (!state_.compare_exchange_strong(expected, State::Aborted)) {
    if (expected != State::Finalized) {
      return;
    }
    state_ = State::Aborted;
  }
  // Our own waiting kernels first: NCCL's abort may wait for the device,
  // and it unmaps windows that they may still be using.
  raise_abort_flag();
  std::vector<std::function<void()>> drains;
  {
    std::lock_guard<std::mutex> lock(before_abort_mutex_);
    drains.swap(before_abort_);
  }
  for (auto& drain : drains) {
    try {
      drain();
    } catch (...) {
      // abort goes on: a failed drain cannot be helped here
    }
  }
  // Host calls of other threads that are only enqueueing leave within
  // microseconds: NCCL must not free the communicator under them.  A call
  // stuck on peers does not leave; ncclCommAbort is what ends it.  Uses of
  // this thread's own open group are not waited for.
  (void)wait_for_users(held_by_open_group() ? 1 : 0, kAbortGrace);
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_);
  (void)ncclCommAbort(comm_);
  if (previous >= 0) {
    (void)cudaSetDevice(previous);
  }
  // Only now may the memory NCCL had registered be released.
  forget_all_resources();
}

} // namespace nccl_core
