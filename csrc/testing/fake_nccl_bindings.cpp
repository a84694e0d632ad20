// Bindings of the fake NCCL (fake_nccl.h): `_FakeNccl`, installed behind the
// seam by the CPU tests, and the product calls those tests drive on it
// (`_fake_communicator`, `_split`, `_raw_with_config`).  The Communicator they return is the
// product's own (nccl_core_backend._C.Communicator).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <climits>
#include <memory>

#include "collectives/raw_ops.h"
#include "comm/communicator.h"
#include "nccl/api.h"
#include "nccl/seam.h"
#include "python/coll_config.h"
#include "testing/bind.h"
#include "testing/fake_nccl.h"

namespace py = pybind11;

namespace nccl_core::testing {

namespace {

std::chrono::milliseconds millis(long long ms) {
  NCCL_CORE_REQUIRE(ms > 0, "timeout_ms must be positive, got ", ms);
  return std::chrono::milliseconds(ms);
}

// `collective` of the raw API with `config` on buffers that only the fake
// sees: null pointers of `count` float32 elements per rank, root 0.
void raw_with_config(Communicator& c, const std::string& collective, py::handle config,
                     size_t count) {
  auto cfg = python::coll_config_of(config.ptr());
  auto n = static_cast<size_t>(c.nranks());
  Buffer one{nullptr, count, ncclFloat32, c.device()};
  Buffer all{nullptr, count * n, ncclFloat32, c.device()};
  py::gil_scoped_release release;
  const collectives::CollConfig* k = cfg.get();
  if (collective == "allreduce") {
    raw::all_reduce(c, one, one, ncclSum, nullptr, k);
  } else if (collective == "reduce") {
    raw::reduce(c, one, one, ncclSum, 0, nullptr, k);
  } else if (collective == "broadcast") {
    raw::broadcast(c, one, one, 0, nullptr, k);
  } else if (collective == "allgather") {
    raw::gather(c, one, all, -1, nullptr, k);
  } else if (collective == "gather") {
    raw::gather(c, one, all, 0, nullptr, k);
  } else if (collective == "reduce_scatter") {
    raw::reduce_scatter(c, all, one, ncclSum, nullptr, k);
  } else if (collective == "alltoall") {
    raw::alltoall(c, all, all, nullptr, k);
  } else if (collective == "scatter") {
    raw::scatter(c, all, one, 0, nullptr, k);
  } else {
    throw NcclInvalid("no collective " + collective);
  }
}

}  // namespace

void bind_fake_nccl(py::module_& m) {
  py::class_<FakeNccl, std::shared_ptr<FakeNccl>>(
      m, "_FakeNccl", "An NCCL that runs on no GPU, scripted by the test (fake_nccl.h).")
      .def(py::init<>())
      .def("install", [](const std::shared_ptr<FakeNccl>& f) { install_nccl(f); },
           "Puts this fake behind the seam in place of the loaded NCCL.")
      .def_static(
          "uninstall",
          [] {
            auto previous = install_nccl(nullptr);
            auto fake = std::dynamic_pointer_cast<FakeNccl>(previous);
            if (fake && fake->live_comms() != 0) {
              install_nccl(previous);  // the loaded NCCL must never see a fake handle
              throw NcclInvalid(concat("the fake NCCL still has ", fake->live_comms(),
                                       " live communicators: abort or destroy them first"));
            }
          },
          "The loaded NCCL again; refused while a fake communicator is alive.")
      .def("set_version", &FakeNccl::set_version, py::arg("code"))
      .def("hide", &FakeNccl::hide, py::arg("symbol"),
           "provides(symbol) answers False from now on.")
      .def(
          "fail", [](FakeNccl& f, const std::string& call, int result) {
            f.fail(call, static_cast<ncclResult_t>(result));
          },
          py::arg("call"), py::arg("result"),
          "Every later `call` (a seam name: CommSplit, AllReduce, ...) answers `result`.")
      .def("stay_in_progress", &FakeNccl::stay_in_progress, py::arg("polls"),
           "CommGetAsyncError answers ncclInProgress for this many polls (< 0: always).")
      .def("set_last_error", &FakeNccl::set_last_error, py::arg("text"))
      .def("set_init_delay_ms", &FakeNccl::set_init_delay_ms, py::arg("ms"))
      .def("set_param", &FakeNccl::set_param, py::arg("key"), py::arg("value"),
           "NCCL's parameter `key` reads `value` from now on.")
      .def_property_readonly("calls", &FakeNccl::calls)
      .def(
          "calls_to",
          [](const FakeNccl& f, const std::string& name) {
            std::vector<std::string> out;
            for (const auto& c : f.calls()) {
              if (c == name || c.rfind(name + "(", 0) == 0) {
                out.push_back(c);
              }
            }
            return out;
          },
          py::arg("name"), "The recorded calls of `name`, with their arguments.")
      .def("clear_calls", &FakeNccl::clear_calls)
      .def_property_readonly("live_comms", &FakeNccl::live_comms);

  m.def(
      "_fake_communicator",
      [](int nranks, int rank, bool blocking, long long timeout_ms, int min_ctas, int max_ctas,
         const std::string& comm_name) {
        CommConfig config;
        config.blocking = blocking;
        config.min_ctas = min_ctas;
        config.max_ctas = max_ctas;
        config.comm_name = comm_name;
        ncclUniqueId id = Communicator::new_unique_id();
        return Communicator::create(id, nranks, rank, /*device=*/-1, config, millis(timeout_ms));
      },
      py::arg("nranks"), py::arg("rank"), py::arg("blocking") = true,
      py::arg("timeout_ms") = 5000, py::arg("min_ctas") = INT_MIN, py::arg("max_ctas") = INT_MIN,
      py::arg("comm_name") = "", py::call_guard<py::gil_scoped_release>(),
      "Communicator::create on the installed NCCL, with no CUDA device (the fake's).");
  m.def(
      "_split",
      [](const std::shared_ptr<Communicator>& comm, int color, int key, bool blocking,
         long long timeout_ms) {
        CommConfig config;
        config.blocking = blocking;
        return comm->split(color, key, config, millis(timeout_ms));
      },
      py::arg("comm"), py::arg("color"), py::arg("key"), py::arg("blocking") = true,
      py::arg("timeout_ms") = 5000, py::call_guard<py::gil_scoped_release>(),
      "Communicator::split (dist.new_group's path; a negative color: no color).");
  m.def("_raw_with_config", &raw_with_config, py::arg("comm"), py::arg("collective"),
        py::arg("config"), py::arg("count") = 8,
        "A raw collective with config= on null buffers of the fake's communicator.");
}

}  // namespace nccl_core::testing
