// Host-side layouts of NCCL's versioned device-API structs, as the releases
// we load define them.  Ours, because the headers we compile against need not
// be the release we load; kernels.cu checks them against the real headers at
// compile time.
#pragma once

#include <cstddef>

namespace nccl_core::layout {

constexpr unsigned kApiMagic = 0xcafebeefu;  // NCCL_API_MAGIC

// The fields of ncclDevCommRequirements every release has, in order.  It
// ends on an 8-byte boundary, so embedding it keeps the flat layout.
struct RequirementsBody {
  void* resource_requirements = nullptr;
  void* team_requirements = nullptr;
  bool lsa_multimem = false;
  int barrier_count = 0, lsa_barrier_count = 0, rail_gin_barrier_count = 0;
  int lsa_ll_a2a_block_count = 0, lsa_ll_a2a_slot_count = 0;
  bool gin_force_enable = false;
  int gin_context_count = 0, gin_signal_count = 0, gin_counter_count = 0;
};
static_assert(offsetof(RequirementsBody, gin_counter_count) + sizeof(int) == sizeof(RequirementsBody),
              "the body must end without padding");

// NCCL 2.28: the body alone (unversioned).  NCCL 2.29.7: versioned, plus the
// GIN connection fields; 2.29.2 reads it up to the end of the body.
struct Requirements229 {
  size_t size = 0;
  unsigned magic = kApiMagic;
  unsigned version = 0;
  RequirementsBody body;
  int gin_connection_type = 0;
  bool gin_exclusive_contexts = false;
  int gin_queue_depth = 0;
};

// ncclCommProperties of NCCL 2.29.7 (2.29.2 ends before host_rma_support).
struct Properties229 {
  size_t size = 0;
  unsigned magic = kApiMagic;
  unsigned version = 0;
  int rank = 0, nranks = 0, cuda_dev = 0, nvml_dev = 0;
  bool device_api_support = false, multimem_support = false;
  int gin_type = 0;
  int n_lsa_teams = 0;
  bool host_rma_support = false;
  int railed_gin_type = 0;
};

} // namespace nccl_core::layout
