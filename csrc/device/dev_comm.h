// Device communicators (ncclDevCommCreate, NCCL >= 2.28.3).
//
// The requirements a user sets are kept in our own struct and written into
// the layout of the NCCL that is loaded: 2.28 has an unversioned struct,
// 2.29.7 a versioned one (size/magic/version) with the GIN connection
// fields, and 2.30.3, 2.30.7 and 2.31.2 append more (layouts.h).  The ncclDevComm NCCL fills in is kept in a buffer of our own,
// larger than any release's struct, so its host address (DevComm::ptr) can be
// handed to user kernels built against the same NCCL headers.  Requested
// resources (LSA and GIN barriers, low-latency all-to-alls) become NCCL's
// resource list through its own *CreateRequirement helpers; the handles NCCL
// completes stay with the DevComm.  Requested teams become its team list, one
// node per distinct team, with a multimem handle for those asked for with
// multimem (refused, like lsa_multimem, where NVLink multicast is off).
#pragma once

#include <nccl.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/resources.h"
#include "device/layouts.h"
#include "device/teams.h"
#include "nccl/features.h"

namespace nccl_core {

// One entry of NCCLDevCommRequirements.resources: an LSA or GIN barrier on a
// team, or a low-latency all-to-all, which NCCL's *CreateRequirement helper
// turns into a node of the requirements' resource list.
struct ResourceRequest {
  enum class Kind { LsaBarrier, GinBarrier, LLA2A };
  Kind kind = Kind::LsaBarrier;
  Team team;  // the barriers'
  int n_barriers = 0;
  int n_blocks = 0, max_elements = 0, max_element_size = 0;  // LLA2A's
};

// One entry of NCCLDevCommRequirements.teams.  Entries for the same team
// merge into one node of NCCL's team list, with multimem if any asks for it.
struct TeamRequest {
  Team team;
  bool multimem = false;
};

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
  // NCCL >= 2.30.3 (INT32_MIN: NCCL's traffic class):
  int gin_traffic_class = INT32_MIN;
  int world_gin_barrier_count = 0;
  // NCCL >= 2.30.7:
  bool gin_strong_signals_required = true;
  bool gin_va_signals_required = true;
  // NCCL >= 2.31.2:
  int gin_custom_stride = 1;
  int gin_type = 0;  // NcclGinType; NONE: any
  int cft_caps = 0;  // NcclCftCap bits
  int cft_barrier_count = 0;
  std::vector<ResourceRequest> resources;  // in order; each gives one handle
  std::vector<TeamRequest> teams;           // in order, as given

  // Throws NcclInvalid for negative counts, an unknown connection or GIN
  // type, a custom stride below 1, or a team whose rank is not in it.
  void validate() const;
  // The first field set away from NCCL's default that the loaded release
  // lacks, with the feature that brought it ({nullptr, nullptr}: none).
  std::pair<const char*, const features::Feature*> newer_field() const;
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
  // The handle of each of requirements().resources, as NCCL completed it.
  const std::vector<layout::ResourceHandle>& resource_handles() const { return handles_; }
  // The multicast base NCCL gave `team`; nullopt where no entry of
  // requirements().teams asked for it with multimem.
  std::optional<void*> multimem_handle(const Team& team) const;

 private:
  DevComm(std::shared_ptr<Communicator> comm, const DevCommRequirements& req);
  void release(Communicator& comm) override;

  DevCommRequirements req_;
  std::vector<layout::ResourceHandle> handles_;
  // One per distinct team, in first-appearance order; NCCL fills in the
  // handles of those with multimem during the create.
  std::vector<TeamRequest> merged_teams_;
  std::vector<layout::MultimemHandle> multimem_;
  // Larger and more aligned than ncclDevComm of any release we load.
  std::vector<uint64_t> storage_;
};

// True if the loaded NCCL has the ncclDevComm layout of the headers this
// extension's own device kernels were compiled with.
bool device_kernels_match_loaded_nccl();
std::string device_kernels_mismatch_message();

} // namespace nccl_core
