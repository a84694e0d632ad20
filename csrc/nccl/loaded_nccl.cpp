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

  ncclResult_t GroupStart() override { return ncclGroupStart(); }
  ncclResult_t GroupEnd() override { return ncclGroupEnd(); }
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

  ncclResult_t TeamLsa(ncclComm_t comm, int* nranks, int* rank, int* stride) override {
    static newer::TeamLsaFn* const fn = resolved<newer::TeamLsaFn>("ncclTeamLsa");
    if (fn == nullptr) {
      return ncclInvalidUsage;
    }
    newer::Team team = fn(comm);
    *nranks = team.nranks;
    *rank = team.rank;
    *stride = team.stride;
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
  ncclResult_t WinGetUserPtr(ncclComm_t comm, ncclWindow_t window, void** out) override {
    NCCL_CORE_NEWER(newer::WinGetUserPtrFn, "ncclWinGetUserPtr", comm, window, out);
  }
  ncclResult_t DevCommCreate(ncclComm_t comm, const void* requirements, void* dev_comm) override {
    NCCL_CORE_NEWER(newer::DevCommCreateFn, "ncclDevCommCreate", comm, requirements, dev_comm);
  }
  ncclResult_t DevCommDestroy(ncclComm_t comm, const void* dev_comm) override {
    NCCL_CORE_NEWER(newer::DevCommDestroyFn, "ncclDevCommDestroy", comm, dev_comm);
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
