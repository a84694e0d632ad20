// LoadedNccl: the seam (seam.h) over the NCCL library this process loaded.
// Calls NCCL 2.28 has are linked; newer ones are looked up once in the loaded
// library (api::find_symbol) and answer ncclInvalidUsage where it lacks them
// (callers `require` the symbol first, which names the release).
#include "nccl/seam.h"

#include <atomic>
#include <mutex>

#include "nccl/api.h"
#include "nccl/newer_than_2_28.h"

namespace nccl_core {

namespace {

template <class Fn>
Fn* resolved(const char* name) {
  return reinterpret_cast<Fn*>(api::find_symbol(name));
}

// A newer call: NCCL's function from the loaded library, or ncclInvalidUsage.
#define NCCL_CORE_NEWER(Fn, name, ...)                   \
  do {                                                   \
    static Fn* const fn = resolved<Fn>(name);            \
    return fn == nullptr ? ncclInvalidUsage : fn(__VA_ARGS__); \
  } while (0)

ncclResult_t spread(newer::Team team, int* nranks, int* rank, int* stride) {
  *nranks = team.nranks;
  *rank = team.rank;
  *stride = team.stride;
  return ncclSuccess;
}

class LoadedNccl final : public NcclApi {
 public:
  ncclResult_t GetVersion(int* version) override {
    static const int loaded = [] {
      int v = 0;
      return ncclGetVersion(&v) == ncclSuccess ? v : 0;
    }();
    *version = loaded;
    return ncclSuccess;
  }
  const char* GetErrorString(ncclResult_t r) override { return ncclGetErrorString(r); }
  const char* GetLastError(ncclComm_t comm) override { return ncclGetLastError(comm); }
  bool provides(const char* symbol) override { return api::find_symbol(symbol) != nullptr; }

  ncclResult_t GetUniqueId(ncclUniqueId* id) override { return ncclGetUniqueId(id); }
  ncclResult_t CommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                  ncclConfig_t* config) override {
    return ncclCommInitRankConfig(comm, nranks, id, rank, config);
  }
  ncclResult_t CommSplit(ncclComm_t comm, int color, int key, ncclComm_t* child,
                         ncclConfig_t* config) override {
    return ncclCommSplit(comm, color, key, child, config);
  }
  ncclResult_t CommShrink(ncclComm_t comm, int* exclude, int count, ncclComm_t* child,
                          ncclConfig_t* config, int flags) override {
    return ncclCommShrink(comm, exclude, count, child, config, flags);
  }
  ncclResult_t CommCount(ncclComm_t comm, int* count) override { return ncclCommCount(comm, count); }
  ncclResult_t CommUserRank(ncclComm_t comm, int* rank) override {
    return ncclCommUserRank(comm, rank);
  }
  ncclResult_t CommGetAsyncError(ncclComm_t comm, ncclResult_t* state) override {
    return ncclCommGetAsyncError(comm, state);
  }
  ncclResult_t CommFinalize(ncclComm_t comm) override { return ncclCommFinalize(comm); }
  ncclResult_t CommDestroy(ncclComm_t comm) override { return ncclCommDestroy(comm); }
  ncclResult_t CommAbort(ncclComm_t comm) override { return ncclCommAbort(comm); }
  ncclResult_t CommRevoke(ncclComm_t comm, int flags) override {
    NCCL_CORE_NEWER(newer::CommRevokeFn, "ncclCommRevoke", comm, flags);
  }
  ncclResult_t CommSuspend(ncclComm_t comm, int flags) override {
    NCCL_CORE_NEWER(newer::CommSuspendFn, "ncclCommSuspend", comm, flags);
  }
  ncclResult_t CommResume(ncclComm_t comm) override {
    NCCL_CORE_NEWER(newer::CommResumeFn, "ncclCommResume", comm);
  }
  ncclResult_t CommMemStats(ncclComm_t comm, int stat, uint64_t* value) override {
    NCCL_CORE_NEWER(newer::CommMemStatsFn, "ncclCommMemStats", comm, stat, value);
  }
  ncclResult_t CommQueryProperties(ncclComm_t comm, void* properties) override {
    NCCL_CORE_NEWER(newer::QueryPropertiesFn, "ncclCommQueryProperties", comm, properties);
  }
  ncclResult_t CommGetUniqueId(ncclComm_t comm, ncclUniqueId* id) override {
    NCCL_CORE_NEWER(newer::CommGetUniqueIdFn, "ncclCommGetUniqueId", comm, id);
  }
  ncclResult_t CommGrow(ncclComm_t comm, int nranks, const ncclUniqueId* id, int rank,
                        ncclComm_t* grown, ncclConfig_t* config) override {
    NCCL_CORE_NEWER(newer::CommGrowFn, "ncclCommGrow", comm, nranks, id, rank, grown, config);
  }

