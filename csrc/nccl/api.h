// The one checked layer between nccl_core and NCCL/CUDA.
//
// Every NCCL and CUDA call made by the extension goes through `check` /
// `cuda_check`, which turn a failing result into an exception that names the
// call and carries NCCL's own last-error text.  NCCL itself is reached through
// the seam (seam.h), where APIs newer than NCCL 2.28 are resolved at run time,
// so one build loads against any NCCL from 2.28 on and lights up newer
// features when the loaded library has them.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

#include "util/concat.h"

namespace nccl_core {

// An NCCL call failed; `result()` is NCCL's result code.
class NcclError : public std::runtime_error {
 public:
  NcclError(ncclResult_t result, const std::string& msg)
      : std::runtime_error(msg), result_(result) {}
  ncclResult_t result() const { return result_; }

 private:
  ncclResult_t result_;
};

// Bad arguments detected before anything was enqueued.
class NcclInvalid : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The loaded NCCL is too old for a feature.
class NcclUnsupported : public NcclError {
 public:
  explicit NcclUnsupported(const std::string& msg)
      : NcclError(ncclInvalidUsage, msg) {}
};

namespace api {

// Version of the NCCL library loaded in this process (e.g. 22809 for 2.28.9).
int loaded_version();
// "2.28.9"
std::string version_string(int code);
// Version code for (major, minor, patch) in NCCL's encoding.
constexpr int version_code(int major, int minor, int patch) {
  return major * 10000 + minor * 100 + patch;
}

// Throws NcclError for any result other than ncclSuccess / ncclInProgress.
// Returns true when the call is still in progress (non-blocking comms).
bool check(ncclResult_t result, const char* call, ncclComm_t comm = nullptr);
// Throws NcclError(ncclUnhandledCudaError) on a failing CUDA call.
void cuda_check(cudaError_t err, const char* call);

// Run-time lookup of an NCCL symbol in the loaded library; nullptr if absent.
// For the seam's implementation (loaded_nccl.cpp); everything else asks
// nccl().provides / nccl().require (seam.h).
void* find_symbol(const char* name);

} // namespace api
} // namespace nccl_core

// Checked NCCL call: NCCL_CORE_CHECK(comm, nccl().AllReduce(...)).
#define NCCL_CORE_CHECK(comm, expr) ::nccl_core::api::check((expr), #expr, (comm))
// Argument check of the nccl.core-style API: throws NcclInvalid(concat(...)).
#define NCCL_CORE_REQUIRE(cond, ...)                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      throw ::nccl_core::NcclInvalid(::nccl_core::concat(__VA_ARGS__)); \
    }                                                                 \
  } while (0)
// Checked CUDA runtime call.
#define NCCL_CORE_CUDA_CHECK(expr) ::nccl_core::api::cuda_check((expr), #expr)
