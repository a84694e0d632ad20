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
}

} // namespace nccl_core::python
