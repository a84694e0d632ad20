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
    "window_multimem_pointer", "RegisteredWindowHandle.get_lsa_multimem_device_pointer",
    "ncclGetLsaMultimemDevicePointer", v(2, 29, 2), v(2, 29, 2), 0, 0,
    "ncclGetLsaMultimemDevicePointer",
    "returns None where unsupported, and wherever NVLink multicast is off"};
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
    "revoke", "dist._reconfigure (init_process_group(enable_reconfigure=True))",
    "ncclCommRevoke", v(2, 28, 7), v(2, 28, 7), 0, 0, "ncclCommRevoke",
    "reconfigure revokes the group's communicator, then builds the next one"};
inline constexpr Feature kSuspendResume{
    "suspend_resume", "Communicator.suspend, resume; the backend's suspend, resume",
    "ncclCommSuspend, ncclCommResume", v(2, 29, 7), v(2, 29, 7), 0, 0, "ncclCommSuspend",
    "releases the communicator's suspendable memory (get_mem_stat GPU_MEM_SUSPEND)"};
inline constexpr Feature kGrow{
    "grow", "(not exposed)", "ncclCommGrow, ncclCommGetUniqueId", v(2, 29, 2), 0, 0, 0,
    "ncclCommGrow", "nccl_core does not expose ncclCommGrow"};

// --- device API --------------------------------------------------------------
inline constexpr Feature kDevComm{
    "dev_comm", "Communicator.create_dev_comm, DevCommResource", "ncclDevCommCreate",
    v(2, 28, 3), v(2, 28, 3), 0, 0, "ncclDevCommCreate",
    "requirements written in the loaded release's layout"};
inline constexpr Feature kDevCommGinConnection{
    "dev_comm_gin_connection",
    "NCCLDevCommRequirements.gin_connection_type, gin_exclusive_contexts, gin_queue_depth",
    "ncclDevCommRequirements.ginConnectionType", v(2, 29, 7), v(2, 29, 7), 0, 0, nullptr,
    "non-default values are refused on older releases"};
inline constexpr Feature kGinType{
    "gin_type", "Communicator.gin_type", "ncclCommQueryProperties", v(2, 29, 2), v(2, 29, 2), 0,
    0, "ncclCommQueryProperties", ""};
inline constexpr Feature kRailedGinType{
    "railed_gin_type", "Communicator.railed_gin_type", "ncclCommProperties.railedGinType",
    v(2, 29, 7), v(2, 29, 7), 0, 0, nullptr, ""};
// Our kernels read ncclDevComm as the headers we were built with lay it out.
inline constexpr Feature kDeviceCollectives{
    "device_collectives", "nccl_core_backend.device.all_reduce, all_gather", "NCCL device API",
    v(2, 28, 3), 0, kBuiltSeries < v(2, 28, 3) ? v(2, 28, 3) : kBuiltSeries, kBuiltSeriesEnd,
    nullptr, "nccl_core's kernels; the loaded release series must be the one built against"};

// --- collectives ---------------------------------------------------------------
inline constexpr Feature kFastPath{
    "fast_path", "dist collectives up to fast_path_max_bytes", "NCCL windows + ncclTeamLsa",
    v(2, 28, 3), 0, v(2, 28, 3), 0, nullptr,
    "small collectives as one nccl_core kernel over a symmetric window"};
inline constexpr Feature kPushAllReduce{
    "push_all_reduce", "dist.all_reduce of push_min_bytes..push_max_bytes, any memory",
    "NCCL windows + ncclTeamLsa", v(2, 28, 3), 0, v(2, 28, 3), 0, nullptr,
    "nccl_core's NVLink store kernel"};

inline constexpr const Feature* kAll[] = {
    &kMemAlloc,           &kRegisterBuffer,        &kWindowRegistration,
    &kWindowCollSymmetric, &kWindowStrictOrdering, &kWindowPointers,
    &kWindowMultimemPointer, &kWindowUserPtr,      &kPreMulSum,
    &kRmaLoadStore,       &kRmaNativeRoute,        &kRmaNetwork,
    &kSplit,              &kShrink,                &kGetMemStat,
    &kRevoke,             &kSuspendResume,         &kGrow,
    &kDevComm,            &kDevCommGinConnection,  &kGinType,
    &kRailedGinType,      &kDeviceCollectives,     &kFastPath,
    &kPushAllReduce,
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
