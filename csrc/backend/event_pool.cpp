#include "backend/event_pool.h"

#include <c10/cuda/CUDAGuard.h>

#include <mutex>
#include <vector>

#include "comm/device_scope.h"
#include "nccl/api.h"

namespace nccl_core {

namespace {

// Free events per device.  Never destroyed: works may release events during
// static destruction, and the driver reclaims everything at exit.
class Pool {
 public:
  static Pool& get() {
    static Pool* p = new Pool();
    return *p;
  }

  cudaEvent_t acquire(int device) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (device < static_cast<int>(free_.size()) && !free_[device].empty()) {
        cudaEvent_t e = free_[device].back();
        free_[device].pop_back();
        return e;
      }
    }
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    cudaEvent_t e = nullptr;
    NCCL_CORE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }

  void release(int device, cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (device >= static_cast<int>(free_.size())) {
      free_.resize(device + 1);
    }
    free_[device].push_back(e);
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<cudaEvent_t>> free_;
};

} // namespace

PooledEvent::~PooledEvent() {
  if (event_ != nullptr) {
    Pool::get().release(device_, event_);
  }
}

void PooledEvent::record(const c10::cuda::CUDAStream& stream) {
  if (event_ == nullptr) {
    device_ = stream.device_index();
    event_ = Pool::get().acquire(device_);
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

} // namespace nccl_core
