// Private bindings for the GPU checks of NCCL's host-side window queries
// against nccl_core's own sources (comm/window_queries.h): _window_descriptor,
// _descriptor_*_pointer, _nccl_* and _copy_from of a RegisteredWindowHandle.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <c10/cuda/CUDAStream.h>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "comm/window_queries.h"
#include "device/dev_comm.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "testing/bind.h"
#include "util/checked.h"

namespace py = pybind11;

namespace nccl_core::testing {


namespace {

size_t offset_of(long long offset) {
  NCCL_CORE_REQUIRE(offset >= 0, "offset ", offset, " must be >= 0");
  return static_cast<size_t>(offset);
}

py::object address(const std::optional<void*>& p) {
  return p ? py::cast(reinterpret_cast<uintptr_t>(*p)) : py::none();
}

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

} // namespace

void bind_window_checks(py::module_& m) {
  m.def(
      "_window_descriptor",
         [](const Window& w) {
           auto d = window_queries::descriptor(w);
           py::dict out;
           out["lsa_flat_base"] = static_cast<unsigned long long>(d.lsa_flat_base);
           out["lsa_rank"] = d.lsa_rank;
           out["world_rank"] = d.world_rank;
           out["stride_4g"] = d.stride_4g;
           return out;
         },
         "The head of NCCL's device-side window descriptor, read now (NCCL 2.28.3-2.32.x).");
  m.def(
          "_descriptor_lsa_pointer",
          [](const Window& w, int lsa_rank, long long offset) {
            return address(window_queries::descriptor_lsa_pointer(w, lsa_rank, offset_of(offset)));
          },
          py::arg("window"), py::arg("lsa_rank"), py::arg("offset") = 0,
          "LSA rank's copy (+offset) computed from the descriptor, as on NCCL 2.28.");
  m.def(
          "_descriptor_peer_pointer",
          [](const Window& w, int peer, long long offset) {
            return address(window_queries::descriptor_peer_pointer(w, peer, offset_of(offset)));
          },
          py::arg("window"), py::arg("peer"), py::arg("offset") = 0,
          "World rank's copy (+offset) from the descriptor; None outside the LSA team.");
  m.def(
          "_nccl_lsa_pointer",
          [](const Window& w, int lsa_rank, long long offset) {
            return address(window_queries::nccl_lsa_pointer(w, lsa_rank, offset_of(offset)));
          },
          py::arg("window"), py::arg("lsa_rank"), py::arg("offset") = 0,
          "ncclGetLsaDevicePointer (NCCL >= 2.29.2).");
  m.def(
          "_nccl_peer_pointer",
          [](const Window& w, int peer, long long offset) {
            return address(window_queries::nccl_peer_pointer(w, peer, offset_of(offset)));
          },
          py::arg("window"), py::arg("peer"), py::arg("offset") = 0,
          "ncclGetPeerDevicePointer (NCCL >= 2.29.2); None where NCCL answers NULL.");
  m.def(
          "_nccl_user_ptr",
          [](const Window& w) { return address(window_queries::nccl_user_ptr(w)); },
          "ncclWinGetUserPtr (NCCL >= 2.29.2).");
  m.def(
      "_copy_from",
      [](const Window& w, unsigned long long addr, const at::Tensor& out) {
        auto comm = w.owner();
        NCCL_CORE_REQUIRE(comm != nullptr, "the window's communicator is gone");
        NCCL_CORE_REQUIRE(out.is_cuda() && out.get_device() == comm->device() && out.is_contiguous(),
                          "out must be a contiguous tensor on cuda:", comm->device(),
                          ", the window's communicator's device");
        size_t bytes = checked::bytes(checked::narrow<size_t>(out.numel(), "out elements"),
                                      out.element_size(), "out bytes");
        cudaStream_t st = c10::cuda::getCurrentCUDAStream(comm->device()).stream();
        window_queries::copy_from(w, reinterpret_cast<const void*>(addr), bytes, out.data_ptr(), st);
      },
      py::arg("window"), py::arg("address"), py::arg("out"),
      "Copies out's size in bytes from a device address inside one LSA rank's copy of "
      "this window into out, on the current stream.");
}

} // namespace nccl_core::testing
