#include "op/errors.h"

#include "nccl/api.h"

namespace nccl_core {

std::exception_ptr dist_backend_error(const std::string& msg) {
  try {
    C10_THROW_ERROR(DistBackendError, msg);
  } catch (...) {
    return std::current_exception();
  }
}

void rethrow_as_dist_error(const char* where) {
  std::string prefix = where == nullptr ? "" : std::string(where) + ": ";
  try {
    throw;
  } catch (const NcclInvalid& e) {
    C10_THROW_ERROR(ValueError, prefix + e.what());
  } catch (const NcclError& e) {
    C10_THROW_ERROR(DistBackendError, prefix + "NCCL error: " + e.what());
  }
}

} // namespace nccl_core
