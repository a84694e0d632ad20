#include "nccl/api.h"

#include <dlfcn.h>

#include <mutex>

#include "nccl/seam.h"
#include "util/checked.h"

namespace nccl_core::api {

namespace {
// "ncclAllReduce(a, b)" -> "ncclAllReduce", and a call through the seam,
// "nccl().AllReduce(a, b)", by NCCL's name too: the message names the call only.
std::string call_name(const char* call) {
  std::string s(call);
  const bool seam = s.rfind("nccl().", 0) == 0;
  auto paren = s.find('(', seam ? 7 : 0);
  s = paren == std::string::npos ? s : s.substr(0, paren);
  return seam ? "nccl" + s.substr(7) : s;
}
} // namespace

int loaded_version() {
  int v = 0;
  return nccl().GetVersion(&v) == ncclSuccess ? v : 0;
}

std::string version_string(int code) {
  // NCCL encodes 2.8 and older as X*1000+Y*100+Z; everything we load is newer.
  int major = code / 10000, minor = (code / 100) % 100, patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

bool check(ncclResult_t result, const char* call, ncclComm_t comm) {
  if (result == ncclSuccess) {
    return false;
  }
  if (result == ncclInProgress) {
    return true;
  }
  std::string msg = call_name(call) + " failed: " + nccl().GetErrorString(result);
  const char* last = nccl().GetLastError(comm);
  if (last != nullptr && last[0] != '\0') {
    msg += " (";
    msg += last;
    msg += ")";
  }
  throw NcclError(result, msg);
}

void cuda_check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); // clear the sticky-free error state
    throw NcclError(ncclUnhandledCudaError,
                    call_name(call) + " failed: " + cudaGetErrorString(err));
  }
}

void* find_symbol(const char* name) {
  // Look in the libnccl.so.2 this process already loaded (the one torch uses,
  // or an LD_PRELOADed newer one), never a second copy.
  static void* lib = [] {
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    return h != nullptr ? h : RTLD_DEFAULT;
  }();
  return dlsym(lib, name);
}

} // namespace nccl_core::api

namespace nccl_core::checked {

// util/checked.h declares the default refusal of its checked conversions;
// the exception types live here, one floor up, so this floor defines it.
void raise_invalid(const std::string& message) {
  throw NcclInvalid(message);
}

}  // namespace nccl_core::checked
