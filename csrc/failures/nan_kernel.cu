// The NaN check's scan (nan_kernel.h).  Reads the data once, 16 bytes per load
// where it is aligned so; a block writes to host memory only where it found
// a NaN, so a clean scan costs its launch and one read of the data.
#include "failures/nan_kernel.h"

#include <cstring>

namespace nccl_core {

namespace {

constexpr int kThreads = 256;

template <class U, NanFormat F>
__device__ __forceinline__ bool is_nan(U v) {
  if constexpr (F == NanFormat::kF64) {
    return (v & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL;
  } else if constexpr (F == NanFormat::kF32) {
    return (v & 0x7fffffffU) > 0x7f800000U;
  } else if constexpr (F == NanFormat::kF16) {
    return (v & 0x7fffU) > 0x7c00U;
  } else if constexpr (F == NanFormat::kBF16) {
    return (v & 0x7fffU) > 0x7f80U;
  } else if constexpr (F == NanFormat::kF8E4M3FN) {
    return (v & 0x7fU) == 0x7fU;
  } else if constexpr (F == NanFormat::kF8E5M2) {
    return (v & 0x7fU) > 0x7cU;
  } else if constexpr (F == NanFormat::kF8Fnuz) {
    return v == 0x80U;
  } else {
    return v == 0xffU;  // e8m0fnu
  }
}

template <class U, NanFormat F>
__global__ void __launch_bounds__(kThreads)
    nan_scan(const U* __restrict__ data, int64_t n, int per_element, unsigned long long seq,
             unsigned input, NanReport* report) {
  constexpr int kPerLoad = 16 / sizeof(U);
  __shared__ unsigned long long first;
  if (threadIdx.x == 0) {
    first = kNanNone;
  }
  __syncthreads();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // A thread's indices only grow: its first NaN is its lowest.
  unsigned long long mine = kNanNone;
  const int64_t loads = reinterpret_cast<uintptr_t>(data) % 16 == 0 ? n / kPerLoad : 0;
  const uint4* wide = reinterpret_cast<const uint4*>(data);
  for (int64_t i = tid; i < loads && mine == kNanNone; i += stride) {
    uint4 raw = wide[i];
    U parts[kPerLoad];
    memcpy(parts, &raw, sizeof(raw));
#pragma unroll
    for (int k = 0; k < kPerLoad; ++k) {
      if (is_nan<U, F>(parts[k]) && mine == kNanNone) {
        mine = static_cast<unsigned long long>(i) * kPerLoad + k;
      }
    }
  }
  for (int64_t i = loads * kPerLoad + tid; i < n && mine == kNanNone; i += stride) {
    if (is_nan<U, F>(data[i])) {
      mine = static_cast<unsigned long long>(i);
    }
  }
  if (mine != kNanNone) {
    atomicMin(&first, mine);
  }
  __syncthreads();
  if (threadIdx.x == 0 && first != kNanNone) {
    unsigned long long element = first / static_cast<unsigned long long>(per_element);
    const unsigned long long max_element = (1ULL << kNanElementBits) - 1;
    if (element > max_element) {
      element = max_element;  // beyond 2^48 elements: reported as the last index
    }
    const unsigned long long key =
        (static_cast<unsigned long long>(input) << kNanElementBits) | element;
    atomicMin(&report->where[seq % NanReport::kSlots], key);
    __threadfence_system();  // the key before the seq, as the host reads them
    atomicMin(&report->seq, seq);
  }
}

template <class U, NanFormat F>
cudaError_t launch(const void* data, int64_t values, int per_element, unsigned long long seq,
                   unsigned input, NanReport* report, int blocks_limit, cudaStream_t stream) {
  constexpr int64_t kPerLoad = 16 / sizeof(U);
  const int64_t items = (values + kPerLoad - 1) / kPerLoad;
  int64_t blocks = (items + kThreads - 1) / kThreads;
  if (blocks > blocks_limit) {
    blocks = blocks_limit;
  }
  if (blocks < 1) {
    blocks = 1;
  }
  nan_scan<U, F><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const U*>(data), values, per_element, seq, input, report);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_nan_scan(const void* data, int64_t values, NanFormat format,
                            int values_per_element, unsigned long long seq, unsigned input,
                            NanReport* report, int blocks_limit, cudaStream_t stream) {
  using Launch = cudaError_t (*)(const void*, int64_t, int, unsigned long long, unsigned,
                                 NanReport*, int, cudaStream_t);
  // Indexed by NanFormat, in its order.
  static constexpr Launch kLaunch[] = {
      &launch<unsigned long long, NanFormat::kF64>, &launch<unsigned, NanFormat::kF32>,
      &launch<unsigned short, NanFormat::kF16>,     &launch<unsigned short, NanFormat::kBF16>,
      &launch<unsigned char, NanFormat::kF8E4M3FN>, &launch<unsigned char, NanFormat::kF8E5M2>,
      &launch<unsigned char, NanFormat::kF8Fnuz>,   &launch<unsigned char, NanFormat::kF8E8M0>,
  };
  static_assert(sizeof(kLaunch) / sizeof(kLaunch[0]) ==
                static_cast<size_t>(NanFormat::kF8E8M0) + 1, "one launcher per NanFormat");
  const auto index = static_cast<size_t>(format);
  if (index >= sizeof(kLaunch) / sizeof(kLaunch[0])) {
    return cudaErrorInvalidValue;
  }
  return kLaunch[index](data, values, values_per_element, seq, input, report, blocks_limit,
                        stream);
}

}  // namespace nccl_core
