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

// --- the other host team queries (2.28.3) ------------------------------------------
static_assert(std::is_same_v<decltype(static_cast<ncclTeam_t (*)(ncclComm_t)>(&ncclTeamWorld)),
                             ncclTeam_t (*)(ncclComm_t)>);
static_assert(std::is_same_v<decltype(static_cast<ncclTeam_t (*)(ncclComm_t)>(&ncclTeamRail)),
                             ncclTeam_t (*)(ncclComm_t)>);
static_assert(std::is_same_v<decltype(static_cast<int (*)(ncclComm_t, ncclTeam_t, int)>(
                                 &ncclTeamRankToWorld)),
                             int (*)(ncclComm_t, ncclTeam_t, int)>);
static_assert(std::is_same_v<decltype(static_cast<int (*)(ncclComm_t, ncclTeam_t, int)>(
                                 &ncclTeamRankToLsa)),
                             int (*)(ncclComm_t, ncclTeam_t, int)>);

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
// 2.30 on: the flat layout of the later fields (layout::Requirements231).
using Req231 = layout::Requirements231;
NCCL_CORE_SAME_OFFSET(Req231, Req, body, resourceRequirementsList);
NCCL_CORE_SAME_OFFSET(Req231, Req, gin_connection_type, ginConnectionType);
NCCL_CORE_SAME_OFFSET(Req231, Req, gin_queue_depth, ginQueueDepth);
NCCL_CORE_SAME_OFFSET(Req231, Req, gin_traffic_class, ginTrafficClass);
NCCL_CORE_SAME_OFFSET(Req231, Req, world_gin_barrier_count, worldGinBarrierCount);
#if NCCL_VERSION_CODE >= 23007
NCCL_CORE_SAME_OFFSET(Req231, Req, gin_strong_signals_required, ginStrongSignalsRequired);
NCCL_CORE_SAME_OFFSET(Req231, Req, gin_va_signals_required, ginVaSignalsRequired);
#endif
#if NCCL_VERSION_CODE >= 23102
NCCL_CORE_SAME_OFFSET(Req231, Req, gin_custom_stride, ginCustomStride);
NCCL_CORE_SAME_OFFSET(Req231, Req, gin_type, ginType);
NCCL_CORE_SAME_OFFSET(Req231, Req, use_runtime_version, useRuntimeVersion);
NCCL_CORE_SAME_OFFSET(Req231, Req, cft_caps, cftCaps);
NCCL_CORE_SAME_OFFSET(Req231, Req, cft_barrier_count, cftBarrierCount);
static_assert(sizeof(Req231) == sizeof(Req));
static_assert(NCCL_CFT_NONE == 0 && NCCL_CFT == 1 && NCCL_CFT_MULTIMEM == 2);
static_assert(layout::requirements_size(NCCL_VERSION_CODE) == sizeof(Req));
#elif NCCL_VERSION_CODE >= 23007
// Up to the VA flag and the padding after it, within the struct.
static_assert(layout::requirements_size(NCCL_VERSION_CODE) <= sizeof(Req));
static_assert(layout::requirements_size(NCCL_VERSION_CODE) >=
              offsetof(Req, ginVaSignalsRequired) + sizeof(bool));
#else
static_assert(layout::requirements_size(NCCL_VERSION_CODE) ==
              offsetof(Req, worldGinBarrierCount) + sizeof(int));
#endif
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
#if NCCL_VERSION_CODE >= 23102
// 2.31.2 appends after railedGinType (read from layout::kProperties231 on).
using Props232 = layout::Properties232;
NCCL_CORE_SAME_OFFSET(Props232, Props, base.railed_gin_type, railedGinType);
NCCL_CORE_SAME_OFFSET(Props232, Props, comm_hash, commHash);
NCCL_CORE_SAME_OFFSET(Props232, Props, gin_min_stride, ginMinStride);
NCCL_CORE_SAME_OFFSET(Props232, Props, gin_connection_type, ginConnectionType);
NCCL_CORE_SAME_OFFSET(Props232, Props, gin_support, ginSupport);
NCCL_CORE_SAME_OFFSET(Props232, Props, dev_comm_runtime_version_size, devCommRuntimeVersionSize);
static_assert(sizeof(Props232::gin_support) == sizeof(Props::ginSupport));
static_assert(sizeof(ncclGinConnectionType_t) == sizeof(int));
static_assert(NCCL_GIN_CONNECTION_CUSTOM_STRIDE == 3 && NCCL_GIN_TYPE_EFA_GDA == 5);
static_assert(NCCL_CFT_TEAM_FLAT == 0 && NCCL_CFT_TEAM_HIER_MULTIMEM == 1 &&
              NCCL_CFT_TEAM_HIER_LSA == 2);
