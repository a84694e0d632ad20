// How a Communicator waits for NCCL: a call answered ncclInProgress (a
// non-blocking communicator) and work on a stream, both polled against the
// communicator's timeout, which aborts it when it passes (communicator.h).
#include "comm/communicator.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "comm/device_scope.h"
#include "nccl/api.h"

namespace nccl_core {

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

} // namespace nccl_core
