// The pieces of the lab module nccl_core_backend._testing, one per file.
#pragma once

#include <pybind11/pybind11.h>

namespace nccl_core::testing {

void bind_nvlink_lab(pybind11::module_& m);      // nvlink_lab.cpp: emulated ranks
void bind_failure_checks(pybind11::module_& m);  // failure_checks.cpp: desync and call checks
void bind_window_checks(pybind11::module_& m);   // window_checks.cpp: NCCL's host-side queries
void bind_fake_nccl(pybind11::module_& m);       // fake_nccl_bindings.cpp: the fake NCCL seam

} // namespace nccl_core::testing
