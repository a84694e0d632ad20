// Bindings of device communicators (device/dev_comm.h) and of the device-API
// collectives (device/collectives.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdio>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "device/collectives.h"
#include "device/dev_comm.h"
#include "device/layouts.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "python/bind.h"
#include "python/convert.h"
#include "util/checked.h"
#include "util/concat.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

using Req = DevCommRequirements;

std::string repr(const Req& r) {
  return concat("NCCLDevCommRequirements(lsa_multimem=", r.lsa_multimem ? "True" : "False",
                ", barrier_count=", r.barrier_count, ", lsa_barrier_count=", r.lsa_barrier_count,
                ", rail_gin_barrier_count=", r.rail_gin_barrier_count,
                ", lsa_ll_a2a_block_count=", r.lsa_ll_a2a_block_count,
                ", lsa_ll_a2a_slot_count=", r.lsa_ll_a2a_slot_count,
                ", gin_force_enable=", r.gin_force_enable ? "True" : "False",
                ", gin_context_count=", r.gin_context_count, ", gin_signal_count=",
                r.gin_signal_count, ", gin_counter_count=", r.gin_counter_count,
                ", gin_connection_type=", r.gin_connection_type, ", gin_exclusive_contexts=",
                r.gin_exclusive_contexts ? "True" : "False", ", gin_queue_depth=",
                r.gin_queue_depth, ")");
}

// An NcclGinConnectionType, range-checked as a 64-bit int before it is
// narrowed (2**32 must not become 0).
int connection_type(py::handle v) {
  long long t = as_int(v, "gin_connection_type");
  NCCL_CORE_REQUIRE(t >= 0 && t <= 2,
                    "NCCLDevCommRequirements.gin_connection_type must be an "
                    "NcclGinConnectionType (0, 1 or 2), got ",
                    t);
  return static_cast<int>(t);
}

py::object gin_enum(int value) {
  return py::module_::import("nccl_core_backend.constants").attr("NcclGinType")(value);
}

void check_out(const Buffer& out, const DevComm& dc) {
  auto comm = dc.owner();
  NCCL_CORE_REQUIRE(comm != nullptr, "the device communicator's communicator is gone");
  NCCL_CORE_REQUIRE(out.device == comm->device(), "out is on device ", out.device,
                    ", but the communicator is on device ", comm->device());
}

} // namespace

