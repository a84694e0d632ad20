// The pybind11 module nccl_core_backend._C.  All pybind code lives in
// csrc/python/; this file defines the module and its exception mapping.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "nccl/api.h"
#include "nccl/seam.h"
#include "util/host_profile.h"
#include "python/bind.h"

namespace py = pybind11;

namespace {

void translate_errors(std::exception_ptr p) {
  try {
    if (p) {
      std::rethrow_exception(p);
    }
  } catch (const nccl_core::NcclInvalid& e) {
    auto errors = py::module_::import("nccl_core_backend.errors");
    py::object exc = errors.attr("NcclInvalid")(e.what(),
                                                static_cast<int>(ncclInvalidArgument));
    PyErr_SetObject(errors.attr("NcclInvalid").ptr(), exc.ptr());
  } catch (const nccl_core::NcclUnsupported& e) {
    auto errors = py::module_::import("nccl_core_backend.errors");
    py::object exc = errors.attr("NcclUnsupported")(e.what(),
                                                    static_cast<int>(e.result()));
    PyErr_SetObject(errors.attr("NcclUnsupported").ptr(), exc.ptr());
  } catch (const nccl_core::NcclError& e) {
    auto errors = py::module_::import("nccl_core_backend.errors");
    py::object exc = errors.attr("NcclError")(e.what(), static_cast<int>(e.result()));
    PyErr_SetObject(errors.attr("NcclError").ptr(), exc.ptr());
  }
}

} // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "nccl_core C++ extension";
  // The c10d base classes must be registered before we derive from them.
  py::module_::import("torch.distributed");
  py::register_exception_translator(&translate_errors);

  m.def("nccl_version", [] { return nccl_core::api::loaded_version(); },
        "Version code of the NCCL library loaded in this process.");
  m.def("build_nccl_version", [] { return NCCL_VERSION_CODE; },
        "Version code of the NCCL headers the extension was built with.");
  m.def("has_symbol", [](const std::string& name) {
    return nccl_core::nccl().provides(name.c_str());
  }, "Whether the loaded NCCL exports `name`.");

  m.def(
      "_host_profile",
      [](std::optional<bool> enable, bool reset) {
        if (enable) {
          nccl_core::host_profile::set_enabled(*enable);
        }
        py::dict out;
        for (auto& [name, v] : nccl_core::host_profile::snapshot(reset)) {
          out[py::str(name)] = py::make_tuple(v.first, v.second);
        }
        return out;
      },
      py::arg("enable") = py::none(), py::arg("reset") = false,
      "Host time per phase of the collective calls since the last reset, as "
      "{phase: (calls, mean µs)}; `enable` turns the measuring on or off.");

  nccl_core::python::bind_backend(m);
  nccl_core::python::bind_resources(m);
  nccl_core::python::bind_communicator(m);
  nccl_core::python::bind_raw_ops(m);
  nccl_core::python::bind_memory(m);
  nccl_core::python::bind_rma(m);
  nccl_core::python::bind_device(m);
  nccl_core::python::bind_properties(m);
  nccl_core::python::bind_params(m);
  nccl_core::python::bind_features(m);
  nccl_core::python::bind_paths(m);
  nccl_core::python::bind_grow(m);
}
