// FakeNccl: an NCCL behind the seam (nccl/seam.h) that runs on no GPU, for the CPU
// tests of the control logic above it.  It hands out communicator handles of its own,
// answers every call from the test's script (the version, missing symbols, a result
// per call, calls that stay in progress, a slow init) and records each call.  It
// covers creation, split, shrink and grow mapping, teardown order and idempotence,
// error text, feature gating, the queries and device resources
// (fake_nccl_queries.cpp) and the per-call configs (fake_nccl_configs.cpp); not what
// touches a CUDA stream, memory or kernel (those run on GPUs).
#pragma once

#include "nccl/seam.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace nccl_core::testing {

class FakeNccl final : public NcclApi {
 public:
  FakeNccl();
  ~FakeNccl() override;

  // The script.
  void set_version(int code);
  void hide(const std::string& symbol);
  void fail(const std::string& call, ncclResult_t result);  // "CommSplit", "AllReduce", ...
  void stay_in_progress(int polls);  // CommGetAsyncError answers ncclInProgress this often
  void set_last_error(const std::string& text);
  void set_init_delay_ms(int ms);
  void set_param(const std::string& key, const std::string& value);  // NCCL's parameters
  std::vector<std::string> calls() const;
  void clear_calls();
  int live_comms() const;  // handles neither aborted nor destroyed

  ncclResult_t GetVersion(int* version) override;
  const char* GetErrorString(ncclResult_t result) override;
  const char* GetLastError(ncclComm_t comm) override;
  bool provides(const char* symbol) override;

