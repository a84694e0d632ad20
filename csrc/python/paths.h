// A group's path choice (nvlink/path_table.h) as a Python dict: paths.cpp.
#pragma once

#include <pybind11/pybind11.h>

#include "nvlink/path_table.h"

namespace nccl_core::python {

// {"fast_max_bytes": {op: bytes}, "eager_fast_max_bytes": {op: bytes},
//  "push_min_bytes" (captured calls), "eager_push_min_bytes", "push_max_bytes",
//  "push_ctas", "two_shot_min_bytes"}
pybind11::dict paths_dict(const nvlink::GroupPaths& g);

} // namespace nccl_core::python
