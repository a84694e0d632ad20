// Bindings of Communicator: the nccl.core-style API on a group's communicator
// (its operations: raw_ops.cpp; one-sided ones: rma.cpp), and grow's three
// roles: `Communicator()` for a new rank, get_unique_id(), grow().
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <cstring>
#include <optional>
#include <string>
#include <utility>

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

// The config and timeout of a communicator made from this one (shrink,
// grow): a nccl_core_backend.Options, or None for `fallback` and defaults.
std::pair<CommConfig, std::chrono::milliseconds> child_config(
    py::handle config, std::chrono::milliseconds fallback) {
  if (config.is_none()) {
    return {CommConfig{}, fallback};
  }
  NCCL_CORE_REQUIRE(py::isinstance<GroupOptions>(config),
                    "config must be a nccl_core_backend.Options");
  const auto& o = config.cast<const GroupOptions&>();
  return {o.config, o.timeout};
}

py::object window_or_none(const std::shared_ptr<Window>& w) {
  return w ? py::cast(w) : py::none();
}

// --- grow (ncclCommGrow, comm/creation.cpp): the three roles of nccl.core ---


py::object unique_id_object(const ncclUniqueId& id) {
  py::bytes data(id.internal, sizeof(id.internal));
  return py::module_::import("nccl_core_backend.unique_id").attr("UniqueId")(data);
}

ncclUniqueId as_unique_id(py::handle obj) {
  static PyObject* const cls =
      py::object(py::module_::import("nccl_core_backend.unique_id").attr("UniqueId"))
          .release()
          .ptr();
  NCCL_CORE_REQUIRE(PyObject_IsInstance(obj.ptr(), cls) == 1,
                    "unique_id must be a UniqueId (Communicator.get_unique_id()), got ",
                    std::string(py::str(py::type::of(obj).attr("__name__"))));
  std::string data = obj.attr("as_bytes").cast<std::string>();
  ncclUniqueId id;
  NCCL_CORE_REQUIRE(data.size() == sizeof(id.internal), "a UniqueId has ", sizeof(id.internal),
                    " bytes, got ", data.size());
  std::memcpy(id.internal, data.data(), sizeof(id.internal));
  return id;
}

// The device a new rank joins on: torch's current one (-1 without CUDA,
// where only the lab's fake NCCL answers).
int current_device() {
  py::module_ cuda = py::module_::import("torch.cuda");
  if (!cuda.attr("is_available")().cast<bool>()) {
    return -1;
  }
  return cuda.attr("current_device")().cast<int>();
}

CommPtr grow(const CommPtr& c, py::handle nranks, py::handle unique_id, py::handle rank,
             py::handle config) {
  int n = checked::narrow<int>(as_int(nranks, "nranks"), "nranks");
  NCCL_CORE_REQUIRE(n > 0, "nranks must be positive, got ", n);
  bool new_rank = !rank.is_none();
  bool null = c->is_null();
  NCCL_CORE_REQUIRE(!new_rank || null,
                    "New ranks must use a null communicator (Communicator()); this one is ",
                    c->is_live() ? "initialized" : "closed");
  NCCL_CORE_REQUIRE(new_rank || !null,
                    "Existing ranks must use an initialized communicator; a new rank passes "
                    "rank= to grow() on Communicator()");
  auto [cfg, timeout] = child_config(config, new_rank ? kBackendDefaultTimeout : c->timeout());
  if (new_rank) {
    int r = checked::narrow<int>(as_int(rank, "rank"), "rank");
    NCCL_CORE_REQUIRE(!unique_id.is_none(), "a new rank needs the unique_id of the grow "
                      "(the leading rank's get_unique_id())");
    ncclUniqueId id = as_unique_id(unique_id);
    int device = current_device();
    py::gil_scoped_release release;
    return Communicator::join_grow(id, n, r, device, cfg, timeout);
  }
  std::optional<ncclUniqueId> id;
  if (!unique_id.is_none()) {
    id = as_unique_id(unique_id);
  }
  py::gil_scoped_release release;
  return c->grow(n, id ? &*id : nullptr, cfg, timeout);
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
      .def(
          "revoke",
          [](Communicator& c, py::handle flags) {
            int f = checked::narrow<int>(as_int(flags, "flags"), "flags");
            py::gil_scoped_release release;
            c.revoke(f);
          },
          arg("flags") = 0,
          "ncclCommRevoke (NCCL >= 2.28.7): stops the operations in flight; then destroy(), "
          "split or shrink it (finalize() is refused).  flags is reserved: 0.")
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
            auto [cfg, timeout] = child_config(config, c->timeout());
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
  m.def("group_simulate_end", &raw::group_simulate_end, py::call_guard<py::gil_scoped_release>(),
        "ncclGroupSimulateEnd: ends the outermost group without launching it; NCCL's "
        "estimate of its time.");
  m.def("_group_depth", &raw::group_depth);
  m.def(
      "get_error_string",
      [](py::handle result) {
        int r = checked::narrow<int>(as_int(result, "nccl_result"), "nccl_result");
        return std::string(nccl().GetErrorString(static_cast<ncclResult_t>(r)));
      },
      arg("nccl_result"), "Human-readable string of an NCCL result code.");
}

// `Communicator()` (the null communicator a new rank joins from),
// get_unique_id() on the rank that leads a grow, and grow() on every rank.
void bind_grow(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<Communicator, CommPtr>>(m.attr("Communicator"));
  cls.def(py::init([] { return Communicator::null_communicator(); }),
          "A null communicator (no NCCL handle): what a new rank calls grow(..., rank=) on.")
      .def(
          "get_unique_id",
          [](Communicator& c) {
            ncclUniqueId id;
            {
              py::gil_scoped_release release;
              id = c.grow_unique_id();
            }
            return unique_id_object(id);
          },
          "ncclCommGetUniqueId (NCCL >= 2.29.2): the UniqueId of this communicator's next "
          "grow, asked by the one existing rank that leads it and given to the new ranks.")
      .def("grow", &grow, py::arg("nranks"), py::arg("unique_id") = py::none(),
           py::arg("rank") = py::none(), py::arg("config") = py::none(),
           "ncclCommGrow (NCCL >= 2.29.2), collective over the existing and the new ranks: "
           "existing ranks call it on this communicator (unique_id on the leading rank only), "
           "new ranks on Communicator() with unique_id and rank=.  The new communicator keeps "
           "the existing ranks first and belongs to the caller: finalize() or destroy() it.");
}

} // namespace nccl_core::python
