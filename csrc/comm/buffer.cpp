// The buffer type of the raw operations and one-sided calls (buffer.h).
#include "comm/buffer.h"

#include "nccl/api.h"
#include "nccl/types.h"
#include "util/checked.h"

namespace nccl_core {

Buffer resolve_tensor(const at::Tensor& t, const char* name, BufferLayout layout) {
  NCCL_CORE_REQUIRE(t.defined(), name, " is an undefined tensor");
  NCCL_CORE_REQUIRE(t.is_cuda(), name, " must be a CUDA tensor, got a ", t.device(), " tensor");
  NCCL_CORE_REQUIRE(t.layout() == at::kStrided, name, " must be a dense (strided) tensor");
  if (layout == BufferLayout::Contiguous) {
    // NCCL walks count elements from the data pointer: any other order
    // (x.t(), a Fortran-ordered array, a permuted view) would be reduced,
    // gathered or sent in memory order, not in the tensor's.
    NCCL_CORE_REQUIRE(t.is_contiguous(), name,
                      " must be contiguous (C order): NCCL reads and writes count elements "
                      "in memory order, so a transposed or permuted view would be used in "
                      "the wrong element order; call .contiguous()");
  } else {
    // One block of memory in any dimension order.
    NCCL_CORE_REQUIRE(t.is_non_overlapping_and_dense(), name,
                      " must be contiguous (dense, in any dimension order): NCCL reads count "
                      "elements from its data pointer; call .contiguous()");
  }
  auto type = types::to_nccl(t.scalar_type());
  NCCL_CORE_REQUIRE(type.has_value(), "Unsupported torch dtype ", t.scalar_type(), " of ", name,
                    " has no NCCL equivalent");
  return Buffer{t.data_ptr(), checked::narrow<size_t>(t.numel(), name), *type,
                static_cast<int>(t.device().index()), t.scalar_type() == at::kBool};
}

ncclRedOp_t for_buffer(ncclRedOp_t op, const Buffer& b) {
  if (!b.logical) {
    return op;
  }
  switch (op) {
    case ncclSum:
      return ncclMax;  // logical OR
    case ncclProd:
      return ncclMin;  // logical AND
    case ncclMax:
    case ncclMin:
      return op;
    case ncclAvg:
      throw NcclInvalid("AVG is not defined for bool buffers (SUM is logical OR, PROD logical AND)");
    default:
      throw NcclInvalid("a CustomRedOp (PreMulSum) is not defined for bool buffers");
  }
}

} // namespace nccl_core
