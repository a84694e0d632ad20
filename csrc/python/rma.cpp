// Bindings of the one-sided operations (rma/signals.h) on Communicator.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "python/bind.h"
#include "python/convert.h"
#include "python/fastcall.h"
#include "rma/route.h"
#include "rma/signals.h"
#include "util/checked.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

void require_zero(py::handle v, const char* name) {
  long long x = as_int(v, name);
  NCCL_CORE_REQUIRE(x == 0, name, " must be 0 (NCCL reserves it), got ", x);
}

rma::WaitDesc as_wait_desc(py::handle d) {
  NCCL_CORE_REQUIRE(py::hasattr(d, "peer") && py::hasattr(d, "op_count"),
                    "wait_signal takes WaitSignalDesc objects, got ",
                    std::string(py::str(py::type::of(d).attr("__name__"))));
  require_zero(d.attr("signal_index"), "signal_index");
  require_zero(d.attr("context"), "context");
  long long peer = as_int(d.attr("peer"), "peer");
  long long count = as_int(d.attr("op_count"), "op_count");
  NCCL_CORE_REQUIRE(count >= 1 && count <= (1ll << 30), "op_count must be >= 1, got ", count);
  NCCL_CORE_REQUIRE(peer >= 0 && peer <= (1ll << 30), "peer ", peer, " must be >= 0");
  return rma::WaitDesc{static_cast<int>(peer), static_cast<int>(count)};
}

} // namespace

void bind_rma(py::module_& m) {
  py::handle cls = m.attr("Communicator");
  // Vectorcall methods (fastcall.h), as the other raw operations.
  fastcall::def(
      cls, "put_signal",
      "local_buffer, peer, peer_window, peer_window_offset=0, signal_index=0, context=0, "
      "flags=0, *, stream=None",
      [](Communicator& c, py::handle local_buffer, py::handle peer, py::handle peer_window,
         py::handle peer_window_offset, py::handle signal_index, py::handle context,
         py::handle flags, py::handle stream) {
        Communicator::Use use(c);  // finalize/destroy on another thread waits for the call
        int p = as_rank(peer, "peer");
        require_zero(signal_index, "signal_index");
        require_zero(context, "context");
        require_zero(flags, "flags");
        NCCL_CORE_REQUIRE(py::isinstance<Window>(peer_window),
                          "peer_window must be a RegisteredWindowHandle");
        const Window& w = peer_window.cast<const Window&>();
        auto src = as_buffer(local_buffer, "local_buffer");
        long long off = as_int(peer_window_offset, "peer_window_offset");
        // The offset counts elements of the local buffer's dtype; in bytes it
        // must not wrap (1 << 62 elements of 4 bytes would be 0).
        size_t bytes = checked::offset_bytes(off, types::element_size(src.type),
                                             "peer_window_offset");
        auto st = as_stream(stream, c.device());
        py::gil_scoped_release release;
        rma::put_signal(c, src, p, w, bytes, st);
      },
      "Puts local_buffer into peer's copy of the window (offset in elements) and "
      "signals the peer.");
  fastcall::def(
      cls, "signal", "peer, signal_index=0, context=0, flags=0, *, stream=None",
      [](Communicator& c, py::handle peer, py::handle signal_index, py::handle context,
         py::handle flags, py::handle stream) {
        Communicator::Use use(c);  // finalize/destroy on another thread waits for the call
        int p = as_rank(peer, "peer");
        require_zero(signal_index, "signal_index");
        require_zero(context, "context");
        require_zero(flags, "flags");
        auto st = as_stream(stream, c.device());
        py::gil_scoped_release release;
        rma::signal(c, p, st);
      },
      "Sends a signal to peer, after the stream's earlier work.");
  fastcall::def(
      cls, "wait_signal", "descs, *, stream=None",
      [](Communicator& c, py::handle descs, py::handle stream) {
        Communicator::Use use(c);
        std::vector<rma::WaitDesc> list;
        if (py::hasattr(descs, "peer")) {
          list.push_back(as_wait_desc(descs));
        } else {
          NCCL_CORE_REQUIRE(py::isinstance<py::sequence>(descs),
                            "descs must be a WaitSignalDesc or a sequence of them");
          for (py::handle d : descs) {
            list.push_back(as_wait_desc(d));
          }
        }
        auto st = as_stream(stream, c.device());
        py::gil_scoped_release release;
        rma::wait_signal(c, list, st);
      },
      "Blocks the stream until the described signals have arrived.");
  m.def("_rma_native", &rma::native, "Whether NCCL's own one-sided API is used.");
  m.def(
      "_parse_rma_route",
      [](const std::string& text) { return std::string(rma::route_name(rma::parse_route(text, "rma_route"))); },
      py::arg("text"), "The route a setting names (\"auto\" / \"native\"); NcclInvalid otherwise.");

  auto comm_cls = py::reinterpret_borrow<py::class_<Communicator, std::shared_ptr<Communicator>>>(
      m.attr("Communicator"));
  comm_cls.def_property(
      "rma_route",
      [](const Communicator& c) { return std::string(rma::route_name(rma::route_of(c))); },
      [](Communicator& c, py::handle value) {
        NCCL_CORE_REQUIRE(py::isinstance<py::str>(value),
                          "rma_route must be \"auto\" or \"native\", got ",
                          std::string(py::str(py::type::of(value).attr("__name__"))));
        rma::set_route(c, rma::parse_route(value.cast<std::string>(), "rma_route"));
      },
      "Route of put_signal / signal / wait_signal: \"auto\" (NVLink peers through "
      "nccl_core's kernels, others through NCCL) or \"native\" (every peer through NCCL's "
      "ncclPutSignal / ncclSignal / ncclWaitSignal, NCCL >= 2.29.2).  Default: "
      "NCCL_CORE_RMA_ROUTE, else auto.  Agreed by every rank at the first register_window "
      "(ranks asking for different routes all raise NcclInvalid) and fixed while the "
      "communicator's windows live.");
  comm_cls.def(
      "_rma_served_by_kernels",
      [](Communicator& c, int peer) { return rma::served_by_kernels(c, peer); },
      py::arg("peer"),
      "True if one-sided operations with `peer` run as nccl_core's kernels, False if "
      "through NCCL's calls (needs a registered window).");
}

} // namespace nccl_core::python
