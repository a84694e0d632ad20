// The NaN check's kernel (nan_watch.h): scans what an op sends for NaN on
// the op's stream and, only where it finds one, writes into host-mapped
// memory which op and which element.  No host wait, no device sync: the
// host learns of it by reading NanReport.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace nccl_core {

// How a value's bits encode NaN.  Complex types are scanned as their real
// and imaginary parts.
enum class NanFormat : int {
  kF64,
  kF32,
  kF16,
  kBF16,
  kF8E4M3FN,    // exponent and mantissa all ones
  kF8E5M2,      // IEEE-like: exponent all ones, mantissa nonzero
  kF8Fnuz,      // e4m3fnuz and e5m2fnuz: 0x80 ("negative zero")
  kF8E8M0,      // 0xff
};

// In host-mapped memory.  `seq` is the lowest sequence number of an op found
// sending NaN (~0 while none); `where[seq % kSlots]` the lowest
// (input << 48 | element) that op's scans found.  Kernels store the key
// first, then the seq, so a host that sees the seq finds its key.
struct NanReport {
  static constexpr int kSlots = 64;
  unsigned long long seq;
  unsigned long long where[kSlots];
};

constexpr unsigned long long kNanNone = ~0ULL;
constexpr int kNanElementBits = 48;  // element index bits of a `where` key

// Enqueues the scan of `values` values of `format` at `data` on `stream`,
// for input `input` (< 2^15) of op `seq`; `values_per_element` is 2 for
// complex types (so the element reported is the complex one).  `report` is
// the device's view of the NanReport.  Returns cudaGetLastError() after the
// launch.
cudaError_t launch_nan_scan(const void* data, int64_t values, NanFormat format,
                            int values_per_element, unsigned long long seq, unsigned input,
                            NanReport* report, int blocks_limit, cudaStream_t stream);

}  // namespace nccl_core
