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

using CommMemStatsFn = ncclResult_t(ncclComm_t, int, uint64_t*);
using GetLsaDevicePointerFn = ncclResult_t(ncclWindow_t, size_t, int, void**);
using GetPeerDevicePointerFn = ncclResult_t(ncclWindow_t, size_t, int, void**);
using GetLsaMultimemDevicePointerFn = ncclResult_t(ncclWindow_t, size_t, void**);
using WinGetUserPtrFn = ncclResult_t(ncclComm_t, ncclWindow_t, void**);
using TeamLsaFn = Team(ncclComm_t);
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
