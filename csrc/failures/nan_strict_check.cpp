#include "failures/nan_strict_check.h"

#include <ATen/ATen.h>

#include <string>

#include "op/errors.h"

namespace nccl_core {

namespace {

bool may_hold_nan(const at::Tensor& t) {
  return t.defined() && t.numel() > 0 &&
         (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()));
}

}  // namespace

void check_for_nan(const std::vector<at::Tensor>& tensors, const char* op, uint64_t seq,
                   bool capturing) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    if (!may_hold_nan(t)) {
      continue;
    }
    at::Tensor nan = at::isnan(t);
    std::string where = std::string("nccl_core: NaN check (strict): the input") +
                        (tensors.size() > 1 ? " " + std::to_string(i) : std::string()) +
                        " of " + op + " (seq " + std::to_string(seq) + ") holds NaN";
    if (capturing) {
      // Replays assert on the device; the host never waits in a graph.
      at::_assert_async(at::logical_not(nan.any()), where);
      continue;
    }
    if (nan.any().item<bool>()) {
      int64_t first = nan.reshape({-1}).to(at::kByte).argmax().item<int64_t>();
      NCCL_CORE_CHECK_VALUE(false, where, " (first at flat element ", first, " of ", t.numel(),
                            ", dtype ", c10::toString(t.scalar_type()),
                            "); the op was not issued");
    }
  }
}

}  // namespace nccl_core
