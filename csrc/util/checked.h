// Checked arithmetic on numbers that come from users: sizes, counts,
// offsets, ranks.  Every place where such a number becomes bytes, an offset
// or a narrower integer goes through here, so a value that would wrap or not
// fit is refused with a message naming the parameter and the values, before
// anything is enqueued -- never silently truncated.
//
// Each function takes how to refuse as a template argument: `raise_invalid`
// (NcclInvalid, the nccl.core-style API; the default) or the backend's
// `raise_value_error` (ValueError through torch.distributed).  The checks are
// a compare or an overflow-flag test: nothing allocates unless refusing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "util/concat.h"

namespace nccl_core::checked {

// Throws; never returns.
using Raise = void (*)(const std::string& message);
// NcclInvalid(message); defined by the NCCL layer (nccl/api.cpp), which owns the
// exception types: this floor includes nothing above it.
[[noreturn]] void raise_invalid(const std::string& message);

namespace detail {

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, int>) {
    return "a 32-bit int";
  } else if constexpr (std::is_same_v<T, unsigned>) {
    return "a 32-bit unsigned int";
  } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, long long>) {
    return "a 64-bit int";
  } else if constexpr (std::is_same_v<T, size_t> || std::is_same_v<T, uint64_t>) {
    return "a 64-bit size";
  } else {
    return "the target type";
  }
}

// a < b across signedness (std::cmp_less, which C++17 lacks: torch 2.11
// builds extensions as C++17).
template <class A, class B>
constexpr bool less(A a, B b) {
  if constexpr (std::is_signed_v<A> == std::is_signed_v<B>) {
    return a < b;
  } else if constexpr (std::is_signed_v<A>) {
    return a < 0 || static_cast<std::make_unsigned_t<A>>(a) < b;
  } else {
    return b >= 0 && a < static_cast<std::make_unsigned_t<B>>(b);
  }
}

template <Raise R>
[[noreturn]] void refuse(const std::string& message) {
  R(message);
  throw std::invalid_argument(message);  // R always throws; for the compiler
}

}  // namespace detail

// a * b, refusing a product past 2**64 - 1: "<what>: a * b overflows ...".
template <Raise R = raise_invalid>
inline size_t mul(size_t a, size_t b, const char* what) {
  size_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) [[unlikely]] {
    detail::refuse<R>(concat(what, ": ", a, " * ", b, " overflows a 64-bit size"));
  }
  return out;
}

// a + b, refusing a sum past 2**64 - 1.
template <Raise R = raise_invalid>
inline size_t add(size_t a, size_t b, const char* what) {
  size_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) [[unlikely]] {
    detail::refuse<R>(concat(what, ": ", a, " + ", b, " overflows a 64-bit size"));
  }
  return out;
}

// Signed a + b (sums of user split sizes), refusing a wrap.
template <Raise R = raise_invalid>
inline int64_t add_signed(int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) [[unlikely]] {
    detail::refuse<R>(concat(what, ": ", a, " + ", b, " overflows a 64-bit int"));
  }
  return out;
}

// Signed a * b (element counts times the world size), refusing a wrap.
template <Raise R = raise_invalid>
inline int64_t mul_signed(int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) [[unlikely]] {
    detail::refuse<R>(concat(what, ": ", a, " * ", b, " overflows a 64-bit int"));
  }
  return out;
}

// `v` as a To, refusing a value outside To's range: "<what> v does not fit
// a 32-bit int (-2147483648 to 2147483647)".  Negative values never become
// sizes.
template <class To, Raise R = raise_invalid, class From>
inline To narrow(From v, const char* what) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
  if (detail::less(v, std::numeric_limits<To>::min()) ||
      detail::less(std::numeric_limits<To>::max(), v)) [[unlikely]] {
    detail::refuse<R>(concat(what, " ", v, " does not fit ", detail::type_name<To>(), " (",
                             std::numeric_limits<To>::min(), " to ",
                             std::numeric_limits<To>::max(), ")"));
  }
  return static_cast<To>(v);
}

// `v` in [0, bound) as an int, checked in 64 bits before narrowing (so 2**32
// never becomes 0): "<what> v is outside [0, bound)".
template <Raise R = raise_invalid>
inline int index(int64_t v, int64_t bound, const char* what) {
  if (v < 0 || v >= bound) [[unlikely]] {
    detail::refuse<R>(concat(what, " ", v, " is outside [0, ", bound, ")"));
  }
  return narrow<int, R>(v, what);
}

// `count` elements of `element_size` bytes, as bytes.
template <Raise R = raise_invalid>
inline size_t bytes(size_t count, size_t element_size, const char* what) {
  return mul<R>(count, element_size, what);
}

// `offset` elements of `element_size` bytes from a user number: refuses a
// negative offset and a product that wraps.
template <Raise R = raise_invalid>
inline size_t offset_bytes(long long offset, size_t element_size, const char* what) {
  if (offset < 0) [[unlikely]] {
    detail::refuse<R>(concat(what, " ", offset, " must be >= 0"));
  }
  return mul<R>(static_cast<size_t>(offset), element_size, what);
}

}  // namespace nccl_core::checked
