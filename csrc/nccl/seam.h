// The seam: the one interface through which nccl_core calls NCCL.
//
// Every NCCL call outside csrc/nccl/ and csrc/nvlink/ is a method of NcclApi,
// reached through nccl(): `NCCL_CORE_CHECK(comm, nccl().AllReduce(...))`.  The
// methods carry NCCL's names without the prefix and return NCCL's result
// unchanged; api::check turns a failure into an exception that names the NCCL
// call (call_name maps `nccl().AllReduce` to `ncclAllReduce`) and carries
// NCCL's last-error text.  Calls newer than NCCL 2.28 are resolved at run time
// in the implementation (loaded_nccl.cpp); a caller asks `require` first,
// which refuses with NcclUnsupported naming the feature and the release.
//
// The product runs on LoadedNccl, the library this process loaded.  The lab
// (csrc/testing/fake_nccl.h) installs a fake in its place, so that CPU tests
// drive the control logic above it (creation, split, shrink, abort, errors,
// feature gating) on hosts with no GPU.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace nccl_core {

namespace newer {
struct CollConfig;
}

class NcclApi {
 public:
  virtual ~NcclApi() = default;

  // Library and errors.
  virtual ncclResult_t GetVersion(int* version) = 0;
  virtual const char* GetErrorString(ncclResult_t result) = 0;
  virtual const char* GetLastError(ncclComm_t comm) = 0;
  // Whether the library exports `symbol` (the run-time gate of newer calls).
  virtual bool provides(const char* symbol) = 0;

