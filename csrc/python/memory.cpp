// Bindings of NCCL memory: empty, resolve_tensor and allocator statistics.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "comm/buffer.h"
#include "memory/allocator.h"
#include "memory/vmm.h"
#include "python/bind.h"
#include "python/convert.h"

namespace py = pybind11;

namespace nccl_core::python {

void bind_memory(py::module_& m) {
  m.def(
      "_empty",
      [](std::vector<int64_t> sizes, at::ScalarType dtype, int device, bool fortran) {
        return memory::empty(sizes, dtype, device, fortran);
      },
      py::arg("sizes"), py::arg("dtype"), py::arg("device"), py::arg("fortran"),
      "Uninitialised tensor in ncclMemAlloc memory (see interop.torch.empty).");
  m.def(
      "_resolve_tensor",
      [](py::handle t) {
        // A query: any dense layout answers with its one block of memory.
        auto b = resolve_tensor(as_tensor(t, "tensor"), "tensor", BufferLayout::Dense);
        return py::make_tuple(reinterpret_cast<uintptr_t>(b.ptr), b.count,
                              static_cast<int>(b.type), b.device);
      },
      py::arg("tensor"), "(ptr, count, NCCL datatype code, device id) of a tensor.");
  m.def("_mem_live_bytes", &memory::live_bytes,
        "Bytes currently held through ncclMemAlloc by this extension.");
  m.def(
      "_is_vmm", [](uintptr_t ptr) { return vmm::is_vmm(reinterpret_cast<void*>(ptr)); },
      py::arg("ptr"), "Whether a device address is VMM (cuMem / ncclMemAlloc) memory.");
}

} // namespace nccl_core::python
