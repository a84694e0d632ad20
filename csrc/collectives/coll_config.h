// A per-call collective config: what NCCLCollConfig (nccl_core_backend.coll_config)
// carries, laid out as the loaded NCCL's ncclCollConfig_t, with the strings and
// vendor options it points to.
//
// NCCL reads a config during the call that takes it (it parses alg_selection
// into an algorithm mask before returning, inside a group too), so a config
// lives as long as that call: the raw operations build one per call, a
// group's `coll_config(...)` block keeps one for the block.  A call with a
// config is NCCL's: nccl_core's own kernels know nothing of CTAs or
// algorithms (path_choice.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nccl/newer_than_2_28.h"

namespace nccl_core::collectives {

class CollConfig {
 public:
  struct VendorOption {
    enum class Kind { Int, Str, Raw };
    int vendor_id = 0;
    int option_id = 0;
    Kind kind = Kind::Int;
    int int_value = 0;
    std::string str_value;
    uintptr_t raw_value = 0;
  };
  // Unset fields are NCCL's (NCCL_CONFIG_UNDEF_INT: inherit or pick).
  struct Values {
    std::optional<int> min_ctas, max_ctas, nvls_ctas, cga_cluster_size, cta_policy;
    std::optional<std::string> alg_selection;
    std::optional<bool> force_alg_selection;
    uint64_t user_profiler_tag = 0;
    cudaEvent_t launch_completion_event = nullptr;
    std::vector<VendorOption> vendor_options;
  };

  // Refuses with NcclUnsupported where the loaded NCCL has no nccl*Config
  // calls (2.31.2), or, for a launch completion event, no such field (2.32.3).
  // The values are NCCLCollConfig._lower()'s, checked there (vendor option
  // keys unique among them).
  static std::shared_ptr<const CollConfig> make(Values values);

  CollConfig(const CollConfig&) = delete;
  CollConfig& operator=(const CollConfig&) = delete;

  // What NCCL reads: the loaded release's size and version.
  const newer::CollConfig* get() const { return &layout_; }
  const Values& values() const { return values_; }

 private:
  explicit CollConfig(Values values);

  Values values_;
  std::vector<newer::ConfigExt> ext_;
  newer::CollConfig layout_{};
};

}  // namespace nccl_core::collectives
