// How NCCL-layer failures surface through torch.distributed.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace nccl_core {

// An exception_ptr holding c10::DistBackendError(msg), which Python sees as
// torch.distributed.DistBackendError.
std::exception_ptr dist_backend_error(const std::string& msg);

// Runs `fn`; NCCL-layer errors (NcclError) are rethrown as DistBackendError
// with NCCL's message, argument errors (NcclInvalid) as ValueError.
template <class Fn>
decltype(auto) surface_errors(Fn&& fn);

[[noreturn]] void rethrow_as_dist_error(const char* where);

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
