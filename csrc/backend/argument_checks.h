// Argument checks and temporaries shared by the collectives of the backend
// (collectives.cpp, gathers.cpp).
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "op/errors.h"

namespace nccl_core::call {

inline void check_single(const std::vector<at::Tensor>& tensors, const char* op) {
  NCCL_CORE_CHECK_VALUE(tensors.size() == 1, "nccl_core ", op,
                    ": expects exactly one tensor per call (one GPU per "
                    "process), got ", tensors.size());
}

inline void check_same(const at::Tensor& a, const at::Tensor& b, const char* op) {
  NCCL_CORE_CHECK_TYPE(a.scalar_type() == b.scalar_type(), "nccl_core ", op,
                   ": dtype mismatch between input (", a.scalar_type(),
                   ") and output (", b.scalar_type(), ")");
}

// One flat tensor holding `n` copies of `like`'s shape, allocated on the
// current (backend) stream.
inline at::Tensor flat_like(const at::Tensor& like, int64_t n) {
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), like.sizes().begin(), like.sizes().end());
  return at::empty(shape, like.options());
}

} // namespace nccl_core::call
