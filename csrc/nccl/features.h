// Which NCCL release each feature of the nccl.core API needs, and whether
// nccl_core serves it through NCCL itself or through its own code.
//
// The one table of version thresholds: the code that reaches a newer API
// takes its release from here (nccl/newer_than_2_28.h, device/dev_comm.cpp,
// comm/window_layout.cpp, ...), `nccl_core_backend.features()` reports it
// for the loaded NCCL (csrc/python/features.cpp), and docs/compatibility.md
// is checked against it by tests/cpu/test_features.py.
#pragma once

#include <nccl.h>

#include <string>

#include "nccl/api.h"

namespace nccl_core::features {

enum class Status { Native, NcclCore, Unsupported };

struct Feature {
  const char* name;      // key of nccl_core_backend.features()
  const char* api;       // the Python surface it covers
  const char* nccl_api;  // NCCL's C API behind it
  int nccl_since;        // release that brought nccl_api
  // From this release on nccl_core calls NCCL for it (0: never).
  int native_since;
  // nccl_core's own implementation serves it on [ours_since, ours_until)
  // (ours_since 0: none; ours_until 0: no upper bound).  The native path,
  // where available, wins.
  int ours_since;
  int ours_until;
  // Exported by libnccl.so.2 from nccl_since on (nullptr: a flag or field).
  const char* symbol;
  const char* note;
};

constexpr int v(int major, int minor, int patch) { return api::version_code(major, minor, patch); }

// The release series (major.minor) of the headers this extension was built with.
constexpr int kBuiltSeries = v(NCCL_MAJOR, NCCL_MINOR, 0);
constexpr int kBuiltSeriesEnd = v(NCCL_MAJOR, NCCL_MINOR + 1, 0);

// --- memory and registration ---------------------------------------------------
inline constexpr Feature kMemAlloc{
    "mem_alloc", "nccl_core_backend.torch.empty, nccl_core_backend.cupy.empty",
    "ncclMemAlloc", v(2, 19, 1), v(2, 19, 1), 0, 0, "ncclMemAlloc",
    "tensors on NCCL (cuMem) memory"};
inline constexpr Feature kRegisterBuffer{
    "register_buffer", "Communicator.register_buffer", "ncclCommRegister", v(2, 19, 3),
    v(2, 19, 3), 0, 0, "ncclCommRegister", "zero-copy buffer registration"};
// Registration itself is NCCL's since 2.27.3; nccl_core also asks the host
// ncclTeamLsa (2.28.3) for the window's LSA team.
inline constexpr Feature kWindowRegistration{
    "window_registration", "Communicator.register_window", "ncclCommWindowRegister",
    v(2, 27, 3), v(2, 28, 3), 0, 0, "ncclCommWindowRegister",
    "collective; None where the system cannot register windows"};
inline constexpr Feature kWindowCollSymmetric{
    "window_coll_symmetric", "WindowFlag.COLL_SYMMETRIC", "NCCL_WIN_COLL_SYMMETRIC",
    v(2, 27, 3), v(2, 28, 3), 0, 0, nullptr,
    "NCCL's symmetric kernels on windows the program registers"};
inline constexpr Feature kWindowStrictOrdering{
    "window_strict_ordering", "WindowFlag.STRICT_ORDERING", "NCCL_WIN_STRICT_ORDERING",
    v(2, 29, 7), v(2, 29, 7), 0, 0, nullptr,
    "older NCCL would ignore the flag: register_window refuses it there"};
inline constexpr Feature kWindowPointers{
    "window_pointers",
    "RegisteredWindowHandle.get_lsa_device_pointer, get_peer_device_pointer, lsa_size, lsa_rank",
    "ncclGetLsaDevicePointer, ncclGetPeerDevicePointer", v(2, 29, 2), v(2, 29, 2), v(2, 28, 3),
    v(2, 29, 0), "ncclGetLsaDevicePointer",
    "on 2.28 computed from the window's device descriptor (comm/window_layout.cpp)"};
inline constexpr Feature kWindowMultimemPointer{
    "window_multimem_pointer",
    "RegisteredWindowHandle.get_lsa_multimem_device_pointer, get_multimem_device_pointer",
    "ncclGetLsaMultimemDevicePointer, ncclGetMultimemDevicePointer", v(2, 29, 2), v(2, 29, 2), 0,
    0, "ncclGetMultimemDevicePointer",
    "get_lsa_multimem_device_pointer returns None before; both return None wherever NVLink "
    "multicast is off"};
inline constexpr Feature kWindowUserPtr{
    "window_user_ptr", "RegisteredWindowHandle.user_ptr", "ncclWinGetUserPtr", v(2, 29, 2), 0,
    v(2, 28, 3), 0, "ncclWinGetUserPtr", "the registered pointer, kept by nccl_core"};
inline constexpr Feature kPreMulSum{
    "pre_mul_sum", "Communicator.create_pre_mul_sum", "ncclRedOpCreatePreMulSum", v(2, 11, 4),
    v(2, 11, 4), 0, 0, "ncclRedOpCreatePreMulSum",
    "one-rank groups: nccl_core applies the factor itself"};

// --- one-sided ---------------------------------------------------------------
inline constexpr Feature kRmaLoadStore{
    "rma_load_store", "Communicator.put_signal, signal, wait_signal (load/store peers)",
    "ncclPutSignal, ncclSignal, ncclWaitSignal", v(2, 29, 2), 0, v(2, 28, 3), 0, nullptr,
    "NVLink (LSA) peers: nccl_core's kernels on every release (route auto, the default)"};
// NCCL_CORE_RMA_ROUTE=native / Communicator.rma_route = "native": every
// peer, NVLink ones included, through NCCL's calls (its copy-engine path for
// LSA peers), so one host exercises NCCL's one-sided implementation.
inline constexpr Feature kRmaNativeRoute{
    "rma_native_route", "Communicator.rma_route = \"native\", NCCL_CORE_RMA_ROUTE=native",
    "ncclPutSignal, ncclSignal, ncclWaitSignal", v(2, 29, 2), v(2, 29, 2), 0, 0, "ncclSignal",
    "every peer through NCCL, NVLink peers too; local_buffer must lie in a COLL_SYMMETRIC window"};
inline constexpr Feature kRmaNetwork{
    "rma_network", "Communicator.put_signal, signal, wait_signal (other peers)",
    "ncclPutSignal, ncclSignal, ncclWaitSignal", v(2, 29, 2), v(2, 29, 2), 0, 0,
    "ncclPutSignal",
    "peers outside the LSA team; local_buffer must lie in a COLL_SYMMETRIC window"};

// --- communicator ------------------------------------------------------------
inline constexpr Feature kSplit{
    "split", "dist.new_group, dist.split_group", "ncclCommSplit", v(2, 18, 1), v(2, 18, 1), 0, 0,
    "ncclCommSplit", ""};
inline constexpr Feature kShrink{
    "shrink", "Communicator.shrink, dist.shrink_group", "ncclCommShrink", v(2, 27, 3),
    v(2, 27, 3), 0, 0, "ncclCommShrink", "CommShrinkFlag.DEFAULT / ABORT"};
inline constexpr Feature kGetMemStat{
    "get_mem_stat", "Communicator.get_mem_stat", "ncclCommMemStats", v(2, 29, 7), v(2, 29, 7),
    0, 0, "ncclCommMemStats", ""};
inline constexpr Feature kRevoke{
    "revoke",
    "Communicator.revoke, ProcessGroupNcclCore.revoke; dist._reconfigure "
    "(init_process_group(enable_reconfigure=True))",
    "ncclCommRevoke", v(2, 28, 7), v(2, 28, 7), 0, 0, "ncclCommRevoke",
    "finalize() is refused after revoke; reconfigure revokes the group's communicator, then "
    "builds the next one"};
inline constexpr Feature kSuspendResume{
    "suspend_resume", "Communicator.suspend, resume; the backend's suspend, resume",
    "ncclCommSuspend, ncclCommResume", v(2, 29, 7), v(2, 29, 7), 0, 0, "ncclCommSuspend",
    "releases the communicator's suspendable memory (get_mem_stat GPU_MEM_SUSPEND)"};
inline constexpr Feature kGrow{
    "grow", "Communicator.get_unique_id, Communicator.grow, Communicator() for a new rank; grow_group",
    "ncclCommGrow, ncclCommGetUniqueId", v(2, 29, 2), v(2, 29, 2), 0, 0, "ncclCommGrow",
    "a larger communicator: the existing ranks first, then the new ones"};

// --- device API --------------------------------------------------------------
inline constexpr Feature kDevComm{
    "dev_comm",
    "Communicator.create_dev_comm, DevCommResource, NCCLDevCommRequirements.resources, teams",
    "ncclDevCommCreate",
    v(2, 28, 3), v(2, 28, 3), 0, 0, "ncclDevCommCreate",
    "requirements written in the loaded release's layout"};
inline constexpr Feature kDevCommGinConnection{
    "dev_comm_gin_connection",
    "NCCLDevCommRequirements.gin_connection_type, gin_exclusive_contexts, gin_queue_depth",
    "ncclDevCommRequirements.ginConnectionType", v(2, 29, 7), v(2, 29, 7), 0, 0, nullptr,
    "non-default values are refused on older releases"};
inline constexpr Feature kDevCommGin230{
    "dev_comm_gin_2_30", "NCCLDevCommRequirements.gin_traffic_class, world_gin_barrier_count",
    "ncclDevCommRequirements.ginTrafficClass, worldGinBarrierCount", v(2, 30, 3), v(2, 30, 3), 0,
    0, nullptr, "non-default values are refused on older releases"};
inline constexpr Feature kDevCommGinSignals{
    "dev_comm_gin_signals",
    "NCCLDevCommRequirements.gin_strong_signals_required, gin_va_signals_required",
    "ncclDevCommRequirements.ginStrongSignalsRequired, ginVaSignalsRequired", v(2, 30, 7),
    v(2, 30, 7), 0, 0, nullptr, "non-default values are refused on older releases"};
inline constexpr Feature kDevCommCft{
    "dev_comm_2_31",
    "NCCLDevCommRequirements.gin_custom_stride, gin_type, cft_caps, cft_barrier_count, "
    "gin_connection_type=CUSTOM_STRIDE",
    "ncclDevCommRequirements.ginCustomStride, ginType, cftCaps, cftBarrierCount", v(2, 31, 2),
    v(2, 31, 2), 0, 0, nullptr, "non-default values are refused on older releases"};
inline constexpr Feature kGinType{
    "gin_type", "Communicator.gin_type", "ncclCommQueryProperties", v(2, 29, 2), v(2, 29, 2), 0,
    0, "ncclCommQueryProperties", ""};
inline constexpr Feature kRailedGinType{
    "railed_gin_type", "Communicator.railed_gin_type", "ncclCommProperties.railedGinType",
    v(2, 29, 7), v(2, 29, 7), 0, 0, nullptr, ""};
inline constexpr Feature kProperties{
    "properties",
    "Communicator.properties, cuda_dev, nvml_dev, device_api_support, multimem_support, "
    "n_lsa_teams, host_rma_support",
    "ncclCommQueryProperties", v(2, 29, 2), v(2, 29, 2), 0, 0, "ncclCommQueryProperties",
    "n_lsa_teams and host_rma_support from 2.29.7 (None in properties before)"};
inline constexpr Feature kPropertiesGin{
    "properties_gin",
    "NCCLCommProperties.comm_hash, gin_min_stride, gin_connection_type, available_gin_types, "
    "dev_comm_runtime_version_size",
    "ncclCommProperties.commHash", v(2, 31, 2), v(2, 31, 2), 0, 0, nullptr,
    "None on older releases"};
inline constexpr Feature kPropertiesCft{
    "properties_cft",
    "NCCLCommProperties.cft_support, cft_multicast_support, cft_counted_support",
    "ncclCommProperties.cftSupport", v(2, 32, 3), v(2, 32, 3), 0, 0, nullptr,
    "None on older releases"};
inline constexpr Feature kTeams{
    "teams", "Communicator.team_world, team_lsa, team_rail, team_rank_to_world, team_rank_to_lsa",
    "ncclTeamWorld, ncclTeamLsa, ncclTeamRail, ncclTeamRankToWorld, ncclTeamRankToLsa",
    v(2, 28, 3), v(2, 28, 3), 0, 0, "ncclTeamWorld", "NCCLTeam(n_ranks, rank, stride)"};
inline constexpr Feature kCftTeams{
    "cft_teams", "Communicator.team_cft, team_cft_multimem", "ncclTeamCft, ncclTeamCftMultimem",
    v(2, 31, 2), v(2, 31, 2), 0, 0, "ncclTeamCft", "teams of the CFT unicast and multicast groups"};
// Our kernels read ncclDevComm as the headers we were built with lay it out.
inline constexpr Feature kDeviceCollectives{
    "device_collectives", "nccl_core_backend.device.all_reduce, all_gather", "NCCL device API",
    v(2, 28, 3), 0, kBuiltSeries < v(2, 28, 3) ? v(2, 28, 3) : kBuiltSeries, kBuiltSeriesEnd,
    nullptr, "nccl_core's kernels; the loaded release series must be the one built against"};

// --- library -------------------------------------------------------------------
inline constexpr Feature kParams{
    "params", "nccl_core_backend.params, dump_params",
    "ncclParamGetParameter, ncclParamGetAllParameterKeys, ncclParamDumpAll", v(2, 30, 4),
    v(2, 30, 4), 0, 0, "ncclParamGetParameter", "NCCL's parameters by name, as strings"};
inline constexpr Feature kGroupSimulate{
    "group_simulate", "group_end(simulate=True)", "ncclGroupSimulateEnd", v(2, 22, 3),
    v(2, 22, 3), 0, 0, "ncclGroupSimulateEnd",
    "GroupSimInfo.estimated_time: NCCL's estimate; nothing is launched"};

// --- collectives ---------------------------------------------------------------
inline constexpr Feature kFastPath{
    "fast_path", "dist collectives up to fast_path_max_bytes", "NCCL windows + ncclTeamLsa",
    v(2, 28, 3), 0, v(2, 28, 3), 0, nullptr,
    "small collectives as one nccl_core kernel over a symmetric window"};
inline constexpr Feature kPushAllReduce{
    "push_all_reduce", "dist.all_reduce of push_min_bytes..push_max_bytes, any memory",
    "NCCL windows + ncclTeamLsa", v(2, 28, 3), 0, v(2, 28, 3), 0, nullptr,
    "nccl_core's NVLink store kernel"};
// The per-call config of every collective of the raw Communicator and, for
// a group's next calls, of its dist.* collectives (nccl_core_backend.coll_config).
inline constexpr Feature kCollConfig{
    "coll_config", "NCCLCollConfig: config= on every collective, coll_config(...)",
    "ncclAllReduceConfig and the other nccl*Config calls", v(2, 31, 2), v(2, 31, 2), 0, 0,
    "ncclAllReduceConfig", "CTAs, algorithm selection, CTA policy, profiler tag, vendor options"};
inline constexpr Feature kCollConfigEvent{
    "coll_config_event", "NCCLCollConfig.launch_completion_event",
    "ncclCollConfig_t.launchCompletionEvent", v(2, 32, 3), v(2, 32, 3), 0, 0, nullptr,
    "an event NCCL records when the collective's kernel has launched"};

inline constexpr const Feature* kAll[] = {
    &kMemAlloc,           &kRegisterBuffer,        &kWindowRegistration,
    &kWindowCollSymmetric, &kWindowStrictOrdering, &kWindowPointers,
    &kWindowMultimemPointer, &kWindowUserPtr,      &kPreMulSum,
    &kRmaLoadStore,       &kRmaNativeRoute,        &kRmaNetwork,
    &kSplit,              &kShrink,                &kGetMemStat,
    &kRevoke,             &kSuspendResume,         &kGrow,
    &kDevComm,            &kDevCommGinConnection,  &kDevCommGin230,
    &kDevCommGinSignals,  &kDevCommCft,            &kGinType,
    &kRailedGinType,      &kDeviceCollectives,     &kFastPath,
    &kPushAllReduce,      &kProperties,            &kPropertiesGin,
    &kPropertiesCft,      &kTeams,                 &kCftTeams,
    &kParams,             &kGroupSimulate,         &kCollConfig,
    &kCollConfigEvent,
};

// The head of NCCL's device-side window descriptor (lsaFlatBase, lsaRank,
// worldRank, stride4G) is checked against the headers of 2.28.9 to 2.32.3
// (device/layout_checks.cu); nccl_core reads it on those release series only.
inline constexpr int kWindowDescriptorSince = v(2, 28, 3);
inline constexpr int kWindowDescriptorUntil = v(2, 33, 0);

constexpr Status status(const Feature& f, int loaded) {
  if (f.native_since != 0 && loaded >= f.native_since) {
    return Status::Native;
  }
  if (f.ours_since != 0 && loaded >= f.ours_since && (f.ours_until == 0 || loaded < f.ours_until)) {
    return Status::NcclCore;
  }
  return Status::Unsupported;
}

// The oldest release on which the feature works at all (0: none does).
constexpr int needs(const Feature& f) {
  if (f.native_since == 0) {
    return f.ours_since;
  }
  return f.ours_since != 0 && f.ours_since < f.native_since ? f.ours_since : f.native_since;
}

inline const char* status_name(Status s) {
  return s == Status::Native ? "native" : s == Status::NcclCore ? "nccl_core" : "unsupported";
}

// True if the loaded NCCL serves `f` (natively or through nccl_core).
inline bool available(const Feature& f) { return status(f, api::loaded_version()) != Status::Unsupported; }

// NcclUnsupported naming `what`, the release `f` needs and the loaded one.
[[noreturn]] void refuse(const Feature& f, const std::string& what);

} // namespace nccl_core::features
