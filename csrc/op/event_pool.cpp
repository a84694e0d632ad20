#include "op/event_pool.h"

#include <c10/cuda/CUDAGuard.h>

#include <mutex>
#include <vector>

#include "comm/device_scope.h"
#include "op/errors.h"
#include "nccl/api.h"

namespace nccl_core {

namespace {

// Free events per device and kind (timing or not).  Never destroyed: works
// may release events during static destruction, and the driver reclaims
// everything at exit.
class Pool {
 public:
  static Pool& get() {
    static Pool* p = new Pool();
    return *p;
  }

  cudaEvent_t acquire(int device, bool timing) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& free = free_[timing ? 1 : 0];
      if (device < static_cast<int>(free.size()) && !free[device].empty()) {
        cudaEvent_t e = free[device].back();
        free[device].pop_back();
        return e;
      }
    }
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    cudaEvent_t e = nullptr;
    NCCL_CORE_CUDA_CHECK(
        cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
    return e;
  }

  void release(int device, bool timing, cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& free = free_[timing ? 1 : 0];
    if (device >= static_cast<int>(free.size())) {
      free.resize(device + 1);
    }
    free[device].push_back(e);
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<cudaEvent_t>> free_[2];
};

} // namespace

PooledEvent::~PooledEvent() {
  if (event_ != nullptr) {
    Pool::get().release(device_, timing_, event_);
  }
}

void PooledEvent::record(const c10::cuda::CUDAStream& stream) {
  if (event_ == nullptr) {
    device_ = stream.device_index();
    event_ = Pool::get().acquire(device_, timing_);
  }
  // On the stream's device: handle 0 (the legacy default stream) means the
  // current device's, whatever device the caller's thread has current.
  DeviceScope on_device(stream.device_index());
  NCCL_CORE_CUDA_CHECK(cudaEventRecord(event_, stream.stream()));
}

bool PooledEvent::query() const {
  if (event_ == nullptr) {
    return true;
  }
  cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();  // clear the sticky-free "not ready" status
    return false;
  }
  NCCL_CORE_CUDA_CHECK(err);
  return true;
}

void PooledEvent::block(const c10::cuda::CUDAStream& stream) const {
  if (event_ != nullptr) {
    DeviceScope on_device(stream.device_index());  // see record()
    NCCL_CORE_CUDA_CHECK(cudaStreamWaitEvent(stream.stream(), event_, 0));
  }
}

void PooledEvent::enable_timing() {
  NCCL_CORE_CHECK_STATE(event_ == nullptr || timing_,
                        "nccl_core: timing asked of an event already recorded without it");
  timing_ = true;
}

float PooledEvent::elapsed_ms_since(const PooledEvent& start) const {
  NCCL_CORE_CHECK_STATE(timing_ && start.timing_ && event_ != nullptr && start.event_ != nullptr,
                        "nccl_core: elapsed time between events that were not both timed");
  NCCL_CORE_CUDA_CHECK(cudaEventSynchronize(event_));
  float ms = 0.0f;
  NCCL_CORE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

} // namespace nccl_core
