#include "rma/kernels.h"

#include <cuda/atomic>

#include "nccl/api.h"

namespace nccl_core::rma {

namespace {

using SystemCounter = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__device__ void release_signal(unsigned long long* remote_signal) {
  __threadfence_system();
  SystemCounter(*remote_signal).fetch_add(1ull, cuda::memory_order_release);
}

// T is the widest type the alignment of src, dst and size allows.
template <class T>
__global__ void put_signal_kernel(const T* __restrict__ src, T* __restrict__ dst, size_t n,
                                  unsigned long long* remote_signal, unsigned int* ticket) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    dst[i] = src[i];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system(); // this block's stores (bar.sync-ordered) before the ticket
    unsigned int done = atomicAdd(ticket, 1u);
    if (done == gridDim.x - 1) {
      *ticket = 0u; // every block has taken its ticket: reset for the next put
      release_signal(remote_signal);
    }
  }
}

__global__ void signal_kernel(unsigned long long* remote_signal) {
  release_signal(remote_signal);
}

__global__ void wait_kernel(const unsigned long long* counters, WaitList waits,
                            const volatile int* abort) {
  int i = threadIdx.x;
  if (i < waits.count) {
    // atomic_ref needs a mutable reference; the kernel only loads through it.
    SystemCounter c(const_cast<unsigned long long&>(counters[waits.slot[i]]));
    unsigned spins = 0;
    // The abort flag is host memory, slow to read: look at it now and then.
    while (c.load(cuda::memory_order_acquire) < waits.target[i] &&
           (++spins % 256 != 0 || *abort == 0)) {
      __nanosleep(64);
    }
  }
  __syncthreads();
  __threadfence_system();
}

template <class T>
void put_as(const void* src, void* dst, size_t bytes, unsigned long long* signal,
            unsigned int* ticket, cudaStream_t stream) {
  size_t n = bytes / sizeof(T);
  int threads = 512;
  // Enough blocks to saturate NVLink for large puts, one for tiny ones.
  size_t want = (n + threads - 1) / threads;
  int blocks = static_cast<int>(want < 1 ? 1 : (want > 132 ? 132 : want));
  put_signal_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<const T*>(src),
                                                       static_cast<T*>(dst), n, signal, ticket);
}

} // namespace

void launch_put_signal(const void* src, void* dst, size_t bytes,
                       unsigned long long* remote_signal, unsigned int* ticket,
                       cudaStream_t stream) {
  auto bits = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | bytes;
  if (bits % 16 == 0) {
    put_as<uint4>(src, dst, bytes, remote_signal, ticket, stream);
  } else if (bits % 8 == 0) {
    put_as<uint2>(src, dst, bytes, remote_signal, ticket, stream);
  } else if (bits % 4 == 0) {
    put_as<unsigned int>(src, dst, bytes, remote_signal, ticket, stream);
  } else {
    put_as<unsigned char>(src, dst, bytes, remote_signal, ticket, stream);
  }
  NCCL_CORE_CUDA_CHECK(cudaGetLastError());
}

void launch_signal(unsigned long long* remote_signal, cudaStream_t stream) {
  signal_kernel<<<1, 1, 0, stream>>>(remote_signal);
  NCCL_CORE_CUDA_CHECK(cudaGetLastError());
}

void launch_wait(const unsigned long long* counters, const WaitList& waits,
                 const volatile int* abort, cudaStream_t stream) {
  wait_kernel<<<1, kMaxWaitsPerLaunch, 0, stream>>>(counters, waits, abort);
  NCCL_CORE_CUDA_CHECK(cudaGetLastError());
}

} // namespace nccl_core::rma
