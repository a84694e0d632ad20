#include "python/coll_config.h"

#include <string>
#include <utility>

#include "nccl/api.h"
#include "python/convert.h"
#include "util/checked.h"

namespace nccl_core::python {

namespace {

using collectives::CollConfig;

// The lowered form NCCLCollConfig._lower() returns, field by field.
enum Lowered {
  kMinCtas, kMaxCtas, kNvlsCtas, kCgaClusterSize, kCtaPolicy, kAlgSelection,
  kForceAlgSelection, kUserProfilerTag, kLaunchCompletionEvent, kVendorOptions, kFields
};

std::optional<int> optional_int(py::handle v, const char* name) {
  if (v.is_none()) {
    return std::nullopt;
  }
  return checked::narrow<int>(as_int(v, name), name);
}

// A non-negative int up to 2**64 - 1 (the profiler tag, an event handle).
uint64_t as_u64(py::handle v, const char* name) {
  NCCL_CORE_REQUIRE(PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr()), name, " must be an int");
  unsigned long long out = PyLong_AsUnsignedLongLong(v.ptr());
  if (out == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    throw NcclInvalid(concat(name, " ", std::string(py::str(v)),
                             " is outside [0, 2**64): it must fit a 64-bit unsigned int"));
  }
  return out;
}

CollConfig::VendorOption vendor_option(py::handle t) {
  auto item = t.cast<py::tuple>();
  CollConfig::VendorOption o;
  o.vendor_id = checked::narrow<int>(as_int(item[0], "VendorOption.vendor_id"),
                                     "VendorOption.vendor_id");
  o.option_id = checked::narrow<int>(as_int(item[1], "VendorOption.option_id"),
                                     "VendorOption.option_id");
  auto kind = static_cast<int>(as_int(item[2], "VendorOption kind"));
  if (kind == 0) {
    o.kind = CollConfig::VendorOption::Kind::Int;
    o.int_value = checked::narrow<int>(as_int(item[3], "VendorOption.int_value"),
                                       "VendorOption.int_value");
  } else if (kind == 1) {
    o.kind = CollConfig::VendorOption::Kind::Str;
    o.str_value = item[3].cast<std::string>();
  } else {
    o.kind = CollConfig::VendorOption::Kind::Raw;
    o.raw_value = static_cast<uintptr_t>(as_u64(item[3], "VendorOption.raw_value"));
  }
  return o;
}

}  // namespace

std::shared_ptr<const CollConfig> as_coll_config(py::handle obj) {
  if (obj.is_none()) {
    return nullptr;
  }
  // Held for the life of the process (never released after the interpreter).
  static PyObject* const cls =
      py::object(py::module_::import("nccl_core_backend.coll_config").attr("NCCLCollConfig"))
          .release()
          .ptr();
  NCCL_CORE_REQUIRE(PyObject_IsInstance(obj.ptr(), cls) == 1,
                    "config must be an NCCLCollConfig or None, got ",
                    std::string(py::str(py::type::of(obj).attr("__name__"))));
  auto f = obj.attr("_lower")().cast<py::tuple>();
  NCCL_CORE_REQUIRE(f.size() == kFields, "NCCLCollConfig._lower() gave ", f.size(),
                    " fields, expected ", static_cast<int>(kFields));
  CollConfig::Values v;
  v.min_ctas = optional_int(f[kMinCtas], "min_ctas");
  v.max_ctas = optional_int(f[kMaxCtas], "max_ctas");
  v.nvls_ctas = optional_int(f[kNvlsCtas], "nvls_ctas");
  v.cga_cluster_size = optional_int(f[kCgaClusterSize], "cga_cluster_size");
  v.cta_policy = optional_int(f[kCtaPolicy], "cta_policy");
  if (!f[kAlgSelection].is_none()) {
    v.alg_selection = f[kAlgSelection].cast<std::string>();
  }
  if (!f[kForceAlgSelection].is_none()) {
    v.force_alg_selection = f[kForceAlgSelection].cast<bool>();
  }
  v.user_profiler_tag = as_u64(f[kUserProfilerTag], "user_profiler_tag");
  v.launch_completion_event =
      reinterpret_cast<cudaEvent_t>(as_u64(f[kLaunchCompletionEvent], "launch_completion_event"));
  for (py::handle o : f[kVendorOptions]) {
    v.vendor_options.push_back(vendor_option(o));
  }
  return CollConfig::make(std::move(v));
}

std::shared_ptr<const CollConfig> coll_config_of(PyObject* obj) {
  return as_coll_config(py::handle(obj));
}

}  // namespace nccl_core::python
