// How NCCL-layer failures surface through torch.distributed.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

#include "util/concat.h"

namespace nccl_core {

#define NCCL_CORE_CHECK_AS(kind, cond, ...)                       \
  do {                                                            \
    if (C10_UNLIKELY(!(cond))) {                                  \
      C10_THROW_ERROR(kind, ::nccl_core::concat(__VA_ARGS__));    \
    }                                                             \
  } while (0)
// Bad argument value / bad dtype / bad state, as ValueError / TypeError /
// RuntimeError in Python.
#define NCCL_CORE_CHECK_VALUE(cond, ...) NCCL_CORE_CHECK_AS(ValueError, cond, __VA_ARGS__)
#define NCCL_CORE_CHECK_TYPE(cond, ...) NCCL_CORE_CHECK_AS(TypeError, cond, __VA_ARGS__)
#define NCCL_CORE_CHECK_STATE(cond, ...) NCCL_CORE_CHECK_AS(Error, cond, __VA_ARGS__)

// ValueError(message), for util/checked.h in the backend:
// checked::mul<raise_value_error>(...).
[[noreturn]] void raise_value_error(const std::string& message);

// An exception_ptr holding c10::DistBackendError(msg), which Python sees as
// torch.distributed.DistBackendError.
std::exception_ptr dist_backend_error(const std::string& msg);

// Rethrows the exception in flight: NcclError as DistBackendError with
// NCCL's message, NcclInvalid as ValueError; anything else unchanged.
[[noreturn]] void rethrow_as_dist_error(const char* where);

// Runs `fn` with NCCL-layer errors surfaced as above.
template <class Fn>
decltype(auto) surface_errors(Fn&& fn) {
  try {
    return fn();
  } catch (const c10::Error&) {
    throw;
  } catch (...) {
    rethrow_as_dist_error(nullptr);
  }
}

} // namespace nccl_core
