// Host-side layouts of NCCL's versioned device-API structs, as the releases
// we load define them.  Ours, because the headers we compile against need not
// be the release we load; kernels.cu checks them against the real headers at
// compile time.
#pragma once

#include <cstddef>
#include <cstdint>

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

// Room for ncclCommProperties of releases newer than the fields we read:
// from 2.30 NCCL fills in every field of its own release (2.32.3: 152 bytes).
struct PropertiesStorage {
  Properties229 head;
  unsigned char tail[4096];
};

// Host storage for the ncclDevComm NCCL fills in: larger than the struct of
// any release (2.32.3: 248 bytes); checked per header in layout_checks.cu.
constexpr size_t kDevCommBytes = 16 * 1024;

// The release whose struct layout we claim in the version field of
// ncclDevCommRequirements / ncclCommProperties for the loaded NCCL `loaded`.
// 2.28 has unversioned structs (0).  2.29.x reads the layouts we mirror:
// 2.29.2 (ends before the GIN connection fields / hostRmaSupport) or 2.29.7.
// From 2.30 NCCL converts between releases by this field: claiming an older
// one would give the old ncclDevComm layout (not the one of the loaded
// release's headers) and hide GIN (its 2.29.7 filter reports ginType NONE), so
// we claim the loaded release; its structs only append to the fields we write.
constexpr int claimed_version(int loaded) {
  constexpr int k2_29_2 = 22902, k2_29_7 = 22907, k2_30_0 = 23000;
  return loaded < k2_29_2 ? 0 : loaded < k2_29_7 ? k2_29_2 : loaded < k2_30_0 ? k2_29_7 : loaded;
}
// True if the versioned struct of `claimed` has the 2.29.7 fields
// (gin_connection_type..., host_rma_support, railed_gin_type).
constexpr bool has_229_7_fields(int claimed) { return claimed >= 22907; }

} // namespace nccl_core::layout
