// NCCLCollConfig (nccl_core_backend/coll_config.py) to the C++ config the
// collectives take (collectives/coll_config.h).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "collectives/coll_config.h"

namespace nccl_core::python {

namespace py = pybind11;

// None -> null; an NCCLCollConfig -> its values, checked (types in Python,
// ranges here: NcclInvalid naming the field) and laid out for the loaded NCCL
// (NcclUnsupported where it is too old); anything else -> NcclInvalid.
std::shared_ptr<const collectives::CollConfig> as_coll_config(py::handle obj);
// The same for code outside this module (the lab, nccl_core_backend._testing):
// functions taking pybind11 types are not exported from it, PyObject* is.
std::shared_ptr<const collectives::CollConfig> coll_config_of(PyObject* obj);

}  // namespace nccl_core::python