static_assert(sizeof(ncclCftTeamMode_t) == sizeof(int));  // passed as int (TeamCftFn)
static_assert(std::is_same_v<decltype(static_cast<ncclTeam_t (*)(ncclComm_t, ncclCftTeamMode_t)>(
                                 &ncclTeamCft)),
                             ncclTeam_t (*)(ncclComm_t, ncclCftTeamMode_t)>);
static_assert(std::is_same_v<decltype(static_cast<ncclTeam_t (*)(ncclComm_t)>(&ncclTeamCftMultimem)),
                             ncclTeam_t (*)(ncclComm_t)>);
#endif
#if NCCL_VERSION_CODE >= 23203
NCCL_CORE_SAME_OFFSET(Props232, Props, cft_support, cftSupport);
NCCL_CORE_SAME_OFFSET(Props232, Props, cft_multicast_support, cftMulticastSupport);
NCCL_CORE_SAME_OFFSET(Props232, Props, cft_counted_support, cftCountedSupport);
#endif
#endif

// --- per-call collective config (written for the loaded release, collectives/coll_config.cpp) ---
#if NCCL_VERSION_CODE >= 23102
using Coll = newer::CollConfig;
using Ext = newer::ConfigExt;
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, size, size);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, magic, magic);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, version, version);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, ext, ext);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, min_ctas, minCTAs);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, max_ctas, maxCTAs);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, nvls_ctas, nvlsCTAs);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, cga_cluster_size, cgaClusterSize);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, alg_selection, algSelection);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, force_alg_selection, forceAlgSelection);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, cta_policy, CTAPolicy);
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, user_profiler_tag, userProfilerTag);
NCCL_CORE_SAME_OFFSET(Ext, ncclConfigExt_t, next, next);
NCCL_CORE_SAME_OFFSET(Ext, ncclConfigExt_t, vendor_id, key.vendorId);
NCCL_CORE_SAME_OFFSET(Ext, ncclConfigExt_t, option_id, key.optionId);
NCCL_CORE_SAME_OFFSET(Ext, ncclConfigExt_t, value, val);
static_assert(sizeof(Ext) == sizeof(ncclConfigExt_t));
static_assert(NCCL_API_MAGIC == newer::kApiMagic && NCCL_CONFIG_UNDEF_INT == newer::kConfigUndefInt);
static_assert(NCCL_CTA_POLICY_EFFICIENCY == 0x01 && NCCL_CTA_POLICY_ZERO == 0x02);
#if NCCL_VERSION_CODE >= 23200
NCCL_CORE_SAME_OFFSET(Coll, ncclCollConfig_t, launch_completion_event, launchCompletionEvent);
static_assert(sizeof(Coll) == sizeof(ncclCollConfig_t));
#else
static_assert(sizeof(ncclCollConfig_t) == newer::kCollConfigSize231);
#endif
// Each nccl*Config call is the plain call with a trailing config pointer.
using CollCfg = const ncclCollConfig_t*;
static_assert(std::is_same_v<decltype(ncclAllReduceConfig),
                             ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                          ncclComm_t, cudaStream_t, CollCfg)>);
static_assert(std::is_same_v<decltype(ncclReduceConfig),
                             ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                          int, ncclComm_t, cudaStream_t, CollCfg)>);
static_assert(std::is_same_v<decltype(ncclBroadcastConfig),
                             ncclResult_t(const void*, void*, size_t, ncclDataType_t, int,
                                          ncclComm_t, cudaStream_t, CollCfg)>);
static_assert(std::is_same_v<decltype(ncclAllGatherConfig),
                             ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                          cudaStream_t, CollCfg)>);
static_assert(std::is_same_v<decltype(ncclReduceScatterConfig),
                             ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                          ncclComm_t, cudaStream_t, CollCfg)>);
static_assert(std::is_same_v<decltype(ncclAlltoAllConfig),
                             ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                          cudaStream_t, CollCfg)>);
