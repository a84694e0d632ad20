// Mapping between torch and NCCL types: the table behind resolve_tensor.
#pragma once

#include <ATen/ATen.h>
#include <nccl.h>

#include <optional>

namespace nccl_core::types {

// NCCL type for a torch dtype; nullopt where NCCL has none.  bool maps to
// uint8 (one byte, 0/1).  Complex types are handled by the backend as pairs
// of their real type and are not listed here.
std::optional<ncclDataType_t> to_nccl(at::ScalarType t);
// Same, but throws NcclInvalid naming the dtype.
ncclDataType_t to_nccl_or_throw(at::ScalarType t);
// Bytes per element of an NCCL type.
size_t element_size(ncclDataType_t t);
// "float32", "bfloat16", ... (NCCL's names, lower-case, without the prefix).
const char* name(ncclDataType_t t);
bool is_floating(ncclDataType_t t);

} // namespace nccl_core::types
