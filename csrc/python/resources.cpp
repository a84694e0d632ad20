// Bindings of the communicator's resources (comm/resources.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "nccl/api.h"
#include "python/bind.h"
#include "python/convert.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

uintptr_t addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

py::object addr_or_none(const std::optional<void*>& p) {
  return p ? py::cast(addr(*p)) : py::none();
}

size_t as_offset(long long offset) {
  NCCL_CORE_REQUIRE(offset >= 0, "offset ", offset, " must be >= 0");
  return static_cast<size_t>(offset);
}

} // namespace

void bind_resources(py::module_& m) {
  py::class_<Resource, std::shared_ptr<Resource>>(
      m, "CommResource",
      "Base of resources owned by a Communicator: released by close() or with the "
      "communicator.")
      .def("close", &Resource::close, py::call_guard<py::gil_scoped_release>(),
           "Releases the resource; idempotent.")
      .def_property_readonly("is_valid", &Resource::is_valid,
                             "Whether the resource is still valid (not closed).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Resource& r, py::args) {
        py::gil_scoped_release release;  // close may wait for the device
        r.close();
      });

  py::class_<RegisteredBuffer, Resource, std::shared_ptr<RegisteredBuffer>>(
      m, "RegisteredBufferHandle",
      "A buffer registered with ncclCommRegister for zero-copy communication.")
      .def_property_readonly(
          "handle", [](const RegisteredBuffer& b) { return addr(b.handle()); },
          "Registration handle (int).")
      .def_property_readonly("size", &RegisteredBuffer::size, "Registered bytes.")
      .def("__repr__", [](const RegisteredBuffer& b) {
        if (!b.is_valid()) {
          return std::string("<RegisteredBufferHandle: closed>");
        }
        return "<RegisteredBufferHandle: size=" + std::to_string(b.size()) + ">";
      });

  py::class_<Window, Resource, std::shared_ptr<Window>>(
      m, "RegisteredWindowHandle",
      "A window registered with ncclCommWindowRegister for one-sided access.")
      .def_property_readonly(
          "handle", [](const Window& w) { return addr(w.handle()); }, "Window handle (int).")
      .def_property_readonly("size", &Window::size, "Window size in bytes.")
      .def_property_readonly(
          "user_ptr", [](const Window& w) { return addr(w.user_ptr()); },
          "The registered buffer's address.")
      .def_property_readonly("flags", &Window::flags, "WindowFlag value it was registered with.")
      .def_property_readonly("lsa_size", &Window::lsa_size,
                             "Ranks whose window is load/store reachable (the LSA team).")
      .def_property_readonly("lsa_rank", &Window::lsa_rank, "This rank within the LSA team.")
      .def(
          "get_lsa_device_pointer",
          [](const Window& w, int lsa_rank, long long offset) {
            return addr(w.lsa_pointer(lsa_rank, as_offset(offset)));
          },
          py::arg("lsa_rank"), py::arg("offset") = 0,
          "Device address of an LSA peer's window + offset.")
      .def(
          "get_peer_device_pointer",
          [](const Window& w, int peer, long long offset) {
            return addr_or_none(w.peer_pointer(peer, as_offset(offset)));
          },
          py::arg("peer"), py::arg("offset") = 0,
          "Device address of `peer`'s window + offset, or None if not load/store reachable.")
      .def(
          "get_lsa_multimem_device_pointer",
          [](const Window& w, long long offset) {
            return addr_or_none(w.lsa_multimem_pointer(as_offset(offset)));
          },
          py::arg("offset") = 0, "Multicast address, or None where multimem is unavailable.")
      .def(
          "get_multimem_device_pointer",
          [](const Window& w, py::handle multimem, long long offset) {
            py::object type =
                py::module_::import("nccl_core_backend.dev_resources").attr("MultimemHandle");
            NCCL_CORE_REQUIRE(py::isinstance(multimem, type),
                              "get_multimem_device_pointer: multimem must be a MultimemHandle "
                              "(DevCommResource.multimem_handle), got ",
                              std::string(py::str(multimem.get_type().attr("__name__"))));
            void* base = as_address(multimem.attr("mc_base_pointer"), "mc_base_pointer");
            return addr_or_none(w.multimem_pointer(base, as_offset(offset)));
          },
          py::arg("multimem"), py::arg("offset") = 0,
          "Multicast address through a team's MultimemHandle, or None where multimem is "
          "unavailable.")
      .def("__repr__", [](const Window& w) {
        if (!w.is_valid()) {
          return std::string("<RegisteredWindowHandle: closed>");
        }
        return "<RegisteredWindowHandle: size=" + std::to_string(w.size()) + ">";
      });

  py::class_<CustomRedOp, Resource, std::shared_ptr<CustomRedOp>>(
      m, "CustomRedOp", "A PreMulSum reduction op: output = scalar * sum(inputs).")
      .def_property_readonly(
          "op", [](const CustomRedOp& r) { return static_cast<int>(r.op()); },
          "ncclRedOp_t value for the raw operations.")
      .def("__int__", [](const CustomRedOp& r) { return static_cast<int>(r.op()); })
      .def_property_readonly(
          "datatype", [](const CustomRedOp& r) { return static_cast<int>(r.type()); },
          "NcclDataType the op was created for.")
      .def_property_readonly(
          "residence", [](const CustomRedOp& r) { return static_cast<int>(r.residence()); },
          "ScalarResidence: 0 device, 1 host-immediate.")
      .def_property_readonly(
          "scalar", [](const CustomRedOp& r) { return r.scalar(); },
          "The factor as a one-element tensor (CPU or CUDA).")
      .def_property_readonly(
          "reduce_op",
          [](const CustomRedOp& r) {
            r.op(); // raises if closed
            auto make = py::module_::import("torch.distributed").attr("_make_nccl_premul_sum");
            const at::Tensor& s = r.scalar();
            return s.is_cuda() ? make(s) : make(s.item<double>());
          },
          "The same factor as a torch.distributed.ReduceOp (PREMUL_SUM), for "
          "dist.all_reduce and dist.reduce_scatter_tensor.")
      .def("__repr__", [](const CustomRedOp& r) {
        return std::string("<CustomRedOp") + (r.is_valid() ? "" : ": closed") + ">";
      });
}

} // namespace nccl_core::python