static_assert(std::is_same_v<decltype(ncclGatherConfig),
                             ncclResult_t(const void*, void*, size_t, ncclDataType_t, int,
                                          ncclComm_t, cudaStream_t, CollCfg)>);
static_assert(std::is_same_v<decltype(ncclScatterConfig), decltype(ncclGatherConfig)>);
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

#if NCCL_VERSION_CODE >= 22902
static_assert(std::is_same_v<newer::CommGetUniqueIdFn, decltype(ncclCommGetUniqueId)>);
static_assert(std::is_same_v<newer::CommGrowFn, decltype(ncclCommGrow)>);
#endif
#if NCCL_VERSION_CODE >= 23004
static_assert(std::is_same_v<newer::ParamGetParameterFn, decltype(ncclParamGetParameter)>);
static_assert(std::is_same_v<newer::ParamGetAllParameterKeysFn,
                             decltype(ncclParamGetAllParameterKeys)>);
static_assert(std::is_same_v<newer::ParamDumpAllFn, decltype(ncclParamDumpAll)>);
#endif
static_assert(std::is_same_v<decltype(ncclGroupSimulateEnd), ncclResult_t(ncclSimInfo_t*)>);

// --- device resource requirements (device/dev_comm.cpp) --------------------------
using ResReq = layout::ResourceRequirements;
static_assert(sizeof(ResReq) == sizeof(ncclDevResourceRequirements));
NCCL_CORE_SAME_OFFSET(ResReq, ncclDevResourceRequirements, next, next);
NCCL_CORE_SAME_OFFSET(ResReq, ncclDevResourceRequirements, buffer_size, bufferSize);
NCCL_CORE_SAME_OFFSET(ResReq, ncclDevResourceRequirements, out_buffer_handle, outBufferHandle);
NCCL_CORE_SAME_OFFSET(ResReq, ncclDevResourceRequirements, gin_signal_count, ginSignalCount);
NCCL_CORE_SAME_OFFSET(ResReq, ncclDevResourceRequirements, out_gin_counter_start,
                      outGinCounterStart);
static_assert(sizeof(layout::ResourceHandle) == sizeof(ncclLsaBarrierHandle) &&
              sizeof(layout::ResourceHandle) == sizeof(ncclGinBarrierHandle) &&
              sizeof(layout::ResourceHandle) == sizeof(ncclLLA2AHandle));
NCCL_CORE_SAME_OFFSET(layout::ResourceHandle, ncclLsaBarrierHandle, first, bufHandle);
NCCL_CORE_SAME_OFFSET(layout::ResourceHandle, ncclLsaBarrierHandle, second, nBarriers);
NCCL_CORE_SAME_OFFSET(layout::ResourceHandle, ncclGinBarrierHandle, first, signal0);
NCCL_CORE_SAME_OFFSET(layout::ResourceHandle, ncclLLA2AHandle, first, bufHandle);
NCCL_CORE_SAME_OFFSET(layout::ResourceHandle, ncclLLA2AHandle, second, nSlots);
static_assert(std::is_same_v<decltype(ncclLLA2ACalcSlots), newer::LLA2ACalcSlotsFn>);
using TeamReq = layout::TeamRequirements;
static_assert(sizeof(TeamReq) == sizeof(ncclTeamRequirements_t));
NCCL_CORE_SAME_OFFSET(TeamReq, ncclTeamRequirements_t, next, next);
NCCL_CORE_SAME_OFFSET(TeamReq, ncclTeamRequirements_t, nranks, team.nRanks);
NCCL_CORE_SAME_OFFSET(TeamReq, ncclTeamRequirements_t, stride, team.stride);
NCCL_CORE_SAME_OFFSET(TeamReq, ncclTeamRequirements_t, multimem, multimem);
NCCL_CORE_SAME_OFFSET(TeamReq, ncclTeamRequirements_t, out_multimem_handle, outMultimemHandle);
static_assert(sizeof(layout::MultimemHandle) == sizeof(ncclMultimemHandle_t));

// --- flags ----------------------------------------------------------------------------
static_assert(newer::kWinCollSymmetric == NCCL_WIN_COLL_SYMMETRIC);
static_assert(NCCL_SHRINK_DEFAULT == 0 && NCCL_SHRINK_ABORT == 1);

#undef NCCL_CORE_SAME_OFFSET

} // namespace nccl_core::layout_checks
