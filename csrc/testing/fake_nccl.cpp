#include "testing/fake_nccl.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "util/concat.h"

namespace nccl_core::testing {

FakeNccl::FakeNccl() : version_(NCCL_VERSION_CODE) {}

FakeNccl::~FakeNccl() = default;

void FakeNccl::set_version(int code) {
  std::lock_guard<std::mutex> lock(mutex_);
  version_ = code;
}

void FakeNccl::hide(const std::string& symbol) {
  std::lock_guard<std::mutex> lock(mutex_);
  hidden_.insert(symbol);
}

void FakeNccl::fail(const std::string& call, ncclResult_t result) {
  std::lock_guard<std::mutex> lock(mutex_);
  results_[call] = result;
}

void FakeNccl::stay_in_progress(int polls) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_progress_polls_ = polls;
}

void FakeNccl::set_last_error(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_error_ = text;
}

void FakeNccl::set_init_delay_ms(int ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  init_delay_ms_ = ms;
}

std::vector<std::string> FakeNccl::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

void FakeNccl::clear_calls() {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.clear();
}

int FakeNccl::live_comms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (const auto& c : comms_) {
    n += c->ended ? 0 : 1;
  }
  return n;
}

ncclResult_t FakeNccl::answer(const std::string& call, const std::string& args) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.push_back(args.empty() ? call : call + "(" + args + ")");
  auto it = results_.find(call);
  return it == results_.end() ? ncclSuccess : it->second;
}

ncclComm_t FakeNccl::make_comm(int nranks, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  comms_.push_back(std::make_unique<Comm>(Comm{nranks, rank, false}));
  return reinterpret_cast<ncclComm_t>(comms_.back().get());
}

FakeNccl::Comm* FakeNccl::comm_of(ncclComm_t c) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& mine : comms_) {
    if (reinterpret_cast<ncclComm_t>(mine.get()) == c) {
      return mine.get();
    }
  }
  return nullptr;
}

ncclResult_t FakeNccl::GetVersion(int* version) {
  std::lock_guard<std::mutex> lock(mutex_);
  *version = version_;
  return ncclSuccess;
}

const char* FakeNccl::GetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* FakeNccl::GetLastError(ncclComm_t) {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_.c_str();  // stable while the script does not change it
}

bool FakeNccl::provides(const char* symbol) {
  std::lock_guard<std::mutex> lock(mutex_);
  return hidden_.count(symbol) == 0;
}

ncclResult_t FakeNccl::GetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof(*id));
  return answer("GetUniqueId");
}

ncclResult_t FakeNccl::CommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank,
                                          ncclConfig_t* c) {
  int delay = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    delay = init_delay_ms_;
  }
  if (delay > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  }
  ncclResult_t r = answer(
      "CommInitRankConfig",
      concat("nranks=", nranks, ", rank=", rank, ", blocking=", c->blocking, ", minCTAs=", c->minCTAs,
             ", maxCTAs=", c->maxCTAs, ", cgaClusterSize=", c->cgaClusterSize, ", splitShare=",
             c->splitShare, ", commName=", c->commName == nullptr ? "" : c->commName));
  *comm = make_comm(nranks, rank);  // a handle even on failure, as NCCL may leave one
  return r;
}

ncclResult_t FakeNccl::CommSplit(ncclComm_t comm, int color, int key, ncclComm_t* child,
                                 ncclConfig_t* c) {
  Comm* parent = comm_of(comm);
  ncclResult_t r = answer("CommSplit", concat("color=", color == NCCL_SPLIT_NOCOLOR ? "NOCOLOR"
                                                                                   : std::to_string(color),
                                              ", key=", key, ", blocking=", c->blocking));
  *child = r != ncclSuccess || color == NCCL_SPLIT_NOCOLOR || parent == nullptr
               ? nullptr
               : make_comm(parent->nranks, key < parent->nranks ? key : 0);
  return r;
}

ncclResult_t FakeNccl::CommShrink(ncclComm_t comm, int* exclude, int count, ncclComm_t* child,
                                  ncclConfig_t*, int flags) {
  Comm* parent = comm_of(comm);
  std::string list;
  int below = 0;
  for (int i = 0; i < count; ++i) {
    list += (i ? "," : "") + std::to_string(exclude[i]);
    below += parent != nullptr && exclude[i] < parent->rank ? 1 : 0;
  }
  ncclResult_t r = answer("CommShrink", concat("exclude=[", list, "], flags=", flags));
  *child = r != ncclSuccess || parent == nullptr
               ? nullptr
               : make_comm(parent->nranks - count, parent->rank - below);
  return r;
}

ncclResult_t FakeNccl::CommCount(ncclComm_t comm, int* count) {
  Comm* c = comm_of(comm);
  if (c == nullptr) {
    return ncclInvalidArgument;
  }
  *count = c->nranks;
  return ncclSuccess;
}

ncclResult_t FakeNccl::CommUserRank(ncclComm_t comm, int* rank) {
  Comm* c = comm_of(comm);
  if (c == nullptr) {
    return ncclInvalidArgument;
  }
  *rank = c->rank;
  return ncclSuccess;
}

ncclResult_t FakeNccl::CommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = results_.find("CommGetAsyncError");
  if (it != results_.end()) {
    *state = it->second;
  } else if (in_progress_polls_ != 0) {
    in_progress_polls_ -= in_progress_polls_ > 0 ? 1 : 0;  // < 0: forever
    *state = ncclInProgress;
  } else {
    *state = ncclSuccess;
  }
  return ncclSuccess;
}

ncclResult_t FakeNccl::CommFinalize(ncclComm_t) { return answer("CommFinalize"); }

