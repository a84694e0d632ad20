#include "python/convert.h"

#include <limits>

#include <ATen/cuda/CUDAContext.h>
#include <torch/csrc/Stream.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "comm/communicator.h"
#include "collectives/raw_ops.h"
#include "comm/resources.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "python/cai.h"

namespace nccl_core::python {

at::Tensor as_tensor(py::handle obj, const char* name) {
  if (THPVariable_Check(obj.ptr())) {
    return THPVariable_Unpack(obj.ptr());
  }
  NCCL_CORE_REQUIRE(!obj.is_none(), name, " is None");
  bool dlpack = py::hasattr(obj, "__dlpack__");
  bool cai = py::hasattr(obj, "__cuda_array_interface__");
  if (!dlpack && !cai) {
    throw NcclInvalid(std::string(name) + " must be a torch.Tensor or support DLPack / the CUDA "
                      "Array Interface, got " + std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  if (!dlpack) {
    // Zero-copy: torch.as_tensor would copy memory of another device.
    return from_cuda_array_interface(obj, name);
  }
  py::object t;
  try {
    t = py::module_::import("torch").attr("from_dlpack")(obj);  // always a view
  } catch (py::error_already_set& e) {
    // A shape whose element count wraps, a CPU array, ...: named, as NcclInvalid.
    throw NcclInvalid(std::string(name) + " cannot be viewed through DLPack: " +
                      std::string(py::str(e.type().attr("__name__"))) + ": " +
                      std::string(py::str(e.value())));
  }
  return THPVariable_Unpack(t.ptr());
}

Buffer as_buffer(py::handle obj, const char* name, BufferLayout layout) {
  at::Tensor t = as_tensor(obj, name);
  Buffer b = resolve_tensor(t, name, layout);
  if (raw::group_depth() > 0) {
    // NCCL reads and writes it at group_end: it must outlive the Python object.
    raw::keep_for_group(std::move(t));
  }
  return b;
}

std::optional<Buffer> as_optional_buffer(py::handle obj, const char* name) {
  if (obj.is_none()) {
    return std::nullopt;
  }
  return as_buffer(obj, name);
}

cudaStream_t as_stream(py::handle obj, int device) {
  if (obj.is_none()) {
    return at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  }
  // torch.cuda.Stream and ExternalStream are torch.Stream objects: read the
  // stream from the object itself (its cuda_stream attribute costs two
  // lookups and an int conversion).
  if (PyObject_TypeCheck(obj.ptr(), THPStreamClass)) {
    auto* s = reinterpret_cast<THPStream*>(obj.ptr());
    if (s->device_type == static_cast<int64_t>(c10::DeviceType::CUDA)) {
      NCCL_CORE_REQUIRE(s->device_index == device, "stream is on device cuda:",
                        s->device_index, ", but communicator is on device ", device);
      c10::Stream stream = c10::Stream::unpack3(
          s->stream_id, static_cast<c10::DeviceIndex>(s->device_index), c10::DeviceType::CUDA);
      return c10::cuda::CUDAStream(stream).stream();
    }
  }
  if (PyBool_Check(obj.ptr())) {
    throw py::type_error("stream must not be a bool");
  }
  if (PyLong_Check(obj.ptr())) {
    unsigned long long handle = PyLong_AsUnsignedLongLong(obj.ptr());
    if (handle == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr) {
      PyErr_Clear();  // negative or past 64 bits: not a handle
      throw NcclInvalid("stream handle " + std::string(py::str(obj)) +
                        " is not a CUDA stream handle (0 .. 2**64 - 1)");
    }
    return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(handle));
  }
  if (py::hasattr(obj, "cuda_stream")) { // torch.cuda.Stream / ExternalStream
    return reinterpret_cast<cudaStream_t>(obj.attr("cuda_stream").cast<uintptr_t>());
  }
  if (py::hasattr(obj, "__cuda_stream__")) { // cuda.core: (version, handle)
    py::tuple t = obj.attr("__cuda_stream__")();
    return reinterpret_cast<cudaStream_t>(t[1].cast<uintptr_t>());
  }
  if (py::hasattr(obj, "ptr")) { // CuPy
    return reinterpret_cast<cudaStream_t>(obj.attr("ptr").cast<uintptr_t>());
  }
  throw py::type_error("stream must be None, an int handle, a torch.cuda.Stream, or an object "
                       "with __cuda_stream__ or .ptr; got " +
                       std::string(py::str(py::type::of(obj).attr("__name__"))));
}

ncclRedOp_t as_red_op(py::handle obj, const Communicator& comm, const Buffer& buf) {
  return for_buffer(red_op_for_type(obj, comm, buf.type), buf);
}

ncclRedOp_t red_op_for_type(py::handle obj, const Communicator& comm, ncclDataType_t type) {
  // NcclRedOp members (an IntEnum) and ints first: the common case, and the
  // cheapest test (the class checks below look types up in pybind's registry).
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) {
    long long v = as_int(obj, "op");  // 64-bit range first: 2**32 is not SUM
    NCCL_CORE_REQUIRE(v >= 0 && v < static_cast<long long>(ncclNumOps),
                      "Invalid reduction operator: ", v);
    return static_cast<ncclRedOp_t>(v);
  }
  if (py::isinstance<CustomRedOp>(obj)) {
    auto& op = obj.cast<CustomRedOp&>();
    ncclRedOp_t handle = op.op(); // raises if closed
    NCCL_CORE_REQUIRE(op.owner().get() == &comm,
                      "this CustomRedOp belongs to another communicator");
    NCCL_CORE_REQUIRE(op.type() == type, "this CustomRedOp was created for ",
                      types::name(op.type()), " but the buffers are ", types::name(type));
    return handle;
  }
  if (py::isinstance<c10d::ReduceOp>(obj)) {
    auto& op = obj.cast<c10d::ReduceOp&>();
    switch (op.op_) {
      case c10d::ReduceOp::SUM:
        return ncclSum;
      case c10d::ReduceOp::PRODUCT:
        return ncclProd;
      case c10d::ReduceOp::MIN:
        return ncclMin;
      case c10d::ReduceOp::MAX:
        return ncclMax;
      case c10d::ReduceOp::AVG:
        return ncclAvg;
      default:
        throw NcclInvalid("ReduceOp " + std::to_string(static_cast<int>(op.op_)) +
                          " has no NCCL equivalent; use create_pre_mul_sum for PREMUL_SUM");
    }
  }
  if (py::isinstance<c10d::ReduceOp::RedOpType>(obj)) {
    return red_op_for_type(py::cast(c10d::ReduceOp(obj.cast<c10d::ReduceOp::RedOpType>())), comm,
                           type);
  }
  throw NcclInvalid("op must be an NcclRedOp, a CustomRedOp or a torch.distributed.ReduceOp");
}

long long as_int(py::handle obj, const char* name) {
  NCCL_CORE_REQUIRE(PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr()), name,
                    " must be an int, got ",
                    std::string(py::str(py::type::of(obj).attr("__name__"))));
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  NCCL_CORE_REQUIRE(overflow == 0, name, " ", std::string(py::str(obj)),
                    " does not fit a 64-bit int");
  return v;
}

void* as_address(py::handle obj, const char* name) {
  NCCL_CORE_REQUIRE(PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr()), name,
                    " must be an int, got ",
                    std::string(py::str(py::type::of(obj).attr("__name__"))));
  unsigned long long v = PyLong_AsUnsignedLongLong(obj.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    NCCL_CORE_REQUIRE(false, name, " ", std::string(py::str(obj)),
                      " is not an address (an int from 0 to 2**64 - 1)");
  }
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v));
}

int as_rank(py::handle obj, const char* name) {
  long long v = as_int(obj, name);
  NCCL_CORE_REQUIRE(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max(),
                    name, " ", v, " is outside the communicator");
  return static_cast<int>(v);
}

int as_root(py::handle obj) {
  if (obj.is_none()) {
    return -1;
  }
  NCCL_CORE_REQUIRE(PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr()), "root must be an int");
  // Range-checked in 64 bits first: 2**32 must not become root 0.
  long long root = as_int(obj, "root");
  NCCL_CORE_REQUIRE(root >= 0, "root ", root, " must be >= 0");
  return as_rank(obj, "root");
}

} // namespace nccl_core::python