  ncclResult_t GroupStart() override { return ncclGroupStart(); }
  ncclResult_t GroupEnd() override { return ncclGroupEnd(); }
  ncclResult_t ParamGetParameter(const char* key, const char** value, int* length) override {
    NCCL_CORE_NEWER(newer::ParamGetParameterFn, "ncclParamGetParameter", key, value, length);
  }
  ncclResult_t ParamGetAllParameterKeys(const char*** keys, int* count) override {
    NCCL_CORE_NEWER(newer::ParamGetAllParameterKeysFn, "ncclParamGetAllParameterKeys", keys,
                    count);
  }
  ncclResult_t ParamDumpAll() override {
    static auto* const fn = resolved<newer::ParamDumpAllFn>("ncclParamDumpAll");
    if (fn == nullptr) {
      return ncclInvalidUsage;
    }
    fn();
    return ncclSuccess;
  }
  ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info) override { return ncclGroupSimulateEnd(info); }

  ncclResult_t RedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                    ncclScalarResidence_t residence, ncclComm_t comm) override {
    return ncclRedOpCreatePreMulSum(op, scalar, type, residence, comm);
  }
  ncclResult_t RedOpDestroy(ncclRedOp_t op, ncclComm_t comm) override {
    return ncclRedOpDestroy(op, comm);
  }

  ncclResult_t MemAlloc(void** ptr, size_t bytes) override { return ncclMemAlloc(ptr, bytes); }
  ncclResult_t MemFree(void* ptr) override { return ncclMemFree(ptr); }
  ncclResult_t CommRegister(ncclComm_t comm, void* buffer, size_t bytes, void** handle) override {
    return ncclCommRegister(comm, buffer, bytes, handle);
  }
  ncclResult_t CommDeregister(ncclComm_t comm, void* handle) override {
    return ncclCommDeregister(comm, handle);
  }
  ncclResult_t CommWindowRegister(ncclComm_t comm, void* buffer, size_t bytes, ncclWindow_t* window,
                                  int flags) override {
    return ncclCommWindowRegister(comm, buffer, bytes, window, flags);
  }
  ncclResult_t CommWindowDeregister(ncclComm_t comm, ncclWindow_t window) override {
    return ncclCommWindowDeregister(comm, window);
  }

  ncclResult_t AllReduce(const void* in, void* out, size_t count, ncclDataType_t type,
                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override {
    return ncclAllReduce(in, out, count, type, op, comm, stream);
  }
  ncclResult_t Reduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op,
                      int root, ncclComm_t comm, cudaStream_t stream) override {
    return ncclReduce(in, out, count, type, op, root, comm, stream);
  }
  ncclResult_t Broadcast(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                         ncclComm_t comm, cudaStream_t stream) override {
    return ncclBroadcast(in, out, count, type, root, comm, stream);
  }
  ncclResult_t AllGather(const void* in, void* out, size_t count, ncclDataType_t type,
                         ncclComm_t comm, cudaStream_t stream) override {
    return ncclAllGather(in, out, count, type, comm, stream);
  }
  ncclResult_t ReduceScatter(const void* in, void* out, size_t count, ncclDataType_t type,
                             ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override {
    return ncclReduceScatter(in, out, count, type, op, comm, stream);
  }
  ncclResult_t AlltoAll(const void* in, void* out, size_t count, ncclDataType_t type,
                        ncclComm_t comm, cudaStream_t stream) override {
    return ncclAlltoAll(in, out, count, type, comm, stream);
  }
  ncclResult_t Gather(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                      ncclComm_t comm, cudaStream_t stream) override {
    return ncclGather(in, out, count, type, root, comm, stream);
  }
  ncclResult_t Scatter(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                       ncclComm_t comm, cudaStream_t stream) override {
    return ncclScatter(in, out, count, type, root, comm, stream);
  }
  ncclResult_t AllReduceConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                               const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::AllReduceConfigFn, "ncclAllReduceConfig", in, out, count, type, op,
                    comm, stream, config);
  }
  ncclResult_t ReduceConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                            ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                            const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::ReduceConfigFn, "ncclReduceConfig", in, out, count, type, op, root,
                    comm, stream, config);
  }
  ncclResult_t BroadcastConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                               int root, ncclComm_t comm, cudaStream_t stream,
                               const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::BroadcastConfigFn, "ncclBroadcastConfig", in, out, count, type, root,
                    comm, stream, config);
  }
  ncclResult_t AllGatherConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                               ncclComm_t comm, cudaStream_t stream,
                               const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::AllGatherConfigFn, "ncclAllGatherConfig", in, out, count, type, comm,
                    stream, config);
  }
  ncclResult_t ReduceScatterConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                   const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::ReduceScatterConfigFn, "ncclReduceScatterConfig", in, out, count, type,
                    op, comm, stream, config);
  }
  ncclResult_t AlltoAllConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                              ncclComm_t comm, cudaStream_t stream,
                              const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::AlltoAllConfigFn, "ncclAlltoAllConfig", in, out, count, type, comm,
                    stream, config);
  }
  ncclResult_t GatherConfig(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                            ncclComm_t comm, cudaStream_t stream,
                            const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::GatherConfigFn, "ncclGatherConfig", in, out, count, type, root, comm,
                    stream, config);
  }
  ncclResult_t ScatterConfig(const void* in, void* out, size_t count, ncclDataType_t type,
                             int root, ncclComm_t comm, cudaStream_t stream,
                             const newer::CollConfig* config) override {
    NCCL_CORE_NEWER(newer::ScatterConfigFn, "ncclScatterConfig", in, out, count, type, root, comm,
                    stream, config);
  }
  ncclResult_t Send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override {
    return ncclSend(data, count, type, peer, comm, stream);
  }
  ncclResult_t Recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override {
    return ncclRecv(data, count, type, peer, comm, stream);
  }

  ncclResult_t PutSignal(const void* data, size_t count, ncclDataType_t type, int peer,
                         ncclWindow_t window, size_t offset, int signal_index, int context,
                         unsigned int flags, ncclComm_t comm, cudaStream_t stream) override {
    NCCL_CORE_NEWER(newer::PutSignalFn, "ncclPutSignal", data, count, type, peer, window, offset,
                    signal_index, context, flags, comm, stream);
  }
  ncclResult_t Signal(int peer, int signal_index, int context, unsigned int flags, ncclComm_t comm,
                      cudaStream_t stream) override {
    NCCL_CORE_NEWER(newer::SignalFn, "ncclSignal", peer, signal_index, context, flags, comm,
                    stream);
  }
  ncclResult_t WaitSignal(int ndescs, void* descs, ncclComm_t comm, cudaStream_t stream) override {
    NCCL_CORE_NEWER(newer::WaitSignalFn, "ncclWaitSignal", ndescs,
                    static_cast<newer::WaitSignalDesc*>(descs), comm, stream);
  }

  ncclResult_t TeamWorld(ncclComm_t comm, int* nranks, int* rank, int* stride) override {
    static auto* const fn = resolved<newer::TeamWorldFn>("ncclTeamWorld");
    return fn == nullptr ? ncclInvalidUsage : spread(fn(comm), nranks, rank, stride);
  }
  ncclResult_t TeamLsa(ncclComm_t comm, int* nranks, int* rank, int* stride) override {
    static auto* const fn = resolved<newer::TeamLsaFn>("ncclTeamLsa");
    return fn == nullptr ? ncclInvalidUsage : spread(fn(comm), nranks, rank, stride);
  }
  ncclResult_t TeamRail(ncclComm_t comm, int* nranks, int* rank, int* stride) override {
    static auto* const fn = resolved<newer::TeamRailFn>("ncclTeamRail");
    return fn == nullptr ? ncclInvalidUsage : spread(fn(comm), nranks, rank, stride);
  }
  ncclResult_t TeamCft(ncclComm_t comm, int mode, int* nranks, int* rank, int* stride) override {
    static auto* const fn = resolved<newer::TeamCftFn>("ncclTeamCft");
    return fn == nullptr ? ncclInvalidUsage : spread(fn(comm, mode), nranks, rank, stride);
  }
  ncclResult_t TeamCftMultimem(ncclComm_t comm, int* nranks, int* rank, int* stride) override {
    static auto* const fn = resolved<newer::TeamCftMultimemFn>("ncclTeamCftMultimem");
    return fn == nullptr ? ncclInvalidUsage : spread(fn(comm), nranks, rank, stride);
  }
  ncclResult_t TeamRankToWorld(ncclComm_t comm, const int team[3], int team_rank,
                               int* out) override {
    static auto* const fn = resolved<newer::TeamRankToWorldFn>("ncclTeamRankToWorld");
    if (fn == nullptr) {
      return ncclInvalidUsage;
    }
    *out = fn(comm, newer::Team{team[0], team[1], team[2]}, team_rank);
    return ncclSuccess;
  }
  ncclResult_t TeamRankToLsa(ncclComm_t comm, const int team[3], int team_rank,
                             int* out) override {
    static auto* const fn = resolved<newer::TeamRankToLsaFn>("ncclTeamRankToLsa");
    if (fn == nullptr) {
      return ncclInvalidUsage;
    }
    *out = fn(comm, newer::Team{team[0], team[1], team[2]}, team_rank);
    return ncclSuccess;
  }
  ncclResult_t GetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsa_rank,
                                   void** out) override {
    NCCL_CORE_NEWER(newer::GetLsaDevicePointerFn, "ncclGetLsaDevicePointer", window, offset,
                    lsa_rank, out);
  }
  ncclResult_t GetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                    void** out) override {
    NCCL_CORE_NEWER(newer::GetPeerDevicePointerFn, "ncclGetPeerDevicePointer", window, offset,
                    peer, out);
  }
  ncclResult_t GetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                           void** out) override {
    NCCL_CORE_NEWER(newer::GetLsaMultimemDevicePointerFn, "ncclGetLsaMultimemDevicePointer",
                    window, offset, out);
  }
  ncclResult_t GetMultimemDevicePointer(ncclWindow_t window, size_t offset, void* mc_base_ptr,
                                        void** out) override {
    NCCL_CORE_NEWER(newer::GetMultimemDevicePointerFn, "ncclGetMultimemDevicePointer", window,
                    offset, newer::MultimemHandle{mc_base_ptr}, out);
  }
  ncclResult_t WinGetUserPtr(ncclComm_t comm, ncclWindow_t window, void** out) override {
    NCCL_CORE_NEWER(newer::WinGetUserPtrFn, "ncclWinGetUserPtr", comm, window, out);
  }
  ncclResult_t DevCommCreate(ncclComm_t comm, const void* requirements, void* dev_comm) override {
    NCCL_CORE_NEWER(newer::DevCommCreateFn, "ncclDevCommCreate", comm, requirements, dev_comm);
  }
  ncclResult_t DevCommDestroy(ncclComm_t comm, const void* dev_comm) override {
    NCCL_CORE_NEWER(newer::DevCommDestroyFn, "ncclDevCommDestroy", comm, dev_comm);
  }
  ncclResult_t LsaBarrierCreateRequirement(const int team[3], int n_barriers, void* handle,
                                           void* req) override {
    NCCL_CORE_NEWER(newer::LsaBarrierCreateRequirementFn, "ncclLsaBarrierCreateRequirement",
                    newer::Team{team[0], team[1], team[2]}, n_barriers, handle, req);
  }
  ncclResult_t GinBarrierCreateRequirement(ncclComm_t comm, const int team[3], int n_barriers,
                                           void* handle, void* req) override {
    NCCL_CORE_NEWER(newer::GinBarrierCreateRequirementFn, "ncclGinBarrierCreateRequirement",
                    comm, newer::Team{team[0], team[1], team[2]}, n_barriers, handle, req);
  }
  ncclResult_t LLA2ACalcSlots(int max_elements, int max_element_size, int* out) override {
    static auto* const fn = resolved<newer::LLA2ACalcSlotsFn>("ncclLLA2ACalcSlots");
    if (fn == nullptr) {
      return ncclInvalidUsage;
    }
    *out = fn(max_elements, max_element_size);
    return ncclSuccess;
  }
  ncclResult_t LLA2ACreateRequirement(int n_blocks, int n_slots, void* handle,
                                      void* req) override {
    NCCL_CORE_NEWER(newer::LLA2ACreateRequirementFn, "ncclLLA2ACreateRequirement", n_blocks,
                    n_slots, handle, req);
  }
};

#undef NCCL_CORE_NEWER

LoadedNccl& loaded() {
  static LoadedNccl* api = new LoadedNccl();  // never destroyed: used until exit
  return *api;
}

std::mutex installed_mutex;
std::shared_ptr<NcclApi> installed;           // owned here while in use
std::atomic<NcclApi*> current{nullptr};      // nullptr: the loaded NCCL

} // namespace

NcclApi& nccl() {
  NcclApi* api = current.load(std::memory_order_acquire);
  return api != nullptr ? *api : loaded();
}

std::shared_ptr<NcclApi> install_nccl(std::shared_ptr<NcclApi> api) {
  std::lock_guard<std::mutex> lock(installed_mutex);
  std::shared_ptr<NcclApi> previous = std::move(installed);
  installed = std::move(api);
  current.store(installed.get(), std::memory_order_release);
  return previous;
}

void NcclApi::require(const char* symbol, const char* feature, int needed_version) {
  if (!provides(symbol)) {
    throw NcclUnsupported(std::string(feature) + " needs NCCL " +
                          api::version_string(needed_version) + " or newer (" + symbol +
                          "); the loaded NCCL is " + api::version_string(api::loaded_version()));
  }
}

} // namespace nccl_core
