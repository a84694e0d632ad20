#include "failures/nan_watch.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/util/Exception.h>

#include <optional>
#include <string>
#include <utility>

#include "failures/error_policy.h"
#include "op/group_info.h"
#include "nccl/api.h"
#include "op/errors.h"

namespace nccl_core {

namespace {

struct Layout {
  NanFormat format;
  int values_per_element;
};

// How `type` encodes NaN; nothing for types that hold none.
std::optional<Layout> layout_of(c10::ScalarType type) {
  using T = c10::ScalarType;
  switch (type) {
    case T::Double: return Layout{NanFormat::kF64, 1};
    case T::Float: return Layout{NanFormat::kF32, 1};
    case T::Half: return Layout{NanFormat::kF16, 1};
    case T::BFloat16: return Layout{NanFormat::kBF16, 1};
    case T::ComplexDouble: return Layout{NanFormat::kF64, 2};
    case T::ComplexFloat: return Layout{NanFormat::kF32, 2};
    case T::ComplexHalf: return Layout{NanFormat::kF16, 2};
    case T::Float8_e4m3fn: return Layout{NanFormat::kF8E4M3FN, 1};
    case T::Float8_e5m2: return Layout{NanFormat::kF8E5M2, 1};
    case T::Float8_e4m3fnuz:
    case T::Float8_e5m2fnuz: return Layout{NanFormat::kF8Fnuz, 1};
    case T::Float8_e8m0fnu: return Layout{NanFormat::kF8E8M0, 1};
    default: return std::nullopt;  // integers, bool, 4-bit floats: no NaN
  }
}

}  // namespace

NanWatch::NanWatch() : mapped_(sizeof(NanReport)) {
  report_ = static_cast<NanReport*>(mapped_.host());
  device_ = static_cast<NanReport*>(mapped_.device());
  auto* r = static_cast<volatile NanReport*>(report_);
  for (int i = 0; i < NanReport::kSlots; ++i) {
    r->where[i] = kNanNone;
  }
  r->seq = kNanNone;
  // Enough blocks to stream the data at full speed; a grid-stride loop does the rest.
  blocks_limit_ = 4 * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
}

void NanWatch::scan(const std::vector<at::Tensor>& tensors, const char* op, uint64_t seq,
                    cudaStream_t stream) {
  int64_t numel = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    if (!t.defined()) {
      continue;
    }
    numel += t.numel();
    dtype = t.scalar_type();
    auto layout = layout_of(t.scalar_type());
    if (!layout || t.numel() == 0) {
      continue;
    }
    // Collective inputs are dense; a strided view is scanned through a copy
    // on the same stream (freed after the scan in stream order).
    at::Tensor dense = t.is_non_overlapping_and_dense() ? t : t.contiguous();
    const int64_t values = dense.numel() * layout->values_per_element;
    const unsigned input = i < (1U << 15) ? static_cast<unsigned>(i) : (1U << 15) - 1;
    api::cuda_check(launch_nan_scan(dense.data_ptr(), values, layout->format,
                                    layout->values_per_element, seq, input, device_,
                                    blocks_limit_, stream),
                    "nan_scan<<<>>> (the NaN check's kernel)");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  notes_[seq % NanReport::kSlots] = Note{seq, op, dtype, numel, tensors.size()};
}

std::string NanWatch::message() const {
  const auto* r = static_cast<const volatile NanReport*>(report_);
  const unsigned long long seq = r->seq;
  if (seq == kNanNone) {
    return "";
  }
  const unsigned long long key = r->where[seq % NanReport::kSlots];
  const unsigned long long input = key >> kNanElementBits;
  const unsigned long long element = key & ((1ULL << kNanElementBits) - 1);
  Note note;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    note = notes_[seq % NanReport::kSlots];
  }
  std::string what;
  if (note.seq == seq && note.op != nullptr) {
    what = std::string(note.op) + " (seq " + std::to_string(seq) + ", " +
           std::to_string(note.numel) + " elements of " + c10::toString(note.dtype) +
           (note.inputs > 1 ? " in " + std::to_string(note.inputs) + " inputs" : "") + ")";
  } else {
    what = "the op with seq " + std::to_string(seq);  // a graph replay of a captured op
  }
  std::string where = "element " + std::to_string(element);
  if (note.seq == seq && note.inputs > 1) {
    where += " of input " + std::to_string(input);
  }
  return "nccl_core: NaN check (TORCH_NCCL_NAN_CHECK): what " + what +
         " sent held NaN (first at flat " + where +
         "); the op ran, so its output holds NaN wherever that data went "
         "(NCCL_CORE_NAN_CHECK=strict refuses such an op before it sends)";
}

void NanWatch::set_handler(Handler handler) {
  std::lock_guard<std::mutex> lock(mutex_);
  handler_ = std::move(handler);
}

bool NanWatch::handle_if_found() {
  if (!found()) {
    return false;
  }
  std::string report = message();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handled_) {
    handled_ = true;
    // Under the lock: a thread that finds the NaN meanwhile waits until the
    // group's error is recorded (or the process ends), then raises it.
    if (handler_) {
      handler_(report);
    }
  }
  return true;
}

void NanWatch::raise_if_found(GroupInfo* group) {
  if (!handle_if_found()) {
    return;
  }
  block_if_tearing_down();
  if (group != nullptr) {
    group->mark_raised();  // policy 2 aborts here, in the raising thread
  }
  C10_THROW_ERROR(DistBackendError, message());
}

// --- strict mode ---------------------------------------------------------


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