ncclResult_t FakeNccl::CommDestroy(ncclComm_t comm) {
  if (Comm* c = comm_of(comm)) {
    std::lock_guard<std::mutex> lock(mutex_);
    c->ended = true;
  }
  return answer("CommDestroy");
}

ncclResult_t FakeNccl::CommAbort(ncclComm_t comm) {
  if (Comm* c = comm_of(comm)) {
    std::lock_guard<std::mutex> lock(mutex_);
    c->ended = true;
  }
  return answer("CommAbort");
}

ncclResult_t FakeNccl::CommRevoke(ncclComm_t, int flags) {
  return answer("CommRevoke", concat("flags=", flags));
}
ncclResult_t FakeNccl::CommSuspend(ncclComm_t, int flags) {
  return answer("CommSuspend", concat("flags=", flags));
}
ncclResult_t FakeNccl::CommResume(ncclComm_t) { return answer("CommResume"); }

ncclResult_t FakeNccl::CommMemStats(ncclComm_t, int stat, uint64_t* value) {
  *value = 1000 + static_cast<uint64_t>(stat);  // tells the stats apart
  return answer("CommMemStats", concat("stat=", stat));
}


ncclResult_t FakeNccl::GroupStart() { return answer("GroupStart"); }
ncclResult_t FakeNccl::GroupEnd() { return answer("GroupEnd"); }
ncclResult_t FakeNccl::RedOpCreatePreMulSum(ncclRedOp_t* op, void*, ncclDataType_t type,
                                            ncclScalarResidence_t residence, ncclComm_t) {
  *op = static_cast<ncclRedOp_t>(ncclNumOps);
  return answer("RedOpCreatePreMulSum", concat("type=", static_cast<int>(type), ", residence=",
                                               static_cast<int>(residence)));
}
ncclResult_t FakeNccl::RedOpDestroy(ncclRedOp_t, ncclComm_t) { return answer("RedOpDestroy"); }

ncclResult_t FakeNccl::MemAlloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  answer("MemAlloc", concat("bytes=", bytes));
  return ncclInvalidUsage;  // no device memory here
}
ncclResult_t FakeNccl::MemFree(void*) { return answer("MemFree"); }
ncclResult_t FakeNccl::CommRegister(ncclComm_t, void*, size_t bytes, void** handle) {
  *handle = nullptr;
  return answer("CommRegister", concat("bytes=", bytes));
}
ncclResult_t FakeNccl::CommDeregister(ncclComm_t, void*) { return answer("CommDeregister"); }
ncclResult_t FakeNccl::CommWindowRegister(ncclComm_t, void*, size_t bytes, ncclWindow_t* window,
                                          int flags) {
  *window = nullptr;
  return answer("CommWindowRegister", concat("bytes=", bytes, ", flags=", flags));
}
ncclResult_t FakeNccl::CommWindowDeregister(ncclComm_t, ncclWindow_t) {
  return answer("CommWindowDeregister");
}

ncclResult_t FakeNccl::AllReduce(const void*, void*, size_t count, ncclDataType_t, ncclRedOp_t op,
                                 ncclComm_t, cudaStream_t) {
  return answer("AllReduce", concat("count=", count, ", op=", static_cast<int>(op)));
}
ncclResult_t FakeNccl::Reduce(const void*, void*, size_t count, ncclDataType_t, ncclRedOp_t,
                              int root, ncclComm_t, cudaStream_t) {
  return answer("Reduce", concat("count=", count, ", root=", root));
}
ncclResult_t FakeNccl::Broadcast(const void*, void*, size_t count, ncclDataType_t, int root,
                                 ncclComm_t, cudaStream_t) {
  return answer("Broadcast", concat("count=", count, ", root=", root));
}
ncclResult_t FakeNccl::AllGather(const void*, void*, size_t count, ncclDataType_t, ncclComm_t,
                                 cudaStream_t) {
  return answer("AllGather", concat("count=", count));
}
ncclResult_t FakeNccl::ReduceScatter(const void*, void*, size_t count, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t) {
  return answer("ReduceScatter", concat("count=", count));
}
ncclResult_t FakeNccl::AlltoAll(const void*, void*, size_t count, ncclDataType_t, ncclComm_t,
                                cudaStream_t) {
  return answer("AlltoAll", concat("count=", count));
}
ncclResult_t FakeNccl::Gather(const void*, void*, size_t count, ncclDataType_t, int root,
                              ncclComm_t, cudaStream_t) {
  return answer("Gather", concat("count=", count, ", root=", root));
}
ncclResult_t FakeNccl::Scatter(const void*, void*, size_t count, ncclDataType_t, int root,
                               ncclComm_t, cudaStream_t) {
  return answer("Scatter", concat("count=", count, ", root=", root));
}
ncclResult_t FakeNccl::Send(const void*, size_t count, ncclDataType_t, int peer, ncclComm_t,
                            cudaStream_t) {
  return answer("Send", concat("count=", count, ", peer=", peer));
}
ncclResult_t FakeNccl::Recv(void*, size_t count, ncclDataType_t, int peer, ncclComm_t,
                            cudaStream_t) {
  return answer("Recv", concat("count=", count, ", peer=", peer));
}

ncclResult_t FakeNccl::PutSignal(const void*, size_t count, ncclDataType_t, int peer, ncclWindow_t,
                                 size_t offset, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return answer("PutSignal", concat("count=", count, ", peer=", peer, ", offset=", offset));
}
ncclResult_t FakeNccl::Signal(int peer, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return answer("Signal", concat("peer=", peer));
}
ncclResult_t FakeNccl::WaitSignal(int ndescs, void*, ncclComm_t, cudaStream_t) {
  return answer("WaitSignal", concat("ndescs=", ndescs));
}

} // namespace nccl_core::testing
