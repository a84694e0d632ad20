#include "util/checked.h"

#include "nccl/api.h"

namespace nccl_core::checked {

void raise_invalid(const std::string& message) {
  throw NcclInvalid(message);
}

}  // namespace nccl_core::checked
