// Device communicators (ncclDevCommCreate, NCCL >= 2.28.3).
//
// The requirements a user sets are kept in our own struct and written into
// the layout of the NCCL that is loaded: 2.28 has an unversioned struct,
// 2.29.7 a versioned one (size/magic/version) with the GIN connection
// fields.  The ncclDevComm NCCL fills in is kept in a buffer of our own,
// larger than any release's struct, so its host address (DevComm::ptr) can be
// handed to user kernels built against the same NCCL headers.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/resources.h"

namespace nccl_core {

// NCCLDevCommRequirements of nccl.core (snake_case of ncclDevCommRequirements).
struct DevCommRequirements {
  bool lsa_multimem = false;
  int barrier_count = 0;
  int lsa_barrier_count = 0;
  int rail_gin_barrier_count = 0;
  int lsa_ll_a2a_block_count = 0;
  int lsa_ll_a2a_slot_count = 0;
  bool gin_force_enable = false;
  int gin_context_count = 0;
  int gin_signal_count = 0;
  int gin_counter_count = 0;
  // NCCL >= 2.29.7:
  int gin_connection_type = 0;  // NcclGinConnectionType
  bool gin_exclusive_contexts = false;
  int gin_queue_depth = 0;

  // Throws NcclInvalid for negative counts or an unknown connection type.
  void validate() const;
};

class DevComm final : public Resource {
 public:
  // Collective over the communicator.  Refuses lsa_multimem where NVLink
  // multicast is off (never reaching NCCL), and fields the loaded NCCL does
  // not know (NcclUnsupported naming the release that has them).
  static std::shared_ptr<DevComm> create(const std::shared_ptr<Communicator>& comm,
                                         const DevCommRequirements& req);

  // Host address of the ncclDevComm struct NCCL filled in.
  const void* ptr() const;
  const DevCommRequirements& requirements() const { return req_; }

 private:
  DevComm(std::shared_ptr<Communicator> comm, const DevCommRequirements& req);
  void release(Communicator& comm) override;

  DevCommRequirements req_;
  // Larger and more aligned than ncclDevComm of any release we load.
  std::vector<uint64_t> storage_;
};

// ncclCommQueryProperties (NCCL >= 2.29.2, NcclUnsupported before), in the
// layout claimed for the loaded release.  `has_2_29_7` says whether the
// fields of 2.29.7 (n_lsa_teams, host_rma_support, railed_gin_type) were
// filled in.
struct CommProperties {
  int rank = 0, nranks = 0, cuda_dev = 0, nvml_dev = 0;
  bool device_api_support = false, multimem_support = false;
  int gin_type = 0;
  int n_lsa_teams = 0;
  bool has_2_29_7 = false;
  bool host_rma_support = false;
  int railed_gin_type = 0;
};
CommProperties comm_properties(Communicator& comm);

// NcclGinType of the communicator (ncclCommQueryProperties, NCCL >= 2.29.2);
// `railed` asks for railedGinType (NCCL >= 2.29.7).
int gin_type(Communicator& comm, bool railed);

// True if the loaded NCCL has the ncclDevComm layout of the headers this
// extension's own device kernels were compiled with.
bool device_kernels_match_loaded_nccl();
std::string device_kernels_mismatch_message();

} // namespace nccl_core
