// Element-wise reduction helpers shared by the extension's CUDA kernels
// (device/kernels.cu, nvlink/kernels.cu): accumulation types, conversions and
// the reduction operators, for the NCCL types the kernels cover.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>

#include <cstdint>
#include <type_traits>

namespace nccl_core {

template <class T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };

// Explicit conversions: torch builds with __CUDA_NO_HALF_CONVERSIONS__.
template <class T>
__device__ __forceinline__ typename Acc<T>::type to_acc(T v) {
  return static_cast<typename Acc<T>::type>(v);
}
template <>
__device__ __forceinline__ float to_acc<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_acc<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
__device__ __forceinline__ T from_acc(typename Acc<T>::type v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

template <int Op, class A>
__device__ __forceinline__ A combine(A a, A b) {
  if constexpr (Op == ncclProd) {
    return a * b;
  } else if constexpr (Op == ncclMax) {
    return a > b ? a : b;
  } else if constexpr (Op == ncclMin) {
    return a < b ? a : b;
  } else {
    return a + b;  // Sum, and Avg before its division
  }
}

// One 16-byte pack of T, so peers' memory is read in wide NVLink loads.
template <class T>
union Pack {
  uint4 raw;
  T v[16 / sizeof(T)];
};

template <class T>
constexpr bool kFloating = std::is_floating_point<T>::value || std::is_same<T, __half>::value ||
                           std::is_same<T, __nv_bfloat16>::value;

template <class T> struct TypeTag { using type = T; };
template <int Op> struct OpTag { static constexpr int value = Op; };

// Calls f(TypeTag<T>{}) with the C++ type of `type`; false for a type the
// kernels do not cover (they cover float32/64, float16, bfloat16, int8/32/64
// and uint8).
template <class F>
bool visit_type(ncclDataType_t type, F&& f) {
  switch (type) {
    case ncclFloat32: f(TypeTag<float>{}); return true;
    case ncclFloat64: f(TypeTag<double>{}); return true;
    case ncclFloat16: f(TypeTag<__half>{}); return true;
    case ncclBfloat16: f(TypeTag<__nv_bfloat16>{}); return true;
    case ncclInt32: f(TypeTag<int32_t>{}); return true;
    case ncclInt64: f(TypeTag<int64_t>{}); return true;
    case ncclUint8: f(TypeTag<uint8_t>{}); return true;
    case ncclInt8: f(TypeTag<int8_t>{}); return true;
    default: return false;
  }
}

// Calls f(OpTag<op>{}) for Sum, Prod, Max, Min, and Avg where T is floating;
// false for any other operator.
template <class T, class F>
bool visit_op(int op, F&& f) {
  switch (op) {
    case ncclSum: f(OpTag<ncclSum>{}); return true;
    case ncclProd: f(OpTag<ncclProd>{}); return true;
    case ncclMax: f(OpTag<ncclMax>{}); return true;
    case ncclMin: f(OpTag<ncclMin>{}); return true;
    case ncclAvg:
      if constexpr (kFloating<T>) {
        f(OpTag<ncclAvg>{});
        return true;
      }
      return false;
    default: return false;
  }
}

}  // namespace nccl_core
