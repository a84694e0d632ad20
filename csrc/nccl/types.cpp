#include "nccl/types.h"

#include "nccl/api.h"

namespace nccl_core::types {

std::optional<ncclDataType_t> to_nccl(at::ScalarType t) {
  switch (t) {
    case at::kChar:
      return ncclInt8;
    case at::kByte:
    case at::kBool:
      return ncclUint8;
    case at::kInt:
      return ncclInt32;
    case at::kUInt32:
      return ncclUint32;
    case at::kLong:
      return ncclInt64;
    case at::kUInt64:
      return ncclUint64;
    case at::kHalf:
      return ncclFloat16;
    case at::kFloat:
      return ncclFloat32;
    case at::kDouble:
      return ncclFloat64;
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kFloat8_e4m3fn:
      return ncclFloat8e4m3;
    case at::kFloat8_e5m2:
      return ncclFloat8e5m2;
    default:
      return std::nullopt;
  }
}

ncclDataType_t to_nccl_or_throw(at::ScalarType t) {
  auto nt = to_nccl(t);
  if (!nt) {
    throw NcclInvalid("dtype torch." + std::string(c10::getDtypeNames(t).first) +
                      " has no NCCL equivalent");
  }
  return *nt;
}

size_t element_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

const char* name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclFloat32:
      return "float32";
    case ncclFloat64:
      return "float64";
    case ncclBfloat16:
      return "bfloat16";
    case ncclFloat8e4m3:
      return "float8_e4m3";
    case ncclFloat8e5m2:
      return "float8_e5m2";
    default:
      return "unknown";
  }
}

bool is_floating(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
    case ncclFloat32:
    case ncclFloat64:
    case ncclBfloat16:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return true;
    default:
      return false;
  }
}

} // namespace nccl_core::types
