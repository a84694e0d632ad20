// Bindings of Communicator: the nccl.core-style API on a group's communicator
// (its operations: raw_ops.cpp; one-sided ones: rma.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/options.h"
#include "comm/communicator.h"
#include "collectives/raw_ops.h"
#include "comm/resources.h"
#include "nvlink/raw.h"
#include "memory/vmm.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "nccl/seam.h"
#include "python/bind.h"
#include "python/convert.h"
#include "rma/signals.h"
#include "util/checked.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

using CommPtr = std::shared_ptr<Communicator>;
using py::arg;

py::object constants() {
  return py::module_::import("nccl_core_backend.constants");
}

// The storage that keeps a registered buffer's memory alive.
c10::Storage storage_of(const at::Tensor& t) {
  return t.storage();
}

py::object window_or_none(const std::shared_ptr<Window>& w) {
  return w ? py::cast(w) : py::none();
}

} // namespace

void bind_communicator(py::module_& m) {
  py::class_<Communicator, CommPtr>(
      m, "Communicator",
      "The NCCL communicator of a process group (see get_communicator).")
      .def_property_readonly("rank", &Communicator::rank, "This rank within the communicator.")
      .def_property_readonly("nranks", &Communicator::nranks, "Number of ranks.")
      .def_property_readonly(
          "device",
          [](const Communicator& c) {
            return py::module_::import("torch").attr("device")("cuda", c.device());
          },
          "The CUDA device (torch.device) the communicator runs on.")
      .def_property_readonly(
          "ptr",
          [](const Communicator& c) {
            return c.is_live() ? reinterpret_cast<uintptr_t>(c.get()) : uintptr_t{0};
          },
          "Raw ncclComm_t as an int (0 once destroyed or aborted).")
      .def_property_readonly("is_valid", &Communicator::is_live,
                             "Whether the communicator is live (not destroyed/aborted).")
      .def("get_last_error", &Communicator::last_error,
           "Last error string NCCL recorded for this communicator.")
      .def(
          "get_async_error",
          [](const Communicator& c) {
            auto r = c.async_error();
            return constants().attr("Result")(static_cast<int>(r));
          },
          "State of asynchronous operations: Result.Success, InProgress or an error.")
      .def(
          "get_mem_stat",
          [](const Communicator& c, py::handle stat) {
            long long s = as_int(stat, "stat");
            NCCL_CORE_REQUIRE(s >= 0 && s <= 3, "Invalid NcclCommMemStat: ", s);
            return c.mem_stat(static_cast<newer::MemStat>(s));
          },
          arg("stat"), "Memory statistic (NCCL >= 2.29.7).")
      .def(
          "suspend",
          [](Communicator& c, int flags) {
            NCCL_CORE_REQUIRE(flags == newer::kSuspendMem,
                              "Invalid suspend flags: ", flags, " (NCCL_SUSPEND_MEM = 1)");
            c.suspend(flags);
          },
          arg("flags") = newer::kSuspendMem, py::call_guard<py::gil_scoped_release>(),
          "Releases the communicator's suspendable device memory until resume() "
          "(ncclCommSuspend, NCCL >= 2.29.7).")
      .def("resume", &Communicator::resume, py::call_guard<py::gil_scoped_release>(),
           "Restores what suspend() released (ncclCommResume, NCCL >= 2.29.7).")
      .def("close_all_resources", &Communicator::close_all_resources,
           py::call_guard<py::gil_scoped_release>(),
           "Closes every resource of this communicator (best effort, idempotent).")
      .def("finalize", &Communicator::finalize, py::call_guard<py::gil_scoped_release>(),
           "Releases resources, flushes pending work, then destroys the communicator.")
      .def("destroy", &Communicator::destroy, py::call_guard<py::gil_scoped_release>(),
           "Releases resources, then ncclCommDestroy.")
      .def("abort", &Communicator::abort, py::call_guard<py::gil_scoped_release>(),
           "ncclCommAbort; resources are released with it.")
      .def(
          "shrink",
          [](const CommPtr& c, py::handle exclude_ranks, py::handle config, py::handle flag) {
            std::vector<int> exclude;
            if (!exclude_ranks.is_none()) {
              for (py::handle r : exclude_ranks) {
                long long v = as_int(r, "exclude_ranks");
                NCCL_CORE_REQUIRE(v >= 0 && v < c->nranks(), "exclude_ranks: rank ", v,
                                  " is outside the communicator of ", c->nranks(), " ranks");
                NCCL_CORE_REQUIRE(v != c->rank(), "exclude_ranks contains this rank (", v,
                                  "); excluded ranks must not call shrink");
                for (int e : exclude) {
                  NCCL_CORE_REQUIRE(e != v, "exclude_ranks lists rank ", v,
                                    " twice; each excluded rank must appear once");
                }
                exclude.push_back(static_cast<int>(v));
              }
            }
            long long f = flag.is_none() ? 0 : as_int(flag, "flag");
            NCCL_CORE_REQUIRE(f == 0 || f == 1, "Invalid CommShrinkFlag: ", f);
            CommConfig cfg;
            auto timeout = c->timeout();
            if (!config.is_none()) {
              NCCL_CORE_REQUIRE(py::isinstance<GroupOptions>(config),
                                "config must be a nccl_core_backend.Options");
              const auto& o = config.cast<const GroupOptions&>();
              cfg = o.config;
              timeout = o.timeout;
            }
            py::gil_scoped_release release;
            return c->shrink(exclude, static_cast<int>(f), cfg, timeout);
          },
          arg("exclude_ranks") = py::none(), arg("config") = py::none(),
          arg("flag") = 0,
          "ncclCommShrink: a new communicator without exclude_ranks (collective over the "
          "remaining ranks).  The new communicator belongs to the caller: finalize() or "
          "destroy() it; it is aborted when garbage-collected.")
      .def("_resource_count", &Communicator::resource_count)
      .def("_fast_path_calls", [](Communicator& c) { return nvlink::raw_fast_path_calls(c); })

      // --- resources -------------------------------------------------------
      .def(
          "register_buffer",
          [](const CommPtr& c, py::handle buffer) {
            Communicator::Use use(*c);
            at::Tensor t = as_tensor(buffer, "buffer");
            // A byte range: any dense layout.
            auto b = resolve_tensor(t, "buffer", BufferLayout::Dense);
            NCCL_CORE_REQUIRE(b.device == c->device(), "buffer is on device ", b.device,
                              ", but communicator is on device ", c->device());
            size_t bytes = checked::bytes(b.count, types::element_size(b.type), "buffer bytes");
            py::gil_scoped_release release;
            return RegisteredBuffer::create(c, b.ptr, bytes, storage_of(t));
          },
          arg("buffer"), "ncclCommRegister: zero-copy registration of a buffer.")
      .def(
          "register_window",
          [](const CommPtr& c, py::handle buffer, py::handle flags) {
            Communicator::Use use(*c);
            at::Tensor t = as_tensor(buffer, "buffer");
            auto b = resolve_tensor(t, "buffer", BufferLayout::Dense);
            NCCL_CORE_REQUIRE(b.device == c->device(), "buffer is on device ", b.device,
                              ", but communicator is on device ", c->device());
            long long f = flags.is_none() ? 0 : as_int(flags, "flags");
            Window::check_flags(f);  // before the collective signal-area set-up
            NCCL_CORE_REQUIRE(vmm::is_vmm(b.ptr),
                              "register_window needs NCCL (VMM) memory; this buffer was not "
                              "allocated through ncclMemAlloc or cuMem. Allocate it with "
                              "nccl_core_backend.torch.empty or a MemPool on the group's "
                              "mem_allocator");
            size_t bytes = checked::bytes(b.count, types::element_size(b.type), "buffer bytes");
            std::shared_ptr<Window> w;
            {
              py::gil_scoped_release release;
              rma::prepare(c); // collective too: the NCCL 2.28 signal area
              w = Window::create(c, b.ptr, bytes, static_cast<int>(f), storage_of(t));
              if (w) {
                rma::after_window(c, static_cast<int>(f));  // NCCL's set-up, if due
              }
            }
            return window_or_none(w);
          },
          arg("buffer"), arg("flags") = py::none(),
          "ncclCommWindowRegister (collective); None where windows are unsupported.")
      .def(
          "create_pre_mul_sum",
          [](const CommPtr& c, py::handle scalar, py::handle datatype, py::handle residence) {
            Communicator::Use use(*c);
            auto make = py::module_::import("nccl_core_backend._scalars").attr("premul_scalar");
            py::object t = make(scalar, datatype, residence, c->device());
            at::Tensor s = THPVariable_Unpack(t.ptr());
            auto type = types::to_nccl_or_throw(s.scalar_type());
            return CustomRedOp::create(c, s, type);
          },
          arg("scalar"), arg("datatype") = py::none(), arg("residence") = py::none(),
          "ncclRedOpCreatePreMulSum: output = scalar * sum(inputs).");

  m.def("group_start", &raw::group_start, "ncclGroupStart for this thread.");
  m.def("group_end", &raw::group_end, py::call_guard<py::gil_scoped_release>(),
        "ncclGroupEnd; waits for the communicators the group used.");
  m.def("_group_depth", &raw::group_depth);
  m.def(
      "get_error_string",
      [](py::handle result) {
        int r = checked::narrow<int>(as_int(result, "nccl_result"), "nccl_result");
        return std::string(nccl().GetErrorString(static_cast<ncclResult_t>(r)));
      },
      arg("nccl_result"), "Human-readable string of an NCCL result code.");
}

} // namespace nccl_core::python
