// Host-side layouts of NCCL's versioned device-API structs, as the releases
// we load define them.  Ours, because the headers we compile against need not
// be the release we load; layout_checks.cu checks them against the real
// headers at compile time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl/newer_than_2_28.h"

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

// ncclDevCommRequirements of the releases after 2.29.7, flat (Requirements229
// ends in padding, so it cannot be embedded): each appends -- 2.30.3 the
// traffic class and the world GIN barriers, 2.30.7 the strong and VA signal
// flags, 2.31.2 the custom stride to the CFT barriers (2.32.3 has the same).
// Unset fields hold NCCL's initializer values; requirements_size() says how
// much of it the loaded release reads.
struct Requirements231 {
  size_t size = 0;
  unsigned magic = kApiMagic;
  unsigned version = 0;
  RequirementsBody body;
  int gin_connection_type = 0;
  bool gin_exclusive_contexts = false;
  int gin_queue_depth = 0;
  int gin_traffic_class = INT32_MIN;  // NCCL_CONFIG_UNDEF_INT
  int world_gin_barrier_count = 0;
  bool gin_strong_signals_required = true;
  bool gin_va_signals_required = true;
  int gin_custom_stride = 1;
  int gin_type = 0;
  bool use_runtime_version = false;
  int cft_caps = 0;
  int cft_barrier_count = 0;
};

// The releases that appended to ncclDevCommRequirements after 2.29.7.
constexpr int kRequirements2303 = 23003, kRequirements2307 = 23007, kRequirements2312 = 23102;

// Bytes of Requirements231 the release `claimed` (2.30 on) reads.
constexpr size_t requirements_size(int claimed) {
  return claimed < kRequirements2307   ? offsetof(Requirements231, gin_strong_signals_required)
         : claimed < kRequirements2312 ? offsetof(Requirements231, gin_custom_stride)
                                       : sizeof(Requirements231);
}

// ncclDevResourceRequirements, one node of the list NCCL's
// *CreateRequirement helpers fill in, and the handles they point it at, which
// ncclDevCommCreate completes: the same in every release we load (2.28.9 to
// 2.32.3; layout_checks.cu checks them against the headers built against).
struct ResourceRequirements {
  void* next = nullptr;
  size_t buffer_size = 0, buffer_align = 0;
  void* out_buffer_handle = nullptr;
  int gin_signal_count = 0, gin_counter_count = 0;
  void* out_gin_signal_start = nullptr;
  void* out_gin_counter_start = nullptr;
};
// ncclTeamRequirements, one node of the requirements' team list (every
// release we load has it); its out_multimem_handle points at a
// MultimemHandle (the call layer's, nccl/newer_than_2_28.h).
struct TeamRequirements {
  void* next = nullptr;
  int nranks = 0, rank = 0, stride = 0;  // ncclTeam_t
  bool multimem = false;
  void* out_multimem_handle = nullptr;
};
using MultimemHandle = newer::MultimemHandle;
// ncclLsaBarrierHandle {bufHandle, nBarriers}, ncclGinBarrierHandle {signal0,
// a handle NCCL leaves unused from 2.30}, ncclLLA2AHandle {bufHandle, nSlots}:
// two 32-bit fields each.
struct ResourceHandle {
  uint32_t first = 0, second = 0;
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

// ncclCommProperties of NCCL 2.32.3: 2.29.7's fields, then those 2.31.2
// appended (commHash to devCommRuntimeVersionSize), then 2.32.3's CFT flags.
struct Properties232 {
  Properties229 base;
  uint64_t comm_hash = 0;
  int gin_min_stride = 0;
  int gin_connection_type = 0;
  bool gin_support[64] = {};  // indexed by ncclGinType_t
  size_t dev_comm_runtime_version_size = 0;
  bool cft_support = false, cft_multicast_support = false, cft_counted_support = false;
};

// The first releases whose ncclCommProperties have the fields of 2.31.2 and
// of 2.32.3 (the releases whose headers layout_checks.cu is built against).
constexpr int kProperties231 = 23102, kProperties232 = 23203;

// Room for ncclCommProperties of releases newer than the fields we read:
// from 2.30 NCCL fills in every field of its own release.
struct PropertiesStorage {
  Properties232 head;
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
