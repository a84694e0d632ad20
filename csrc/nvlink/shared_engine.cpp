#include "nvlink/shared_engine.h"

#include <c10/cuda/CUDAGuard.h>

#include <chrono>

#include "comm/communicator.h"

namespace nccl_core::nvlink {

namespace {
constexpr const char* kKey = "nvlink.engine";
}  // namespace

std::shared_ptr<SharedEngine> engine_of(Communicator& c, const GroupPaths& paths) {
  bool made = false;
  auto shared = std::static_pointer_cast<SharedEngine>(c.extension(kKey, [&] {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(c.device()));
    made = true;
    return std::static_pointer_cast<void>(std::make_shared<SharedEngine>(paths));
  }));
  if (made) {
    // NCCL's abort unmaps the scratch window: our kernels leave it first.
    std::weak_ptr<Progress> progress = shared->engine.progress();
    c.before_abort([progress] {
      if (auto p = progress.lock()) {
        p->stop_kernels(std::chrono::seconds(2));
      }
    });
    // close_all_resources() (a user's, or finalize's) closes it too: our
    // kernels leave first.
    std::weak_ptr<Communicator> owner = c.shared_from_this();
    c.before_close([progress, owner] {
      auto p = progress.lock();
      auto comm = owner.lock();
      if (p && comm) {
        p->wait_idle(comm->timeout());
      }
    });
  }
  return shared;
}

std::shared_ptr<SharedEngine> engine_if_any(const Communicator& c) {
  return std::static_pointer_cast<SharedEngine>(c.extension(kKey));
}

}  // namespace nccl_core::nvlink
