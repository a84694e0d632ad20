// Buffers that only speak the CUDA Array Interface (Numba, older CuPy, ...),
// viewed as torch tensors without a copy.
//
// torch.as_tensor(obj, device="cuda") copies such an object whenever its
// memory is not on the current device (and whatever torch's default device
// is otherwise), and NCCL would then write the copy: a receive would leave
// the user's buffer unchanged.  Here the interface is read directly and the
// tensor wraps its pointer (at::from_blob) on the device that owns it, so
// results land in the user's memory; the tensor keeps the object alive.
// Shapes are user numbers: their product and byte size are checked
// (util/checked.h).  Only C-contiguous buffers without a mask are taken.
#pragma once

#include <pybind11/pybind11.h>

#include <ATen/ATen.h>

namespace nccl_core::python {

namespace py = pybind11;

// The tensor viewing `obj.__cuda_array_interface__`'s memory (zero-copy);
// NcclInvalid naming `name` for anything it cannot view as is.
at::Tensor from_cuda_array_interface(py::handle obj, const char* name);

}  // namespace nccl_core::python
