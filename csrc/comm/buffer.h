// A device buffer as NCCL sees it, and the resolve_tensor rule that makes
// one from a tensor: what the raw operations (collectives/raw_ops.h), the one-sided
// calls (rma/) and the Python layer share, below all of them.
#pragma once

#include <ATen/ATen.h>
#include <nccl.h>

#include <cstddef>

namespace nccl_core {

// A device buffer as NCCL sees it (what resolve_tensor returns).
struct Buffer {
  void* ptr;
  size_t count;
  ncclDataType_t type;
  int device;
  bool logical = false;  // a torch.bool buffer (NCCL sees uint8)
};

// Which layouts a buffer may have.  Operations read and write `count`
// elements in memory order, so their buffers must be C-contiguous: a
// transposed view (x.t()) would be reduced, gathered or sent in the wrong
// element order.  A byte range (registration, resolve_tensor's answer) may
// be any dense layout.
enum class BufferLayout { Contiguous, Dense };

// The resolve_tensor rule: a CUDA tensor of a dtype NCCL has (bool as
// uint8) in the `layout` asked for.  Throws NcclInvalid naming `name` otherwise.
Buffer resolve_tensor(const at::Tensor& t, const char* name,
                      BufferLayout layout = BufferLayout::Contiguous);

// The op to run on `b`: bool buffers (uint8 to NCCL) reduce as logic, as
// the backend does -- SUM is OR (MAX), PRODUCT is AND (MIN) -- so a result
// is always 0 or 1; AVG and PreMulSum have no meaning there and are refused.
ncclRedOp_t for_buffer(ncclRedOp_t op, const Buffer& b);

} // namespace nccl_core
