// nccl_core_backend._C._features: the feature table of nccl/features.h with
// each feature's status for a given NCCL release (default: the loaded one).
// nccl_core_backend/compatibility.py turns it into features().
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "nccl/api.h"
#include "nccl/features.h"
#include "python/bind.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

py::object version_or_none(int code) {
  return code == 0 ? py::object(py::none()) : py::object(py::int_(code));
}

py::object str_or_none(const char* s) {
  return s == nullptr ? py::object(py::none()) : py::object(py::str(s));
}

} // namespace

void bind_features(py::module_& m) {
  m.def(
      "_features",
      [](std::optional<int> loaded) {
        int v = loaded.value_or(api::loaded_version());
        py::list out;
        for (const features::Feature* f : features::kAll) {
          py::dict d;
          d["name"] = f->name;
          d["status"] = features::status_name(features::status(*f, v));
          d["needs"] = version_or_none(features::needs(*f));
          d["api"] = f->api;
          d["nccl_api"] = f->nccl_api;
          d["nccl_since"] = version_or_none(f->nccl_since);
          d["native_since"] = version_or_none(f->native_since);
          d["ours_since"] = version_or_none(f->ours_since);
          d["ours_until"] = version_or_none(f->ours_until);
          d["symbol"] = str_or_none(f->symbol);
          d["note"] = f->note;
          out.append(std::move(d));
        }
        return out;
      },
      py::arg("loaded") = py::none(),
      "The feature table (nccl/features.h) with each status for NCCL version code "
      "`loaded` (default: the loaded NCCL).");
}

} // namespace nccl_core::python
