// FakeNccl: an NCCL behind the seam (nccl/seam.h) that runs on no GPU, for
// the CPU tests of the control logic above the seam.  It hands out
// communicator handles of its own, answers every call from a script the test
// sets (the version, symbols it lacks, a result for a named call, calls that
// stay in progress, a slow init) and records each call with its arguments.
//
// What it covers: creation (blocking, non-blocking, bounded in time), split
// and shrink argument mapping, abort/finalize/destroy order and idempotence,
// error text from a failing call, and run-time feature gating.  What it
// cannot: anything that touches a CUDA stream, memory or kernel (collectives'
// data, registration, windows, the NVLink kernels); those run on GPUs.
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

  ncclResult_t GroupStart() override;
  ncclResult_t GroupEnd() override;
  ncclResult_t GroupSimulateEnd(ncclSimInfo_t* info) override;

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

  ncclResult_t TeamLsa(ncclComm_t comm, int* nranks, int* rank, int* stride) override;
  ncclResult_t GetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsa_rank,
                                   void** out) override;
  ncclResult_t GetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                    void** out) override;
  ncclResult_t GetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                           void** out) override;
  ncclResult_t WinGetUserPtr(ncclComm_t comm, ncclWindow_t window, void** out) override;
  ncclResult_t DevCommCreate(ncclComm_t comm, const void* requirements, void* dev_comm) override;
  ncclResult_t DevCommDestroy(ncclComm_t comm, const void* dev_comm) override;

 private:
  struct Comm {
    int nranks = 0, rank = 0;
    bool ended = false;  // aborted or destroyed
  };
  // Records `call(args)` and answers the scripted result for `call`.
  ncclResult_t answer(const std::string& call, const std::string& args = "");
  ncclComm_t make_comm(int nranks, int rank);
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
};

} // namespace nccl_core::testing
