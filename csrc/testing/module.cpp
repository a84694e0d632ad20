// The lab module nccl_core_backend._testing: what the tests drive that users
// never need (ranks emulated on one GPU, the failure checks' pure parts, NCCL's
// raw host-side queries, the fake NCCL behind the seam).  It builds as its
// own extension, linked against _C, and the package never imports it; the
// tests do.
#include <pybind11/pybind11.h>

#include "testing/bind.h"

namespace py = pybind11;

PYBIND11_MODULE(_testing, m) {
  m.doc() = "nccl_core's test lab (not part of the public API)";
  // The product's types (Communicator, RegisteredWindowHandle, errors) are
  // registered by _C; the lab's functions take them.
  py::module_::import("nccl_core_backend._C");
  nccl_core::testing::bind_nvlink_lab(m);
  nccl_core::testing::bind_failure_checks(m);
  nccl_core::testing::bind_window_checks(m);
  nccl_core::testing::bind_fake_nccl(m);
}
