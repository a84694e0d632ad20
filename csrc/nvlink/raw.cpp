#include "nvlink/raw.h"

#include <c10/cuda/CUDAGuard.h>

#include <cstdlib>
#include <mutex>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "nvlink/engine.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "util/checked.h"
#include "util/host_profile.h"

namespace nccl_core::nvlink {

namespace {

constexpr const char* kKey = "fast.raw";

size_t read_max_bytes() {
  const char* v = std::getenv("NCCL_CORE_FAST_PATH_MAX_BYTES");
  if (v == nullptr || *v == '\0') {
    return 256 * 1024;
  }
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  // options.py refuses a bad value for dist.*; here a bad value turns it off.
  return end != nullptr && *end == '\0' && n > 0 ? static_cast<size_t>(n) : 0;
}

// Read once per process.
size_t max_bytes() {
  static const size_t bytes = read_max_bytes();
  return bytes;
}

// The engine of one communicator's raw calls, owned by the communicator.
class RawPath final : public Resource {
 public:
  RawPath(const std::shared_ptr<Communicator>& comm, size_t max_bytes)
      : Resource(comm, "FastPath"), engine(GroupPaths::uniform(max_bytes)) {}
  std::mutex mutex;  // raw calls may come from several threads
  Engine engine;

 private:
  void release(Communicator&) override {}  // its window is a resource of its own
};

std::shared_ptr<RawPath> path_of(Communicator& c) {
  if (auto p = c.attachment(kKey)) {
    return std::static_pointer_cast<RawPath>(p);
  }
  static std::mutex creating;
  std::lock_guard<std::mutex> lock(creating);
  if (auto p = c.attachment(kKey)) {
    return std::static_pointer_cast<RawPath>(p);
  }
  auto self = c.shared_from_this();
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(c.device()));
  auto path = std::make_shared<RawPath>(self, max_bytes());
  // NCCL's abort unmaps the scratch window: our kernels leave it first; and
  // finalize / destroy close it only once they have left.
  std::weak_ptr<Progress> progress = path->engine.progress();
  c.before_abort([progress] {
    if (auto p = progress.lock()) {
      p->stop_kernels(std::chrono::seconds(2));
    }
  });
  std::weak_ptr<Communicator> owner = self;
  c.before_close([progress, owner] {
    auto p = progress.lock();
    auto comm = owner.lock();
    if (p && comm) {
      p->wait_idle(comm->timeout());
    }
  });
  c.attach(kKey, path);
  return path;
}

// The call on `path`, whose mutex the caller holds.
bool run(Communicator& c, RawPath& path, const Buffer& send, void* out, ncclRedOp_t op,
         cudaStream_t stream) {
  host_profile::Timer prof;
  c10::cuda::CUDAGuard on_device(static_cast<c10::DeviceIndex>(c.device()));
  prof.mark(host_profile::kRawPath);
  // Kernels launched outside capture report when they leave, so an abort
  // waits for them before NCCL unmaps the window (progress.h); the engine
  // draws no ticket for a call being captured.
  path.engine.arm(false);
  bool launched = false;
  try {
    launched = path.engine.all_reduce(c, send.ptr, out, send.count, send.type, op, stream);
  } catch (...) {
    path.engine.take_ticket();  // disarm
    throw;
  }
  path.engine.take_ticket();
  prof.mark(host_profile::kRawCall);
  return launched;
}

bool eligible(Communicator& c, const Buffer& send) {
  return max_bytes() != 0 && checked::bytes(send.count, types::element_size(send.type), "sendbuf bytes") <= max_bytes() &&
         c.is_live();
}

}  // namespace

bool raw_all_reduce(Communicator& c, const Buffer& send, void* out, ncclRedOp_t op,
                    cudaStream_t stream) {
  if (!eligible(c, send)) {
    return false;
  }
  auto path = path_of(c);
  std::lock_guard<std::mutex> lock(path->mutex);
  return run(c, *path, send, out, op, stream);
}

bool raw_all_reduce_now(Communicator& c, const Buffer& send, void* out, ncclRedOp_t op,
                        cudaStream_t stream) {
  auto p = c.attachment(kKey);
  if (!p || !eligible(c, send)) {
    return false;
  }
  auto path = std::static_pointer_cast<RawPath>(p);
  std::unique_lock<std::mutex> lock(path->mutex, std::try_to_lock);
  if (!lock.owns_lock() || !path->engine.is_set_up()) {
    return false;  // busy, or its first call makes the window (collective)
  }
  return run(c, *path, send, out, op, stream);
}

uint64_t raw_fast_path_calls(Communicator& c) {
  auto p = c.attachment(kKey);
  return p ? std::static_pointer_cast<RawPath>(p)->engine.calls() : 0;
}

}  // namespace nccl_core::nvlink
