// torch's Python exceptions for bad arguments, as the dist.* surface raises
// them: ValueError, TypeError, RuntimeError (c10's error kinds).  Here, below
// every folder of ours, so that the argument checks of collectives/ and the
// backend's state checks share one spelling.
#pragma once

#include <c10/util/Exception.h>

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

// ValueError(message), for util/checked.h on the dist.* surface:
// checked::mul<raise_value_error>(...).
[[noreturn]] inline void raise_value_error(const std::string& message) {
  C10_THROW_ERROR(ValueError, message);
}

}  // namespace nccl_core
