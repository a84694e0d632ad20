#include "nvlink/raw.h"

#include <c10/cuda/CUDAGuard.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "comm/communicator.h"
#include "nvlink/engine.h"
#include "nvlink/shared_engine.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "util/checked.h"
#include "util/host_profile.h"

namespace nccl_core::nvlink {

namespace {

std::optional<size_t> read_bytes(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    return std::nullopt;
  }
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  // options.py refuses a bad value for dist.*; here a bad value turns it off.
  return end != nullptr && *end == '\0' && n > 0 ? static_cast<size_t>(n) : 0;
}

// For a communicator no group made: the table, with the process's
// variables (read once) for both modes or eager calls alone; no push.
const PathOverrides& raw_overrides() {
  static const PathOverrides overrides{read_bytes("NCCL_CORE_FAST_PATH_MAX_BYTES"),
                                       read_bytes("NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES"),
                                       std::nullopt, size_t(0)};
  return overrides;
}

// Whether a call staging `staged` bytes fits the largest call `shared` takes
// on the fast path in either mode (the engine decides the mode's limit).
bool fits(const SharedEngine& shared, size_t staged) {
  size_t limit = shared.engine.paths().largest_fast();
  return limit != 0 && staged <= limit;
}

}  // namespace

RawEngineCall::RawEngineCall(Communicator& c, size_t staged, bool push, cudaStream_t stream,
                             AgreePaths agree) {
  if (!c.is_live()) {
    return;
  }
  auto shared = engine_if_any(c);
  if (!shared) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    NCCL_CORE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      return;  // NCCL, on every rank; the engine is made outside a capture
    }
    GroupPaths paths = paths_for(c.nranks(), raw_overrides());
    agree(c, paths);  // every rank, at this same call: no engine anywhere yet
    if (!paths.any()) {
      return;  // no engine for a communicator whose every call goes to NCCL
    }
    shared = engine_of(c, paths);
  }
  if (!fits(*shared, staged) && !(push && shared->engine.push_config().covers(staged))) {
    return;  // only NCCL runs this size: hold nothing
  }
  lock_ = std::unique_lock<std::mutex>(shared->mutex);
  shared_ = std::move(shared);
  hold(c);
}

RawEngineCall::RawEngineCall(Communicator& c, std::shared_ptr<SharedEngine> shared,
                             std::unique_lock<std::mutex> lock)
    : shared_(std::move(shared)), lock_(std::move(lock)) {
  hold(c);
}

void RawEngineCall::hold(Communicator& c) {
  on_device_.emplace(static_cast<c10::DeviceIndex>(c.device()));
  // Kernels launched outside capture report when they leave, so an abort
  // waits for them before NCCL unmaps the window (progress.h); the engine
  // draws no ticket for a call being captured.
  shared_->engine.arm(false);
  prof_.mark(host_profile::kRawPath);
}

RawEngineCall::~RawEngineCall() {
  if (shared_) {
    shared_->engine.take_ticket();  // disarm
    prof_.mark(host_profile::kRawCall);
  }
}

Engine* RawEngineCall::engine() const { return shared_ ? &shared_->engine : nullptr; }

bool raw_all_reduce_now(Communicator& c, const Buffer& send, void* out, ncclRedOp_t op,
                        cudaStream_t stream) {
  auto shared = engine_if_any(c);
  if (!shared || !c.is_live() ||
      !fits(*shared, checked::bytes(send.count, types::element_size(send.type), "sendbuf bytes"))) {
    return false;
  }
  std::unique_lock<std::mutex> lock(shared->mutex, std::try_to_lock);
  if (!lock.owns_lock() || !shared->engine.is_set_up()) {
    return false;  // busy, or its first call makes the window (collective)
  }
  RawEngineCall call(c, std::move(shared), std::move(lock));
  return call.engine()->all_reduce(c, send.ptr, out, send.count, send.type, op, stream);
}

uint64_t raw_fast_path_calls(Communicator& c) {
  auto shared = engine_if_any(c);
  return shared ? shared->engine.calls() : 0;
}

}  // namespace nccl_core::nvlink