  ncclResult_t GetUniqueId(ncclUniqueId* id) override;
  ncclResult_t CommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                  ncclConfig_t* config) override;
  ncclResult_t CommSplit(ncclComm_t comm, int color, int key, ncclComm_t* child,
                         ncclConfig_t* config) override;
  ncclResult_t CommShrink(ncclComm_t comm, int* exclude, int count, ncclComm_t* child,
                          ncclConfig_t* config, int flags) override;
  ncclResult_t CommCount(ncclComm_t comm, int* count) override;
  ncclResult_t CommUserRank(ncclComm_t comm, int* rank) override;
  ncclResult_t CommGetAsyncError(ncclComm_t comm, ncclResult_t* state) override;
  ncclResult_t CommFinalize(ncclComm_t comm) override;
  ncclResult_t CommDestroy(ncclComm_t comm) override;
  ncclResult_t CommAbort(ncclComm_t comm) override;
  ncclResult_t CommRevoke(ncclComm_t comm, int flags) override;
  ncclResult_t CommSuspend(ncclComm_t comm, int flags) override;
  ncclResult_t CommResume(ncclComm_t comm) override;
  ncclResult_t CommMemStats(ncclComm_t comm, int stat, uint64_t* value) override;
  ncclResult_t CommQueryProperties(ncclComm_t comm, void* properties) override;
  ncclResult_t CommGetUniqueId(ncclComm_t comm, ncclUniqueId* id) override;
  ncclResult_t CommGrow(ncclComm_t comm, int nranks, const ncclUniqueId* id, int rank,
                        ncclComm_t* grown, ncclConfig_t* config) override;

  ncclResult_t GroupStart() override;
  ncclResult_t GroupEnd() override;
  ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info) override;

  ncclResult_t ParamGetParameter(const char* key, const char** value, int* length) override;
  ncclResult_t ParamGetAllParameterKeys(const char*** keys, int* count) override;
  ncclResult_t ParamDumpAll() override;

  ncclResult_t RedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                    ncclScalarResidence_t residence, ncclComm_t comm) override;
  ncclResult_t RedOpDestroy(ncclRedOp_t op, ncclComm_t comm) override;

  ncclResult_t MemAlloc(void** ptr, size_t bytes) override;
  ncclResult_t MemFree(void* ptr) override;
  ncclResult_t CommRegister(ncclComm_t comm, void* buffer, size_t bytes, void** handle) override;
  ncclResult_t CommDeregister(ncclComm_t comm, void* handle) override;
  ncclResult_t CommWindowRegister(ncclComm_t comm, void* buffer, size_t bytes, ncclWindow_t* window,
                                  int flags) override;
  ncclResult_t CommWindowDeregister(ncclComm_t comm, ncclWindow_t window) override;

  ncclResult_t AllReduce(const void* in, void* out, size_t count, ncclDataType_t type,
                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t Reduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op,
                      int root, ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t Broadcast(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                         ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t AllGather(const void* in, void* out, size_t count, ncclDataType_t type,
                         ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t ReduceScatter(const void* in, void* out, size_t count, ncclDataType_t type,
                             ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t AlltoAll(const void* in, void* out, size_t count, ncclDataType_t type,
                        ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t Gather(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                      ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t Scatter(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                       ncclComm_t comm, cudaStream_t stream) override;
  // The nccl*Config calls record the config as the release the fake plays
  // reads it (fake_nccl_configs.cpp).
  using Cfg = const newer::CollConfig*;
  ncclResult_t AllReduceConfig(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                               cudaStream_t, Cfg) override;
  ncclResult_t ReduceConfig(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                            cudaStream_t, Cfg) override;
  ncclResult_t BroadcastConfig(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                               cudaStream_t, Cfg) override;
  ncclResult_t AllGatherConfig(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t,
                               Cfg) override;
  ncclResult_t ReduceScatterConfig(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                   ncclComm_t, cudaStream_t, Cfg) override;
  ncclResult_t AlltoAllConfig(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t,
                              Cfg) override;
  ncclResult_t GatherConfig(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t, Cfg) override;
  ncclResult_t ScatterConfig(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                             cudaStream_t, Cfg) override;
  ncclResult_t Send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override;
  ncclResult_t Recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override;

  ncclResult_t PutSignal(const void* data, size_t count, ncclDataType_t type, int peer,
                         ncclWindow_t window, size_t offset, int signal_index, int context,
                         unsigned int flags, ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t Signal(int peer, int signal_index, int context, unsigned int flags, ncclComm_t comm,
                      cudaStream_t stream) override;
  ncclResult_t WaitSignal(int ndescs, void* descs, ncclComm_t comm, cudaStream_t stream) override;

  ncclResult_t TeamWorld(ncclComm_t comm, int* nranks, int* rank, int* stride) override;
  ncclResult_t TeamLsa(ncclComm_t comm, int* nranks, int* rank, int* stride) override;
  ncclResult_t TeamRail(ncclComm_t comm, int* nranks, int* rank, int* stride) override;
  ncclResult_t TeamCft(ncclComm_t comm, int mode, int* nranks, int* rank, int* stride) override;
  ncclResult_t TeamCftMultimem(ncclComm_t comm, int* nranks, int* rank, int* stride) override;
  ncclResult_t TeamRankToWorld(ncclComm_t comm, const int team[3], int team_rank,
                               int* out) override;
  ncclResult_t TeamRankToLsa(ncclComm_t comm, const int team[3], int team_rank,
                             int* out) override;
  ncclResult_t GetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsa_rank,
                                   void** out) override;
  ncclResult_t GetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                    void** out) override;
  ncclResult_t GetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                           void** out) override;
  ncclResult_t GetMultimemDevicePointer(ncclWindow_t, size_t, void*, void**) override;
  ncclResult_t WinGetUserPtr(ncclComm_t comm, ncclWindow_t window, void** out) override;
  ncclResult_t DevCommCreate(ncclComm_t comm, const void* requirements, void* dev_comm) override;
  ncclResult_t DevCommDestroy(ncclComm_t comm, const void* dev_comm) override;
  ncclResult_t LsaBarrierCreateRequirement(const int team[3], int n_barriers, void* handle,
                                           void* req) override;
  ncclResult_t GinBarrierCreateRequirement(ncclComm_t comm, const int team[3], int n_barriers,
                                           void* handle, void* req) override;
  ncclResult_t LLA2ACalcSlots(int max_elements, int max_element_size, int* out) override;
  ncclResult_t LLA2ACreateRequirement(int n_blocks, int n_slots, void* handle, void* req) override;

 private:
  struct Comm {
    int nranks = 0, rank = 0;
    bool ended = false;  // aborted or destroyed
  };
  // Records `call(args)` and answers the scripted result for `call`.
  ncclResult_t answer(const std::string& call, const std::string& args = "");
  ncclComm_t make_comm(int nranks, int rank);
  // "size=..., minCTAs=..., ..." of a config as the played release reads it.
  std::string describe(const newer::CollConfig* config);
  Comm* comm_of(ncclComm_t c);

  mutable std::mutex mutex_;
  int version_;
  std::set<std::string> hidden_;
  std::map<std::string, ncclResult_t> results_;
  int in_progress_polls_ = 0;
  int init_delay_ms_ = 0;
  std::string last_error_;
  std::vector<std::string> calls_;
  std::vector<std::unique_ptr<Comm>> comms_;
  std::map<std::string, std::string> params_;
  std::vector<const char*> param_keys_;  // ParamGetAllParameterKeys' table
};

} // namespace nccl_core::testing
