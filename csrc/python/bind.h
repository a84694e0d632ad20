// The pieces of the pybind11 module nccl_core_backend._C, one per file.
#pragma once

#include <pybind11/pybind11.h>

namespace nccl_core::python {

namespace pybind11_ns = pybind11;

void bind_backend(pybind11_ns::module_& m);       // backend.cpp
void bind_communicator(pybind11_ns::module_& m);  // communicator.cpp
void bind_raw_ops(pybind11_ns::module_& m);       // raw_ops.cpp (after bind_communicator)
void bind_resources(pybind11_ns::module_& m);     // resources.cpp
void bind_memory(pybind11_ns::module_& m);        // memory.cpp
void bind_rma(pybind11_ns::module_& m);           // rma.cpp (after bind_communicator)
void bind_device(pybind11_ns::module_& m);        // device.cpp (after bind_communicator)
void bind_properties(pybind11_ns::module_& m);    // properties.cpp (after bind_communicator)
void bind_params(pybind11_ns::module_& m);        // params.cpp
void bind_features(pybind11_ns::module_& m);      // features.cpp
void bind_paths(pybind11_ns::module_& m);         // paths.cpp
void bind_grow(pybind11_ns::module_& m);          // communicator.cpp (after bind_communicator)

} // namespace nccl_core::python
