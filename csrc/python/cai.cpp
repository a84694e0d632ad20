#include "python/cai.h"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "nccl/api.h"
#include "util/checked.h"

namespace nccl_core::python {

namespace {

std::string type_name(py::handle obj) {
  return std::string(py::str(py::type::of(obj).attr("__name__")));
}

// typestr ("<f4", "|u1", ...) -> a torch dtype NCCL has, with its item size.
at::ScalarType dtype_of(const std::string& typestr, const char* name) {
  NCCL_CORE_REQUIRE(typestr.size() >= 3, name, ": __cuda_array_interface__ typestr '", typestr,
                    "' is not a typestr");
  char order = typestr[0];
  char kind = typestr[1];
  std::string size = typestr.substr(2);
  // Little-endian or not applicable ('|', single bytes); '=' is native (little on CUDA hosts).
  NCCL_CORE_REQUIRE(order == '<' || order == '|' || order == '=' || (order == '>' && size == "1"),
                    name, ": __cuda_array_interface__ typestr '", typestr,
                    "' is big-endian; NCCL buffers are little-endian");
  if (kind == 'f' && size == "2") return at::kHalf;
  if (kind == 'f' && size == "4") return at::kFloat;
  if (kind == 'f' && size == "8") return at::kDouble;
  if (kind == 'i' && size == "1") return at::kChar;
  if (kind == 'i' && size == "4") return at::kInt;
  if (kind == 'i' && size == "8") return at::kLong;
  if (kind == 'u' && size == "1") return at::kByte;
  if (kind == 'u' && size == "4") return at::kUInt32;
  if (kind == 'u' && size == "8") return at::kUInt64;
  if (kind == 'b' && size == "1") return at::kBool;
  throw NcclInvalid(concat(name, ": __cuda_array_interface__ typestr '", typestr,
                           "' has no NCCL equivalent (supported: f2 f4 f8 i1 i4 i8 u1 u4 u8 b1)"));
}

// Drops the reference the tensor holds on the exporting object; with the
// GIL, whichever thread frees the tensor.
void release_owner(PyObject* owner) {
  if (Py_IsInitialized() == 0) {
    return;  // the interpreter is gone: nothing to release into
  }
  py::gil_scoped_acquire gil;
  Py_DECREF(owner);
}

}  // namespace

at::Tensor from_cuda_array_interface(py::handle obj, const char* name) {
  py::object iface = obj.attr("__cuda_array_interface__");
  NCCL_CORE_REQUIRE(py::isinstance<py::dict>(iface), name,
                    ": __cuda_array_interface__ must be a dict, got ", type_name(iface));
  py::dict d = py::reinterpret_borrow<py::dict>(iface);
  NCCL_CORE_REQUIRE(d.contains("shape") && d.contains("typestr") && d.contains("data"), name,
                    ": __cuda_array_interface__ needs shape, typestr and data");
  NCCL_CORE_REQUIRE(!d.contains("mask") || d["mask"].is_none(), name,
                    ": masked __cuda_array_interface__ buffers are not supported");

  at::ScalarType dtype = dtype_of(py::str(d["typestr"]).cast<std::string>(), name);
  size_t item = c10::elementSize(dtype);

  py::handle shape_obj = d["shape"];
  NCCL_CORE_REQUIRE(py::isinstance<py::tuple>(shape_obj) || py::isinstance<py::list>(shape_obj),
                    name, ": __cuda_array_interface__ shape must be a tuple");
  std::vector<int64_t> shape;
  size_t count = 1;
  for (py::handle dim : shape_obj) {
    NCCL_CORE_REQUIRE(PyLong_Check(dim.ptr()) && !PyBool_Check(dim.ptr()), name,
                      ": __cuda_array_interface__ shape holds ", type_name(dim), ", not an int");
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(dim.ptr(), &overflow);
    NCCL_CORE_REQUIRE(overflow == 0 && v >= 0, name,
                      ": __cuda_array_interface__ shape has dimension ",
                      std::string(py::str(dim)), "; dimensions must be 0 .. 2**63 - 1");
    shape.push_back(v);
    count = checked::mul(count, static_cast<size_t>(v), "element count of the shape");
  }
  checked::narrow<int64_t>(count, "element count of the shape");
  size_t bytes = checked::bytes(count, item, "size in bytes of the shape");

  // Strides (bytes) must be absent or C order: NCCL walks memory order.
  if (d.contains("strides") && !d["strides"].is_none() && count > 0) {
    py::handle strides = d["strides"];
    NCCL_CORE_REQUIRE(py::len(strides) == shape.size(), name,
                      ": __cuda_array_interface__ strides and shape differ in length");
    size_t expect = item;
    size_t i = shape.size();
    std::vector<py::handle> st(strides.begin(), strides.end());
    while (i-- > 0) {
      if (shape[i] != 1) {
        int overflow = 0;
        long long step = PyLong_Check(st[i].ptr())
                             ? PyLong_AsLongLongAndOverflow(st[i].ptr(), &overflow)
                             : -1;
        NCCL_CORE_REQUIRE(overflow == 0 && step >= 0 && static_cast<size_t>(step) == expect,
                          name,
                          " must be contiguous (C order): its __cuda_array_interface__ "
                          "strides are not; NCCL reads and writes memory order");
      }
      expect *= static_cast<size_t>(shape[i]);  // bounded by `bytes`, checked above
    }
  }

  py::handle data = d["data"];
  NCCL_CORE_REQUIRE(py::isinstance<py::tuple>(data) && py::len(data) == 2, name,
                    ": __cuda_array_interface__ data must be a (pointer, read_only) tuple");
  py::handle ptr_obj = py::reinterpret_borrow<py::tuple>(data)[0];
  NCCL_CORE_REQUIRE(PyLong_Check(ptr_obj.ptr()), name,
                    ": __cuda_array_interface__ data pointer must be an int");
  auto addr = ptr_obj.cast<uintptr_t>();
  void* ptr = reinterpret_cast<void*>(addr);

  int device = -1;
  if (bytes == 0 || ptr == nullptr) {
    NCCL_CORE_REQUIRE(bytes == 0, name, ": __cuda_array_interface__ data pointer is 0 for ",
                      bytes, " bytes");
    NCCL_CORE_CUDA_CHECK(cudaGetDevice(&device));
  } else {
    cudaPointerAttributes attr{};
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it
    }
    NCCL_CORE_REQUIRE(err == cudaSuccess && (attr.type == cudaMemoryTypeDevice ||
                                             attr.type == cudaMemoryTypeManaged),
                      name, ": __cuda_array_interface__ data pointer ", addr,
                      " is not CUDA device memory");
    device = attr.device;
  }
  // The tensor holds a reference to the exporting object, which owns the
  // memory (should from_blob itself fail, that reference leaks: nothing
  // tells whether its deleter already ran).
  at::Device where(at::kCUDA, static_cast<c10::DeviceIndex>(device));
  PyObject* owner = obj.ptr();
  Py_INCREF(owner);
  at::Tensor t = at::from_blob(
      ptr, shape, [owner](void*) { release_owner(owner); },
      at::TensorOptions().dtype(dtype).device(where), where);
  // By construction; stated, since the whole point is that NCCL writes here.
  NCCL_CORE_REQUIRE(t.data_ptr() == ptr || bytes == 0, name,
                    ": the tensor view of __cuda_array_interface__ is not at its pointer");
  return t;
}

}  // namespace nccl_core::python
