// NCCL APIs newer than 2.28, resolved at run time.
//
// The extension is built against whichever NCCL headers are at hand (2.28 on
// the GPU hosts, newer elsewhere) and must load against any NCCL >= 2.28, so
// nothing here is linked directly: each entry is a function-pointer type with
// the C signature from NCCL's headers, the symbol name, and the release that
// brought it.  `api::require<Fn>` resolves one or throws NcclUnsupported.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/seam.h"

namespace nccl_core::newer {

// ncclCommMemStat_t (2.29.7): same values as NCCL's enum.
enum class MemStat : int { GpuMemSuspend = 0, GpuMemSuspended = 1, GpuMemPersist = 2, GpuMemTotal = 3 };

// ncclWaitSignalDesc_t (2.29.2), C field order.
struct WaitSignalDesc {
  int op_count;
  int peer;
  int signal_index;
  int context;
};

// struct ncclTeam (2.28.3, host query ncclTeamLsa(ncclComm_t)).
struct Team {
  int nranks, rank, stride;
};

// ncclConfigExt_t (2.31.2): one vendor option of a per-call config, C field
// order; `value` is NCCL's union of int, const char* and void*.
struct ConfigExt {
  ConfigExt* next;
  int vendor_id;
  int option_id;
  union {
    int i;
    const char* s;
    void* raw;
  } value;
};

// ncclCollConfig_t, as 2.32.3 lays it out (ncclCollConfig_v23200).  2.31.x
// has the same fields up to launch_completion_event, which 2.32 appended: a
// config for 2.31 says so with its size (kCollConfigSize231).
struct CollConfig {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ConfigExt* ext;
  int min_ctas;
  int max_ctas;
  int nvls_ctas;
  int cga_cluster_size;
  const char* alg_selection;
  int force_alg_selection;
  int cta_policy;
  uint64_t user_profiler_tag;
  cudaEvent_t launch_completion_event;
};
constexpr size_t kCollConfigSize231 = offsetof(CollConfig, launch_completion_event);
constexpr unsigned int kApiMagic = 0xcafebeef;  // NCCL_API_MAGIC
constexpr int kConfigUndefInt = INT32_MIN;       // NCCL_CONFIG_UNDEF_INT

// The nccl*Config collectives (2.31.2): the plain call's signature and a
// trailing `const ncclCollConfig_t*`.
using AllReduceConfigFn = ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                       ncclComm_t, cudaStream_t, const CollConfig*);
using ReduceConfigFn = ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int,
                                    ncclComm_t, cudaStream_t, const CollConfig*);
using BroadcastConfigFn = ncclResult_t(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                                       cudaStream_t, const CollConfig*);
using AllGatherConfigFn = ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                       cudaStream_t, const CollConfig*);
using ReduceScatterConfigFn = ncclResult_t(const void*, void*, size_t, ncclDataType_t,
                                           ncclRedOp_t, ncclComm_t, cudaStream_t,
                                           const CollConfig*);
using AlltoAllConfigFn = ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                      cudaStream_t, const CollConfig*);
using GatherConfigFn = ncclResult_t(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                                    cudaStream_t, const CollConfig*);
using ScatterConfigFn = GatherConfigFn;

using CommMemStatsFn = ncclResult_t(ncclComm_t, int, uint64_t*);
using GetLsaDevicePointerFn = ncclResult_t(ncclWindow_t, size_t, int, void**);
using GetPeerDevicePointerFn = ncclResult_t(ncclWindow_t, size_t, int, void**);
using GetLsaMultimemDevicePointerFn = ncclResult_t(ncclWindow_t, size_t, void**);
// ncclMultimemHandle_t: one pointer on every release (checked in
// device/layout_checks.cu); NCCL fills it in for a team asked for with
// multimem, and ncclGetMultimemDevicePointer takes it by value.
struct MultimemHandle {
  void* mc_base_ptr = nullptr;
};
using GetMultimemDevicePointerFn = ncclResult_t(ncclWindow_t, size_t, MultimemHandle, void**);
using WinGetUserPtrFn = ncclResult_t(ncclComm_t, ncclWindow_t, void**);
using TeamLsaFn = Team(ncclComm_t);
using TeamWorldFn = Team(ncclComm_t);
using TeamRailFn = Team(ncclComm_t);
using TeamCftFn = Team(ncclComm_t, int);  // ncclCftTeamMode_t passed as int
using TeamCftMultimemFn = Team(ncclComm_t);
using TeamRankToWorldFn = int(ncclComm_t, Team, int);
// Device-API resource requirements (2.28.3): the handle and the
// ncclDevResourceRequirements node as untyped pointers (layouts.h).
using LsaBarrierCreateRequirementFn = ncclResult_t(Team, int, void*, void*);
using GinBarrierCreateRequirementFn = ncclResult_t(ncclComm_t, Team, int, void*, void*);
using LLA2ACalcSlotsFn = int(int, int);
using LLA2ACreateRequirementFn = ncclResult_t(int, int, void*, void*);
using TeamRankToLsaFn = int(ncclComm_t, Team, int);
using CommGetUniqueIdFn = ncclResult_t(ncclComm_t, ncclUniqueId*);
using CommGrowFn = ncclResult_t(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*,
                                ncclConfig_t*);
using ParamGetParameterFn = ncclResult_t(const char*, const char**, int*);
using ParamGetAllParameterKeysFn = ncclResult_t(const char***, int*);
using ParamDumpAllFn = void();
using PutSignalFn = ncclResult_t(const void*, size_t, ncclDataType_t, int, ncclWindow_t,
                                 size_t, int, int, unsigned int, ncclComm_t, cudaStream_t);
using SignalFn = ncclResult_t(int, int, int, unsigned int, ncclComm_t, cudaStream_t);
using WaitSignalFn = ncclResult_t(int, WaitSignalDesc*, ncclComm_t, cudaStream_t);
using CommSuspendFn = ncclResult_t(ncclComm_t, int);
using CommRevokeFn = ncclResult_t(ncclComm_t, int);
using CommResumeFn = ncclResult_t(ncclComm_t);
using QueryPropertiesFn = ncclResult_t(ncclComm_t, void*);
using DevCommCreateFn = ncclResult_t(ncclComm_t, const void*, void*);
using DevCommDestroyFn = ncclResult_t(ncclComm_t, const void*);

// Window flags: NCCL_WIN_COLL_SYMMETRIC (2.27.3), NCCL_WIN_STRICT_ORDERING (2.29.7).
constexpr int kWinCollSymmetric = 0x1;
constexpr int kWinStrictOrdering = 0x2;
constexpr int kWinKnownFlags = kWinCollSymmetric | kWinStrictOrdering;

// The releases that brought them (nccl/features.h holds every threshold).
constexpr int kMemStatsVersion = features::kGetMemStat.native_since;
constexpr int kSuspendVersion = features::kSuspendResume.native_since;
constexpr int kRevokeVersion = features::kRevoke.native_since;
constexpr int kGrowVersion = features::kGrow.native_since;
// ncclCommSuspend's flag (2.29.7): release the suspendable device memory.
constexpr int kSuspendMem = 0x1;
constexpr int kHostPointersVersion = features::kWindowPointers.native_since;
constexpr int kSignalsVersion = features::kRmaNetwork.native_since;
constexpr int kDeviceApiVersion = features::kDevComm.native_since;

// True when the loaded NCCL has the 2.29 host-side window pointer queries.
inline bool has_host_pointer_queries() {
  return nccl().provides("ncclGetLsaDevicePointer");
}

} // namespace nccl_core::newer
