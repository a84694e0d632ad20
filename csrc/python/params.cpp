// Bindings of NCCL's parameters (ncclParamGetParameter,
// ncclParamGetAllParameterKeys, ncclParamDumpAll: NCCL >= 2.30.4), behind
// nccl_core_backend.params (a read-only mapping) and dump_params.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/seam.h"
#include "python/bind.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

void require_params(const char* what) {
  nccl().require("ncclParamGetParameter", what, features::kParams.native_since);
}

// NCCL's string, which it may count with or without its terminator.
std::string copied(const char* text, int length) {
  if (text == nullptr) {
    return std::string();
  }
  return length < 0 ? std::string(text) : std::string(text, strnlen(text, length));
}

} // namespace

void bind_params(py::module_& m) {
  m.def(
      "_param_get",
      [](py::handle key) -> py::object {
        NCCL_CORE_REQUIRE(py::isinstance<py::str>(key), "NCCL parameter names are str, got ",
                          py::str(py::type::of(key)).cast<std::string>());
        require_params("nccl_core_backend.params");
        std::string name = key.cast<std::string>();
        const char* value = nullptr;
        int length = -1;
        ncclResult_t r = nccl().ParamGetParameter(name.c_str(), &value, &length);
        if (r == ncclInvalidArgument || r == ncclInvalidUsage) {
          return py::none();  // no such parameter: a KeyError in params.py
        }
        api::check(r, "ncclParamGetParameter", nullptr);
        return py::str(copied(value, length));
      },
      py::arg("key"), "A parameter's value as a string, None where NCCL has no such parameter.");
  m.def(
      "_param_keys",
      [] {
        require_params("nccl_core_backend.params");
        const char** table = nullptr;
        int count = 0;
        NCCL_CORE_CHECK(nullptr, nccl().ParamGetAllParameterKeys(&table, &count));
        std::vector<std::string> keys;
        for (int i = 0; table != nullptr && i < count; ++i) {
          if (table[i] != nullptr) {
            keys.emplace_back(table[i]);
          }
        }
        return keys;
      },
      "The parameters' names (NCCL_PARAM_DUMP_ALL=1: the internal ones too).");
  m.def(
      "_param_dump_all",
      [] {
        require_params("nccl_core_backend.dump_params");
        NCCL_CORE_CHECK(nullptr, nccl().ParamDumpAll());
      },
      "ncclParamDumpAll: every parameter to NCCL's log output.");
}

} // namespace nccl_core::python
