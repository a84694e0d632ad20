// Private bindings for the tests of the fast path's and the push's kernels on
// one GPU (testing/emulated_ranks.h): `_EmulatedRanks`; and the counts of the
// mapped host cache their progress words come from (memory/mapped_host.h).
// Not part of the public API.  Tensors are checked here (device, layout, room
// for what the call writes) so that a test's mistake is a ValueError, not a
// stray store.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>

#include "memory/mapped_host.h"
#include "nccl/types.h"
#include "testing/emulated_ranks.h"
#include "testing/bind.h"
#include "util/checked.h"
#include "util/concat.h"
#include "util/torch_errors.h"

namespace nccl_core::testing {

namespace py = pybind11;
using nvlink::EmulatedRanks;

namespace {

// `t` lies on `device` (or, `host_ok`, in pinned host memory, which kernels
// reach at the same address), is contiguous, and holds at least `bytes`.
void check_room(const at::Tensor& t, int device, size_t bytes, const char* what,
                bool host_ok = false) {
  bool on_device = t.is_cuda() && t.device().index() == device;
  bool pinned = host_ok && t.is_cpu() && t.is_pinned();
  if (!(on_device || pinned) || !t.is_contiguous()) {
    throw py::value_error(concat("emulated ranks: ", what, " must be a contiguous tensor on cuda:",
                                 device, host_ok ? " or in pinned host memory" : ""));
  }
  size_t has = checked::bytes<raise_value_error>(
      checked::narrow<size_t, raise_value_error>(t.numel(), "element count"), t.element_size(),
      what);
  if (has < bytes) {
    throw py::value_error(concat("emulated ranks: ", what, " holds ", has, " bytes; the call ",
                                 "uses ", bytes));
  }
}

// A device tensor a rank's queued call uses stays allocated until that
// rank's stream is done with it, even if the test drops it first.
void hold(const at::Tensor& t, const EmulatedRanks& ranks, int rank) {
  if (t.is_cuda()) {
    t.record_stream(ranks.stream(rank).unwrap());
  }
}

size_t count_bytes(size_t count, const at::Tensor& t, const char* what) {
  return checked::bytes<raise_value_error>(count, t.element_size(), what);
}

}  // namespace

void bind_nvlink_lab(py::module_& m) {
  py::class_<EmulatedRanks>(m, "_EmulatedRanks",
                            "Tests: the fast path's and the push's kernels for `nranks` ranks "
                            "emulated on one GPU (testing/emulated_ranks.h).")
      .def(py::init([](int nranks, size_t max_bytes, size_t push_max_bytes, int device,
                       int max_blocks, size_t one_way_max_bytes) {
             return std::make_unique<EmulatedRanks>(nranks, max_bytes, push_max_bytes, device,
                                                    max_blocks, one_way_max_bytes);
           }),
           py::arg("nranks"), py::arg("max_bytes"), py::arg("push_max_bytes") = 0,
           py::arg("device") = 0, py::arg("max_blocks") = 0, py::arg("one_way_max_bytes") = 0)
      .def_property_readonly("nranks", &EmulatedRanks::nranks)
      .def_property_readonly("max_blocks", &EmulatedRanks::max_blocks)
      .def_property_readonly("max_push_blocks", &EmulatedRanks::max_push_blocks)
      .def(
          "reduce",
          [](EmulatedRanks& self, int rank, const at::Tensor& input, size_t in_count,
             const at::Tensor& output, size_t count, size_t src_offset, int op,
             size_t two_shot_min_bytes, uint64_t seq) {
            const int device = self.device();
            if (input.scalar_type() != output.scalar_type()) {
              throw py::value_error("emulated ranks: input and output dtypes differ");
            }
            check_room(input, device, count_bytes(in_count, input, "input bytes"), "input");
            check_room(output, device, count_bytes(count, output, "output bytes"), "output",
                       true);
            if (src_offset > in_count || count > in_count - src_offset) {
              throw py::value_error(concat("emulated ranks: ", count, " elements at ", src_offset,
                                           " are past the ", in_count, " staged"));
            }
            bool queued = self.reduce(rank, input.data_ptr(), in_count, output.data_ptr(), count,
                                      src_offset, types::to_nccl_or_throw(input.scalar_type()),
                                      op, two_shot_min_bytes, seq);
            hold(input, self, rank);
            hold(output, self, rank);
            return queued;
          },
          py::arg("rank"), py::arg("input"), py::arg("in_count"), py::arg("output"),
          py::arg("count"), py::arg("src_offset"), py::arg("op"),
          py::arg("two_shot_min_bytes") = 0, py::arg("seq") = 0,
          "Queues rank's part of a reduce call (kernels.h launch_reduce); False: not covered.")
      .def(
          "copy",
          [](EmulatedRanks& self, int rank, const std::optional<at::Tensor>& input,
             size_t in_bytes, const at::Tensor& output, size_t bytes, size_t src_offset,
             int first, int npeers, uint64_t seq) {
            const int device = self.device();
            if (in_bytes > 0 && !input) {
              throw py::value_error("emulated ranks: in_bytes without an input");
            }
            if (input) {
              check_room(*input, device, in_bytes, "input");
            }
            check_room(output, device,
                       checked::mul<raise_value_error>(bytes, npeers > 0 ? npeers : 0,
                                                       "output bytes"),
                       "output");
            self.copy(rank, input ? input->data_ptr() : nullptr, in_bytes, output.data_ptr(),
                      bytes, src_offset, first, npeers, seq);
            if (input) {
              hold(*input, self, rank);
            }
            hold(output, self, rank);
          },
          py::arg("rank"), py::arg("input"), py::arg("in_bytes"), py::arg("output"),
          py::arg("bytes"), py::arg("src_offset"), py::arg("first"), py::arg("npeers"),
          py::arg("seq") = 0,
          "Queues rank's part of a copy call (kernels.h launch_copy).")
      .def(
          "push",
          [](EmulatedRanks& self, int rank, const at::Tensor& data, int op, int blocks,
             uint64_t seq) {
            check_room(data, self.device(), 0, "data");
            self.push(rank, data.data_ptr(),
                      checked::narrow<size_t, raise_value_error>(data.numel(), "element count"),
                      types::to_nccl_or_throw(data.scalar_type()), op, blocks, seq);
            hold(data, self, rank);
          },
          py::arg("rank"), py::arg("data"), py::arg("op"), py::arg("blocks"), py::arg("seq") = 0,
          "Queues rank's part of a push all-reduce of `data` in place.")
      .def("synchronize", &EmulatedRanks::synchronize, py::arg("timeout_s") = 30.0,
           py::call_guard<py::gil_scoped_release>(),
           "Waits for every rank's calls; past the timeout aborts them and raises.")
      .def("faults", &EmulatedRanks::faults,
           "Per rank: (the first mismatch its kernels recorded, 0 while none; its call's seq).");
  m.def("_fault_peer", [](uint64_t f) { return nvlink::fault_peer(f); },
        "Tests: the peer named by a packed mismatch record (kernels.h pack_fault).");
  m.def("_mapped_host_blocks", &MappedHost::cached_blocks,
        "Tests: blocks in the mapped host cache that no owner holds.");
}

}  // namespace nccl_core::testing
