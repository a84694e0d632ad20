// Compile-time checks of everything nccl_core mirrors from NCCL's headers:
// struct layouts it writes or reads without the headers' types, enum and flag
// values, and the signatures of the functions it resolves at run time.  Built
// against each release's headers (scripts/build-matrix.sh builds 2.28.9 to
// 2.32.3), so a layout or signature change in a new NCCL stops the build
// here.  Which of them the loaded release uses is decided at run time
// (layout::claimed_version, nccl/features.h).
#include <nccl.h>
#include <nccl_device.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "comm/window_layout.h"
#include "device/layouts.h"
#include "nccl/newer_than_2_28.h"

namespace nccl_core::layout_checks {

#define NCCL_CORE_SAME_OFFSET(ours, theirs, ours_field, theirs_field)                      \
  static_assert(offsetof(ours, ours_field) == offsetof(theirs, theirs_field),                \
                #ours "::" #ours_field " is not at " #theirs "::" #theirs_field "'s offset in " \
                "these NCCL headers")

// --- window descriptor (read on 2.28.x, comm/window_layout.cpp) ------------------
using Vidmem = window_layout::VidmemHead;
NCCL_CORE_SAME_OFFSET(Vidmem, ncclWindow_vidmem, win_host, winHost);
NCCL_CORE_SAME_OFFSET(Vidmem, ncclWindow_vidmem, lsa_flat_base, lsaFlatBase);
NCCL_CORE_SAME_OFFSET(Vidmem, ncclWindow_vidmem, lsa_rank, lsaRank);
NCCL_CORE_SAME_OFFSET(Vidmem, ncclWindow_vidmem, world_rank, worldRank);
NCCL_CORE_SAME_OFFSET(Vidmem, ncclWindow_vidmem, stride_4g, stride4G);
static_assert(sizeof(Vidmem) <= sizeof(ncclWindow_vidmem));

// --- host LSA team (ncclTeamLsa(ncclComm_t), resolved at run time) ---------------
NCCL_CORE_SAME_OFFSET(newer::Team, ncclTeam, nranks, nRanks);
NCCL_CORE_SAME_OFFSET(newer::Team, ncclTeam, rank, rank);
NCCL_CORE_SAME_OFFSET(newer::Team, ncclTeam, stride, stride);
static_assert(sizeof(newer::Team) == sizeof(ncclTeam_t));
// The host overload must exist with this signature (TeamLsaFn returns our Team).
static_assert(std::is_same_v<decltype(static_cast<ncclTeam_t (*)(ncclComm_t)>(&ncclTeamLsa)),
                             ncclTeam_t (*)(ncclComm_t)>);

// --- device communicator ------------------------------------------------------------
// NCCL fills in ncclDevComm in host storage of ours.
static_assert(sizeof(ncclDevComm) <= layout::kDevCommBytes);
static_assert(alignof(ncclDevComm) <= alignof(uint64_t));
#if NCCL_VERSION_CODE >= 23000
// Versioned from 2.30: DevComm::create checks this header at run time.
static_assert(offsetof(ncclDevComm, magic) == 0 && offsetof(ncclDevComm, version) == sizeof(unsigned));
static_assert(sizeof(ncclDevComm::magic) == sizeof(unsigned) && sizeof(ncclDevComm::version) == sizeof(unsigned));
#endif
static_assert(std::is_same_v<decltype(ncclDevCommCreate),
                             ncclResult_t(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*)>);
static_assert(std::is_same_v<decltype(ncclDevCommDestroy),
                             ncclResult_t(ncclComm_t, ncclDevComm_t const*)>);

using Body = layout::RequirementsBody;
#if NCCL_VERSION_CODE < 22902
// 2.28: the unversioned struct is exactly the body.
using Req = ncclDevCommRequirements_t;
static_assert(sizeof(Body) == sizeof(Req));
constexpr size_t kBody = 0;
#else
// 2.29.2 on: size/magic/version, then the body; 2.29.7 appends the GIN
// connection fields; later releases append after those.
using Req = ncclDevCommRequirements_t;
using Req229 = layout::Requirements229;
NCCL_CORE_SAME_OFFSET(Req229, Req, size, size);
NCCL_CORE_SAME_OFFSET(Req229, Req, magic, magic);
NCCL_CORE_SAME_OFFSET(Req229, Req, version, version);
constexpr size_t kBody = offsetof(Req229, body);
static_assert(layout::kApiMagic == NCCL_API_MAGIC);
#if NCCL_VERSION_CODE >= 22907
NCCL_CORE_SAME_OFFSET(Req229, Req, gin_connection_type, ginConnectionType);
NCCL_CORE_SAME_OFFSET(Req229, Req, gin_exclusive_contexts, ginExclusiveContexts);
NCCL_CORE_SAME_OFFSET(Req229, Req, gin_queue_depth, ginQueueDepth);
static_assert(sizeof(ncclGinConnectionType_t) == sizeof(int));
static_assert(NCCL_GIN_CONNECTION_NONE == 0 && NCCL_GIN_CONNECTION_FULL == 1 &&
              NCCL_GIN_CONNECTION_RAIL == 2);
#if NCCL_VERSION_CODE < 23000
static_assert(sizeof(Req229) == sizeof(Req));
#else
static_assert(sizeof(Req229) <= sizeof(Req));
#endif
#else
static_assert(offsetof(Req229, gin_connection_type) <= sizeof(Req));
#endif
#endif
#define NCCL_CORE_BODY_FIELD(ours, theirs) \
  static_assert(kBody + offsetof(Body, ours) == offsetof(Req, theirs), #ours " moved in ncclDevCommRequirements")
NCCL_CORE_BODY_FIELD(resource_requirements, resourceRequirementsList);
NCCL_CORE_BODY_FIELD(team_requirements, teamRequirementsList);
NCCL_CORE_BODY_FIELD(lsa_multimem, lsaMultimem);
NCCL_CORE_BODY_FIELD(barrier_count, barrierCount);
NCCL_CORE_BODY_FIELD(lsa_barrier_count, lsaBarrierCount);
NCCL_CORE_BODY_FIELD(rail_gin_barrier_count, railGinBarrierCount);
NCCL_CORE_BODY_FIELD(lsa_ll_a2a_block_count, lsaLLA2ABlockCount);
NCCL_CORE_BODY_FIELD(lsa_ll_a2a_slot_count, lsaLLA2ASlotCount);
NCCL_CORE_BODY_FIELD(gin_force_enable, ginForceEnable);
NCCL_CORE_BODY_FIELD(gin_context_count, ginContextCount);
NCCL_CORE_BODY_FIELD(gin_signal_count, ginSignalCount);
NCCL_CORE_BODY_FIELD(gin_counter_count, ginCounterCount);
#undef NCCL_CORE_BODY_FIELD

// --- communicator properties (2.29.2 on) ------------------------------------------
#if NCCL_VERSION_CODE >= 22902
using Props = ncclCommProperties_t;
using Props229 = layout::Properties229;
NCCL_CORE_SAME_OFFSET(Props229, Props, size, size);
NCCL_CORE_SAME_OFFSET(Props229, Props, magic, magic);
NCCL_CORE_SAME_OFFSET(Props229, Props, version, version);
NCCL_CORE_SAME_OFFSET(Props229, Props, rank, rank);
NCCL_CORE_SAME_OFFSET(Props229, Props, nranks, nRanks);
NCCL_CORE_SAME_OFFSET(Props229, Props, cuda_dev, cudaDev);
NCCL_CORE_SAME_OFFSET(Props229, Props, nvml_dev, nvmlDev);
NCCL_CORE_SAME_OFFSET(Props229, Props, device_api_support, deviceApiSupport);
NCCL_CORE_SAME_OFFSET(Props229, Props, multimem_support, multimemSupport);
NCCL_CORE_SAME_OFFSET(Props229, Props, gin_type, ginType);
NCCL_CORE_SAME_OFFSET(Props229, Props, n_lsa_teams, nLsaTeams);
static_assert(NCCL_GIN_TYPE_NONE == 0 && NCCL_GIN_TYPE_PROXY == 2 && NCCL_GIN_TYPE_GDAKI == 3);
static_assert(std::is_same_v<decltype(ncclCommQueryProperties), ncclResult_t(ncclComm_t, Props*)>);
#if NCCL_VERSION_CODE >= 22907
NCCL_CORE_SAME_OFFSET(Props229, Props, host_rma_support, hostRmaSupport);
NCCL_CORE_SAME_OFFSET(Props229, Props, railed_gin_type, railedGinType);
static_assert(sizeof(ncclGinType_t) == sizeof(int));
#if NCCL_VERSION_CODE < 23000
static_assert(sizeof(Props229) == sizeof(Props));
#else
// NCCL 2.30+ fills in its whole struct: it must fit our storage.
static_assert(sizeof(Props) <= sizeof(layout::PropertiesStorage));
#endif
#endif
#if NCCL_VERSION_CODE >= 23007
static_assert(NCCL_GIN_TYPE_GPI == 4);
#endif
#endif

// --- functions resolved at run time (nccl/newer_than_2_28.h) ---------------------------------
#if NCCL_VERSION_CODE >= 22902
static_assert(std::is_same_v<newer::PutSignalFn, decltype(ncclPutSignal)>);
static_assert(std::is_same_v<newer::SignalFn, decltype(ncclSignal)>);
static_assert(std::is_same_v<decltype(ncclWaitSignal),
                             ncclResult_t(int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t)>);
using Desc = newer::WaitSignalDesc;
NCCL_CORE_SAME_OFFSET(Desc, ncclWaitSignalDesc_t, op_count, opCnt);
NCCL_CORE_SAME_OFFSET(Desc, ncclWaitSignalDesc_t, peer, peer);
NCCL_CORE_SAME_OFFSET(Desc, ncclWaitSignalDesc_t, signal_index, sigIdx);
NCCL_CORE_SAME_OFFSET(Desc, ncclWaitSignalDesc_t, context, ctx);
static_assert(sizeof(Desc) == sizeof(ncclWaitSignalDesc_t));
static_assert(std::is_same_v<newer::GetLsaDevicePointerFn, decltype(ncclGetLsaDevicePointer)>);
static_assert(std::is_same_v<newer::GetPeerDevicePointerFn, decltype(ncclGetPeerDevicePointer)>);
static_assert(std::is_same_v<newer::GetLsaMultimemDevicePointerFn,
                             decltype(ncclGetLsaMultimemDevicePointer)>);
static_assert(std::is_same_v<newer::WinGetUserPtrFn, decltype(ncclWinGetUserPtr)>);
#endif
#if NCCL_VERSION_CODE >= 22907
static_assert(std::is_same_v<decltype(ncclCommMemStats),
                             ncclResult_t(ncclComm_t, ncclCommMemStat_t, uint64_t*)>);
static_assert(sizeof(ncclCommMemStat_t) == sizeof(int));  // passed as int (CommMemStatsFn)
static_assert(int(newer::MemStat::GpuMemSuspend) == ncclStatGpuMemSuspend &&
              int(newer::MemStat::GpuMemSuspended) == ncclStatGpuMemSuspended &&
              int(newer::MemStat::GpuMemPersist) == ncclStatGpuMemPersist &&
              int(newer::MemStat::GpuMemTotal) == ncclStatGpuMemTotal);
static_assert(std::is_same_v<newer::CommSuspendFn, decltype(ncclCommSuspend)>);
static_assert(std::is_same_v<newer::CommResumeFn, decltype(ncclCommResume)>);
static_assert(newer::kWinStrictOrdering == NCCL_WIN_STRICT_ORDERING);
#endif

// --- flags ----------------------------------------------------------------------------
static_assert(newer::kWinCollSymmetric == NCCL_WIN_COLL_SYMMETRIC);
static_assert(NCCL_SHRINK_DEFAULT == 0 && NCCL_SHRINK_ABORT == 1);

#undef NCCL_CORE_SAME_OFFSET

} // namespace nccl_core::layout_checks
