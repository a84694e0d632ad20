// Python -> C++ conversions shared by the bindings: buffers, streams and
// reduction ops in every form the nccl.core-style API accepts.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pybind11/pybind11.h>

#include <ATen/ATen.h>

#include <optional>

#include "comm/buffer.h"

namespace nccl_core {
class Communicator;
}

namespace nccl_core::python {

namespace py = pybind11;

// A torch.Tensor as is; anything with __dlpack__ or
// __cuda_array_interface__ (CuPy, Numba, cuda.core) viewed as one.
at::Tensor as_tensor(py::handle obj, const char* name);
// as_tensor + resolve_tensor (C-contiguous unless `layout` says
// otherwise).  Inside a group (group_start) the tensor is kept until
// group_end, when NCCL uses it.
Buffer as_buffer(py::handle obj, const char* name,
                      BufferLayout layout = BufferLayout::Contiguous);
// None -> nullopt (for buffers that only the root needs).
std::optional<Buffer> as_optional_buffer(py::handle obj, const char* name);

// None -> torch's current stream on `device`; an int handle; a torch.cuda.Stream
// (on `device`); objects with __cuda_stream__ (cuda.core) or .ptr (CuPy).
cudaStream_t as_stream(py::handle obj, int device);

// NcclRedOp / int / torch.distributed.ReduceOp (SUM, PRODUCT, MIN, MAX, AVG)
// or a CustomRedOp of this communicator made for `buf`'s type; for a bool
// buffer, the logical op (for_buffer).
ncclRedOp_t as_red_op(py::handle obj, const Communicator& comm, const Buffer& buf);
// The same op for an NCCL type, without the bool rule.
ncclRedOp_t red_op_for_type(py::handle obj, const Communicator& comm, ncclDataType_t type);

// An int (IntEnum members included, bool refused); NcclInvalid naming `name`.
long long as_int(py::handle obj, const char* name);

// A device address: an int in [0, 2**64); NcclInvalid naming `name` otherwise.
void* as_address(py::handle obj, const char* name);

// An int that fits a rank (the operation checks it against the
// communicator's size); NcclInvalid naming `name` otherwise.
int as_rank(py::handle obj, const char* name);

// None -> -1 (all-reduce / all-gather), else a root rank.
int as_root(py::handle obj);

} // namespace nccl_core::python
