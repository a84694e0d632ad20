#include "nvlink/progress.h"

#include <cuda_runtime_api.h>

#include <thread>

#include "nccl/api.h"

namespace nccl_core::nvlink {

Progress::Progress() : mapped_(4 * sizeof(unsigned long long)) {
  NCCL_CORE_CUDA_CHECK(cudaGetDevice(&device_index_));
  host_ = static_cast<volatile unsigned long long*>(mapped_.host());
  host_[1] = 1;  // the stop value; the other words start at 0
  device_ = static_cast<unsigned long long*>(mapped_.device());
}

// Its holders (the engine, the watchdog, tracked works, the communicator's
// abort hook) let go after the backend drained or aborted the kernels that
// store here; the mapped words are freed with it.
Progress::~Progress() = default;

const unsigned long long* Progress::stop_word(int device, cudaStream_t stream) {
  if (!stop_.defined()) {
    // From the caching allocator: a group's word costs no allocation of its own.
    stop_ = at::empty({1}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA, device));
    NCCL_CORE_CUDA_CHECK(cudaMemsetAsync(stop_.data_ptr(), 0, sizeof(int64_t), stream));
  }
  return reinterpret_cast<const unsigned long long*>(stop_.data_ptr<int64_t>());
}

void Progress::stop_kernels(std::chrono::milliseconds limit) noexcept {
  if (idle() || !stop_.defined()) {
    return;  // nothing launched is left (nothing is launched after an abort)
  }
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_index_);
  // A stream of its own: the copy must not queue behind a stuck kernel.
  cudaStream_t side = nullptr;
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess) {
    (void)cudaMemcpyAsync(stop_.data_ptr(), const_cast<unsigned long long*>(host_ + 1),
                          sizeof(unsigned long long), cudaMemcpyHostToDevice, side);
    (void)cudaStreamSynchronize(side);
    (void)cudaStreamDestroy(side);
  }
  (void)cudaGetLastError();  // a failure here must not surface in a later call
  if (previous >= 0) {
    (void)cudaSetDevice(previous);
  }
  wait_idle(limit);
}

void Progress::wait_idle(std::chrono::milliseconds limit) const noexcept {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace nccl_core::nvlink
