#include "nccl/features.h"

namespace nccl_core::features {

void refuse(const Feature& f, const std::string& what) {
  int need = needs(f);
  std::string msg = what;
  if (need != 0) {
    msg += " needs NCCL " + api::version_string(need) + " or newer";
  } else {
    msg += " is not available";
  }
  msg += "; the loaded NCCL is " + api::version_string(api::loaded_version());
  throw NcclUnsupported(msg);
}

} // namespace nccl_core::features
