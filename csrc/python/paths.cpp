// nccl_core_backend._C._path_table and _paths_for: the path table of
// nvlink/path_table.h (which calls our NVLink kernels take, by world size,
// operation and size) for the bench's --paths and the docs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "nvlink/path_table.h"
#include "python/bind.h"
#include "python/paths.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

py::dict per_op(const std::array<size_t, nvlink::kColls>& bytes) {
  py::dict d;
  for (int i = 0; i < nvlink::kColls; ++i) {
    d[py::str(nvlink::coll_name(static_cast<nvlink::Coll>(i)))] = bytes[i];
  }
  return d;
}

} // namespace

py::dict paths_dict(const nvlink::GroupPaths& g) {
  py::dict d;
  d["fast_max_bytes"] = per_op(g.fast_max_bytes);
  d["eager_fast_max_bytes"] = per_op(g.eager_fast_max_bytes);
  d["push_min_bytes"] = g.push.min_bytes;
  d["eager_push_min_bytes"] = g.push.eager_min_bytes;
  d["push_max_bytes"] = g.push.max_bytes;
  d["push_ctas"] = g.push.ctas;
  d["two_shot_min_bytes"] = g.two_shot_min_bytes;
  d["one_way_max_bytes"] = g.one_way_max_bytes;
  return d;
}

void bind_paths(py::module_& m) {
  m.def(
      "_path_table",
      [] {
        py::list out;
        for (const auto& row : nvlink::path_table()) {
          py::dict d;
          d["min_world"] = row.min_world;
          d["max_world"] = row.max_world;
          d["fast_max_bytes"] = per_op(row.fast_max_bytes);
          d["eager_fast_max_bytes"] = per_op(row.eager_fast_max_bytes);
          d["push_min_bytes"] = row.push_min_bytes;
          d["eager_push_min_bytes"] = row.eager_push_min_bytes;
          d["push_max_bytes"] = row.push_max_bytes;
          d["two_shot_min_bytes"] = row.two_shot_min_bytes;
          d["one_way_max_bytes"] = row.one_way_max_bytes;
          d["measured"] = row.measured;
          out.append(std::move(d));
        }
        return out;
      },
      "The path table (nvlink/path_table.h): per range of world sizes, the largest "
      "input in bytes of each operation's fast path in captured calls (fast_max_bytes) "
      "and in eager calls (eager_fast_max_bytes), the push all-reduce's range (max 0: "
      "off; from push_min_bytes captured, eager_push_min_bytes eager), the size from which "
      "a fast-path all_reduce takes two shots (0: never), the largest bytes a fast-path "
      "call sends each peer through the one-way kernels (0: never) and the measurement that "
      "set the row.");
  m.def(
      "_paths_for",
      [](int world, std::optional<size_t> fast_max_bytes, std::optional<size_t> push_min_bytes,
         std::optional<size_t> push_max_bytes, std::optional<size_t> eager_fast_max_bytes,
         std::optional<size_t> two_shot_min_bytes, std::optional<size_t> one_way_max_bytes) {
        if (world < 1) {
          throw py::value_error("world must be at least 1, got " + std::to_string(world));
        }
        return paths_dict(nvlink::paths_for(
            world, {fast_max_bytes, eager_fast_max_bytes, push_min_bytes, push_max_bytes, 32,
                    two_shot_min_bytes, one_way_max_bytes}));
      },
      py::arg("world"), py::arg("fast_path_max_bytes") = py::none(),
      py::arg("push_min_bytes") = py::none(), py::arg("push_max_bytes") = py::none(),
      py::arg("eager_fast_path_max_bytes") = py::none(),
      py::arg("two_shot_min_bytes") = py::none(), py::arg("one_way_max_bytes") = py::none(),
      "What a group of `world` ranks chooses: the table's row, with the options given "
      "overriding it for every operation, in both modes.");
}

} // namespace nccl_core::python