  // Communicators.
  virtual ncclResult_t GetUniqueId(ncclUniqueId* id) = 0;
  virtual ncclResult_t CommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                          ncclConfig_t* config) = 0;
  virtual ncclResult_t CommSplit(ncclComm_t comm, int color, int key, ncclComm_t* child,
                                 ncclConfig_t* config) = 0;
  virtual ncclResult_t CommShrink(ncclComm_t comm, int* exclude, int count, ncclComm_t* child,
                                  ncclConfig_t* config, int flags) = 0;
  virtual ncclResult_t CommCount(ncclComm_t comm, int* count) = 0;
  virtual ncclResult_t CommUserRank(ncclComm_t comm, int* rank) = 0;
  virtual ncclResult_t CommGetAsyncError(ncclComm_t comm, ncclResult_t* state) = 0;
  virtual ncclResult_t CommFinalize(ncclComm_t comm) = 0;
  virtual ncclResult_t CommDestroy(ncclComm_t comm) = 0;
  virtual ncclResult_t CommAbort(ncclComm_t comm) = 0;
  virtual ncclResult_t CommRevoke(ncclComm_t comm, int flags) = 0;       // 2.28.7
  virtual ncclResult_t CommSuspend(ncclComm_t comm, int flags) = 0;      // 2.29.7
  virtual ncclResult_t CommResume(ncclComm_t comm) = 0;                  // 2.29.7
  virtual ncclResult_t CommMemStats(ncclComm_t comm, int stat, uint64_t* value) = 0;  // 2.29.7
  virtual ncclResult_t CommQueryProperties(ncclComm_t comm, void* properties) = 0;    // 2.29.2
  virtual ncclResult_t CommGetUniqueId(ncclComm_t comm, ncclUniqueId* id) = 0;         // 2.29.2
  virtual ncclResult_t CommGrow(ncclComm_t comm, int nranks, const ncclUniqueId* id, int rank,
                                ncclComm_t* grown, ncclConfig_t* config) = 0;          // 2.29.2

  // Groups.
  virtual ncclResult_t GroupStart() = 0;
  virtual ncclResult_t GroupEnd() = 0;
  virtual ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info) = 0;

  // NCCL's parameters (2.30.4).  The strings belong to NCCL and stay valid
  // until this thread's next call of the same function.
  virtual ncclResult_t ParamGetParameter(const char* key, const char** value, int* length) = 0;
  virtual ncclResult_t ParamGetAllParameterKeys(const char*** keys, int* count) = 0;
  virtual ncclResult_t ParamDumpAll() = 0;

  // Reduction operators.
  virtual ncclResult_t RedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                            ncclScalarResidence_t residence, ncclComm_t comm) = 0;
  virtual ncclResult_t RedOpDestroy(ncclRedOp_t op, ncclComm_t comm) = 0;

  // Memory: NCCL's allocator, buffer and window registration.
  virtual ncclResult_t MemAlloc(void** ptr, size_t bytes) = 0;
  virtual ncclResult_t MemFree(void* ptr) = 0;
  virtual ncclResult_t CommRegister(ncclComm_t comm, void* buffer, size_t bytes, void** handle) = 0;
  virtual ncclResult_t CommDeregister(ncclComm_t comm, void* handle) = 0;
  virtual ncclResult_t CommWindowRegister(ncclComm_t comm, void* buffer, size_t bytes,
                                          ncclWindow_t* window, int flags) = 0;
  virtual ncclResult_t CommWindowDeregister(ncclComm_t comm, ncclWindow_t window) = 0;

  // Collectives and point-to-point.
  virtual ncclResult_t AllReduce(const void* in, void* out, size_t count, ncclDataType_t type,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t Reduce(const void* in, void* out, size_t count, ncclDataType_t type,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t Broadcast(const void* in, void* out, size_t count, ncclDataType_t type,
                                 int root, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t AllGather(const void* in, void* out, size_t count, ncclDataType_t type,
                                 ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t ReduceScatter(const void* in, void* out, size_t count, ncclDataType_t type,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t AlltoAll(const void* in, void* out, size_t count, ncclDataType_t type,
                                ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t Gather(const void* in, void* out, size_t count, ncclDataType_t type,
                              int root, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t Scatter(const void* in, void* out, size_t count, ncclDataType_t type,
                               int root, ncclComm_t comm, cudaStream_t stream) = 0;
  // The same with a per-call ncclCollConfig_t (2.31.2; `config` is laid out
  // for the loaded release: collectives/coll_config.h).
  virtual ncclResult_t AllReduceConfig(const void* in, void* out, size_t count,
                                       ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t stream, const newer::CollConfig* config) = 0;
  virtual ncclResult_t ReduceConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                                    const newer::CollConfig* config) = 0;
  virtual ncclResult_t BroadcastConfig(const void* in, void* out, size_t count,
                                       ncclDataType_t type, int root, ncclComm_t comm,
                                       cudaStream_t stream, const newer::CollConfig* config) = 0;
  virtual ncclResult_t AllGatherConfig(const void* in, void* out, size_t count,
                                       ncclDataType_t type, ncclComm_t comm, cudaStream_t stream,
                                       const newer::CollConfig* config) = 0;
  virtual ncclResult_t ReduceScatterConfig(const void* in, void* out, size_t count,
                                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream,
                                           const newer::CollConfig* config) = 0;
  virtual ncclResult_t AlltoAllConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                                      ncclComm_t comm, cudaStream_t stream,
                                      const newer::CollConfig* config) = 0;
  virtual ncclResult_t GatherConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                                    int root, ncclComm_t comm, cudaStream_t stream,
                                    const newer::CollConfig* config) = 0;
  virtual ncclResult_t ScatterConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                                     int root, ncclComm_t comm, cudaStream_t stream,
                                     const newer::CollConfig* config) = 0;
  virtual ncclResult_t Send(const void* data, size_t count, ncclDataType_t type, int peer,
                            ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t Recv(void* data, size_t count, ncclDataType_t type, int peer,
                            ncclComm_t comm, cudaStream_t stream) = 0;

  // One-sided calls on windows (2.29.2).  `descs` is ncclWaitSignalDesc_t[].
  virtual ncclResult_t PutSignal(const void* data, size_t count, ncclDataType_t type, int peer,
                                 ncclWindow_t window, size_t offset, int signal_index, int context,
                                 unsigned int flags, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t Signal(int peer, int signal_index, int context, unsigned int flags,
                              ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t WaitSignal(int ndescs, void* descs, ncclComm_t comm,
                                  cudaStream_t stream) = 0;

  // Host-side queries of the device API: teams (world, LSA, rail 2.28.3;
  // CFT 2.31.2), each returned as {nranks, rank, stride}; a team's rank in
  // the world or the LSA team (2.28.3); window pointers (2.29.2); device
  // communicators.
  virtual ncclResult_t TeamWorld(ncclComm_t comm, int* nranks, int* rank, int* stride) = 0;
  virtual ncclResult_t TeamLsa(ncclComm_t comm, int* nranks, int* rank, int* stride) = 0;
  virtual ncclResult_t TeamRail(ncclComm_t comm, int* nranks, int* rank, int* stride) = 0;
  virtual ncclResult_t TeamCft(ncclComm_t comm, int mode, int* nranks, int* rank,
                               int* stride) = 0;
  virtual ncclResult_t TeamCftMultimem(ncclComm_t comm, int* nranks, int* rank,
                                       int* stride) = 0;
  // `team` is {nranks, rank, stride}.
  virtual ncclResult_t TeamRankToWorld(ncclComm_t comm, const int team[3], int team_rank,
                                       int* out) = 0;
  virtual ncclResult_t TeamRankToLsa(ncclComm_t comm, const int team[3], int team_rank,
                                     int* out) = 0;
  virtual ncclResult_t GetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsa_rank,
                                           void** out) = 0;
  virtual ncclResult_t GetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                            void** out) = 0;
  virtual ncclResult_t GetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                                   void** out) = 0;
  // `mc_base_ptr`: the ncclMultimemHandle a device communicator gave a team.
  virtual ncclResult_t GetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                                void* mc_base_ptr, void** out) = 0;
  virtual ncclResult_t WinGetUserPtr(ncclComm_t comm, ncclWindow_t window, void** out) = 0;
  virtual ncclResult_t DevCommCreate(ncclComm_t comm, const void* requirements,
                                     void* dev_comm) = 0;
  // NCCL fills `req` (an ncclDevResourceRequirements node) and points it at
  // `handle`, which ncclDevCommCreate completes (2.28.3).
  virtual ncclResult_t LsaBarrierCreateRequirement(const int team[3], int n_barriers,
                                                   void* handle, void* req) = 0;
  virtual ncclResult_t GinBarrierCreateRequirement(ncclComm_t comm, const int team[3],
                                                   int n_barriers, void* handle, void* req) = 0;
  virtual ncclResult_t LLA2ACalcSlots(int max_elements, int max_element_size, int* out) = 0;
  virtual ncclResult_t LLA2ACreateRequirement(int n_blocks, int n_slots, void* handle,
                                              void* req) = 0;
  virtual ncclResult_t DevCommDestroy(ncclComm_t comm, const void* dev_comm) = 0;

  // Refuses with NcclUnsupported, naming `feature`, `symbol` and the release
  // that brought it, where the library does not provide `symbol`.
  void require(const char* symbol, const char* feature, int needed_version);
};

// The implementation in use: the loaded NCCL unless the lab installed another.
NcclApi& nccl();
// Puts `api` in place of the one in use (nullptr: the loaded NCCL again) and
// returns the one it replaced (nullptr for the loaded NCCL).  For the lab's
// fake: call it while no communicator of the other implementation is alive.
std::shared_ptr<NcclApi> install_nccl(std::shared_ptr<NcclApi> api);

} // namespace nccl_core
