// What NCCL reports about a communicator (ncclCommQueryProperties, NCCL >=
// 2.29.2), read in the layout claimed for the loaded release
// (layout::claimed_version).  Each later release appended fields: 2.29.7
// n_lsa_teams, host_rma_support and railed_gin_type; 2.31.2 the communicator's
// hash, the GIN stride and connection type, the GIN transports and the
// ncclDevComm size; 2.32.3 the CFT flags.  The `has_*` flags say which of
// them the loaded release filled in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nccl_core {

class Communicator;
namespace features {
struct Feature;
}

struct CommProperties {
  int rank = 0, nranks = 0, cuda_dev = 0, nvml_dev = 0;
  bool device_api_support = false, multimem_support = false;
  int gin_type = 0;
  bool has_2_29_7 = false;
  int n_lsa_teams = 0;
  bool host_rma_support = false;
  int railed_gin_type = 0;
  bool has_2_31 = false;
  uint64_t comm_hash = 0;
  int gin_min_stride = 0;
  int gin_connection_type = 0;
  std::vector<int> available_gin_types;  // every ncclGinType_t marked supported
  size_t dev_comm_runtime_version_size = 0;
  bool has_2_32 = false;
  bool cft_support = false, cft_multicast_support = false, cft_counted_support = false;
};

// NcclUnsupported naming `what` (and `feature`'s release) where the loaded
// NCCL lacks ncclCommQueryProperties or the feature's fields.
CommProperties comm_properties(Communicator& comm, const features::Feature& feature,
                               const char* what);
// The whole set, for Communicator.properties.
CommProperties comm_properties(Communicator& comm);

// NcclGinType of the communicator; `railed` asks for railedGinType (2.29.7).
int gin_type(Communicator& comm, bool railed);

} // namespace nccl_core
