// How NCCL-layer failures surface through torch.distributed.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

#include "util/concat.h"
#include "util/torch_errors.h"

namespace nccl_core {

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
