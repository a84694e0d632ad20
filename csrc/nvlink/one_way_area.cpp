// Sizes of the one-way kernels' area of the window (one_way.h), checked:
// the slot grows with a group's option, a user's number.
#include "nvlink/one_way.h"

#include "util/checked.h"
#include "util/torch_errors.h"

namespace nccl_core::nvlink {

size_t one_way_slot_bytes(size_t max_bytes) {
  // A header line, then a 16-byte line for every 8 data bytes.
  size_t lines = checked::add<raise_value_error>(max_bytes, kOneWayLineData - 1,
                                                 "one_way_max_bytes") /
                 kOneWayLineData;
  return checked::mul<raise_value_error>(
      checked::add<raise_value_error>(lines, 1, "one-way slot lines"), 16, "one-way slot bytes");
}

size_t one_way_area_bytes(size_t slot_bytes, int nranks) {
  return checked::mul<raise_value_error>(
      checked::mul<raise_value_error>(2, static_cast<size_t>(nranks), "one-way slots"),
      slot_bytes, "one-way area bytes");
}

}  // namespace nccl_core::nvlink