void bind_device(py::module_& m) {
  py::class_<Req>(m, "NCCLDevCommRequirements",
                  "What a device communicator must provide (ncclDevCommRequirements).")
      .def(py::init([](bool lsa_multimem, int barrier_count, int lsa_barrier_count,
                       int rail_gin_barrier_count, int lsa_ll_a2a_block_count,
                       int lsa_ll_a2a_slot_count, bool gin_force_enable, int gin_context_count,
                       int gin_signal_count, int gin_counter_count, py::handle gin_connection_type,
                       bool gin_exclusive_contexts, int gin_queue_depth) {
             Req r;
             r.lsa_multimem = lsa_multimem;
             r.barrier_count = barrier_count;
             r.lsa_barrier_count = lsa_barrier_count;
             r.rail_gin_barrier_count = rail_gin_barrier_count;
             r.lsa_ll_a2a_block_count = lsa_ll_a2a_block_count;
             r.lsa_ll_a2a_slot_count = lsa_ll_a2a_slot_count;
             r.gin_force_enable = gin_force_enable;
             r.gin_context_count = gin_context_count;
             r.gin_signal_count = gin_signal_count;
             r.gin_counter_count = gin_counter_count;
             r.gin_connection_type = connection_type(gin_connection_type);
             r.gin_exclusive_contexts = gin_exclusive_contexts;
             r.gin_queue_depth = gin_queue_depth;
             r.validate();
             return r;
           }),
           py::kw_only(), py::arg("lsa_multimem") = false, py::arg("barrier_count") = 0,
           py::arg("lsa_barrier_count") = 0, py::arg("rail_gin_barrier_count") = 0,
           py::arg("lsa_ll_a2a_block_count") = 0, py::arg("lsa_ll_a2a_slot_count") = 0,
           py::arg("gin_force_enable") = false, py::arg("gin_context_count") = 0,
           py::arg("gin_signal_count") = 0, py::arg("gin_counter_count") = 0,
           py::arg("gin_connection_type") = 0, py::arg("gin_exclusive_contexts") = false,
           py::arg("gin_queue_depth") = 0)
      .def_readwrite("lsa_multimem", &Req::lsa_multimem)
      .def_readwrite("barrier_count", &Req::barrier_count)
      .def_readwrite("lsa_barrier_count", &Req::lsa_barrier_count)
      .def_readwrite("rail_gin_barrier_count", &Req::rail_gin_barrier_count)
      .def_readwrite("lsa_ll_a2a_block_count", &Req::lsa_ll_a2a_block_count)
      .def_readwrite("lsa_ll_a2a_slot_count", &Req::lsa_ll_a2a_slot_count)
      .def_readwrite("gin_force_enable", &Req::gin_force_enable)
      .def_readwrite("gin_context_count", &Req::gin_context_count)
      .def_readwrite("gin_signal_count", &Req::gin_signal_count)
      .def_readwrite("gin_counter_count", &Req::gin_counter_count)
      .def_property(
          "gin_connection_type",
          [](const Req& r) {
            return py::module_::import("nccl_core_backend.constants")
                .attr("NcclGinConnectionType")(r.gin_connection_type);
          },
          [](Req& r, py::handle v) {
            r.gin_connection_type = connection_type(v);
          })
      .def_readwrite("gin_exclusive_contexts", &Req::gin_exclusive_contexts)
      .def_readwrite("gin_queue_depth", &Req::gin_queue_depth)
      .def("__repr__", &repr);

  py::class_<DevComm, Resource, std::shared_ptr<DevComm>>(
      m, "DevCommResource", "A device communicator (ncclDevComm); close() destroys it.")
      .def_property_readonly(
          "ptr", [](const DevComm& d) { return reinterpret_cast<uintptr_t>(d.ptr()); },
          "Host address of the ncclDevComm struct (pass it by value to your kernels).")
      .def_property_readonly("dev_comm", [](py::object self) { return self; },
                             "This resource (nccl.core spelling: resource.dev_comm.ptr).")
      .def_property_readonly("requirements", &DevComm::requirements)
      .def("__repr__", [](const DevComm& d) {
        if (!d.is_valid()) {
          return std::string("<DevCommResource (closed)>");
        }
        char buf[64];
        std::snprintf(buf, sizeof(buf), "<DevCommResource ptr=%p>", d.ptr());
        return std::string(buf);
      });

  auto cls = py::reinterpret_borrow<py::class_<Communicator, std::shared_ptr<Communicator>>>(
      m.attr("Communicator"));
  cls.def(
         "create_dev_comm",
         [](const std::shared_ptr<Communicator>& c, std::optional<Req> req) {
           Req r = req.value_or(Req{});
           Communicator::Use use(*c);
           py::gil_scoped_release release;
           return DevComm::create(c, r);
         },
         py::arg("requirements") = py::none(),
         "Creates a device communicator (collective); tracked and released with this "
         "communicator.")
      .def_property_readonly(
          "gin_type", [](Communicator& c) { return gin_enum(gin_type(c, false)); },
          "NcclGinType of this communicator (NCCL >= 2.29.2).")
      .def_property_readonly(
          "railed_gin_type", [](Communicator& c) { return gin_enum(gin_type(c, true)); },
          "NcclGinType of the rail-restricted GIN (NCCL >= 2.29.7).");

  m.def(
      "_device_all_reduce",
      [](const DevComm& dc, const Window& win, py::handle out, long long offset, int op,
         py::handle stream) {
        auto o = as_buffer(out, "out");
        check_out(o, dc);
        Communicator::Use use(*dc.owner());
        // Elements of out's dtype; in bytes it must not wrap.
        size_t at = checked::offset_bytes(offset, types::element_size(o.type), "offset");
        auto st = as_stream(stream, o.device);
        py::gil_scoped_release release;
        device::all_reduce(dc, win, at, nullptr, o.ptr, o.count, o.type, op, st);
      },
      py::arg("dev_comm"), py::arg("window"), py::arg("out"), py::arg("offset"), py::arg("op"),
      py::arg("stream"));
  m.def(
      "_device_all_gather",
      [](const DevComm& dc, const Window& win, py::handle out, long long offset,
         py::handle stream) {
        auto o = as_buffer(out, "out");
        check_out(o, dc);
        Communicator::Use use(*dc.owner());
        size_t elem = types::element_size(o.type);
        size_t at = checked::offset_bytes(offset, elem, "offset");
        size_t n = static_cast<size_t>(dc.owner()->nranks());
        NCCL_CORE_REQUIRE(o.count % n == 0, "out has ", o.count,
                          " elements, not a multiple of the ", n, " ranks");
        size_t block = checked::bytes(o.count / n, elem, "out block bytes");
        auto st = as_stream(stream, o.device);
        py::gil_scoped_release release;
        device::all_gather(dc, win, at, o.ptr, block, st);
      },
      py::arg("dev_comm"), py::arg("window"), py::arg("out"), py::arg("offset"),
      py::arg("stream"));
  m.def("_claimed_struct_version", &layout::claimed_version, py::arg("loaded"),
        "The release whose ncclDevCommRequirements / ncclCommProperties layout nccl_core "
        "claims for NCCL version code `loaded` (0: unversioned).");
  m.def("_device_kernels_available", &device_kernels_match_loaded_nccl);
  m.def("_device_kernels_mismatch", &device_kernels_mismatch_message);
}

} // namespace nccl_core::python
