// The nccl_core backend's lifecycle: construction, the communicator (created
// lazily: a fresh one, a split's or a grow's; adopted after a split),
// timeouts, the bound device (its end: teardown.cpp).
#include "backend/backend.h"
#include "collectives/path_agreement.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "tooling/comm_listener.h"
#include "op/errors.h"
#include "registration/segment_registry.h"
#include "failures/group_failures.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "nccl/seam.h"
#include "util/checked.h"

namespace nccl_core {

Backend::Backend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                 c10::intrusive_ptr<GroupOptions> options)
    : c10d::Backend(rank, size),
      store_(std::move(store)),
      options_(options ? std::move(options) : c10::make_intrusive<GroupOptions>()),
      info_(std::make_shared<GroupInfo>()),
      hooks_(std::make_unique<CompletionHooks>()),
      abort_hooks_(std::make_shared<AbortHooks>()) {
  NCCL_CORE_CHECK_VALUE(size > 0 && rank >= 0 && rank < size,
                    "nccl_core: invalid rank ", rank, " for group size ", size);
  NCCL_CORE_CHECK_VALUE(options_->error_handling >= 0 && options_->error_handling <= 3,
                        "nccl_core: error_handling must be 0-3 (TORCH_NCCL_ASYNC_ERROR_HANDLING), "
                        "got ", options_->error_handling);
  info_->label = (options_->group_name.empty() ? std::string("?") : options_->group_name) +
                 " (rank " + std::to_string(rank) + " of " + std::to_string(size) + ")";
  failures_ = std::make_unique<GroupFailures>(info_, options_->trace_buffer_size, abort_hooks_);
  timing_.store(options_->enable_timing);
}

Backend::~Backend() {
  // Like backend nccl: a group that was never shut down is aborted, which
  // never blocks on peers.  The program's abort hooks do not run here: the
  // program let the group go (and the interpreter may be exiting).
  try {
    abort_communicator();
  } catch (...) {
  }
}

c10::intrusive_ptr<c10d::Backend::Options> Backend::getBackendOptions() {
  return options_;
}

std::chrono::milliseconds Backend::timeout_of(
    std::chrono::milliseconds t) const {
  return t == c10d::kUnsetTimeout ? options_->timeout : t;
}

void Backend::setTimeout(std::chrono::milliseconds timeout) {
  options_->timeout = timeout;
  if (comm_) {
    comm_->set_timeout(timeout);
  }
}

at::Device Backend::pick_device(const at::Tensor* t) const {
  if (t != nullptr) {
    NCCL_CORE_CHECK_VALUE(t->is_cuda(), "nccl_core: tensors must be CUDA tensors, got a ",
                      t->device().str(), " tensor");
    return t->device();
  }
  if (device_) {
    return *device_;
  }
  if (auto bound = getBoundDeviceId()) {
    return *bound;
  }
  // No tensor to go by (a barrier or an empty coalescing block first):
  // backend nccl's guess, the global rank modulo the visible devices.  Not
  // the current device: a script that places its tensors with .to(rank) and
  // never calls set_device leaves every rank on device 0.
  int count = c10::cuda::device_count();
  NCCL_CORE_CHECK_VALUE(count > 0, "nccl_core: no CUDA device is visible");
  const auto& ranks = options_->global_ranks_in_group;
  uint64_t global = static_cast<size_t>(rank_) < ranks.size() ? ranks[rank_]
                                                                : static_cast<uint64_t>(rank_);
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(global % count));
}

std::shared_ptr<Communicator> Backend::communicator(
    std::optional<at::Device> device) {
  if (comm_) {
    if (device && device->index() != device_->index()) {
      C10_THROW_ERROR(ValueError,
                      "nccl_core: this group's communicator is on " +
                          device_->str() + ", got a tensor on " +
                          device->str() + " (one GPU per process)");
    }
    return comm_;
  }
  if (options_->reconfigurable()) {
    check_healthy();
    C10_THROW_ERROR(DistBackendError,
                    "nccl_core: this group was made with enable_reconfigure=True and has no "
                    "communicator: every member calls dist._reconfigure(uuid, handles) first");
  }
  at::Device dev = device ? *device : pick_device(nullptr);
  NCCL_CORE_CHECK_VALUE(dev.is_cuda() && dev.has_index(),
                    "nccl_core: communicators live on a CUDA device, got ",
                    dev.str());
  create_communicator(dev);
  announce(true);  // outside init_mutex_: the listener may take the GIL
  return comm_;
}

void Backend::create_communicator(at::Device dev) {
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (comm_) {
    return;
  }
  check_healthy();
  try {
    std::shared_ptr<Communicator> comm;
    if (source_.split_parent) {
      comm = source_.split_parent->communicator(dev)->split(
          source_.split_color, rank_, options_->config, options_->timeout);
    } else if (source_.grow) {
      comm = grown_communicator(*source_.grow, rank_, size_, dev.index(), options_->config,
                                options_->timeout);
    } else {
      // The store is already prefixed per group, so a counter is enough to
      // keep keys apart.
      ncclUniqueId id = unique_id("nccl_core/uid/" + std::to_string(uid_counter_++),
                                  options_->timeout);
      comm = Communicator::create(id, size_, rank_, dev.index(),
                                  options_->config, options_->timeout);
    }
    adopt(std::move(comm), dev);
    source_ = CommSource{};
  } catch (const c10::Error&) {
    throw;
  } catch (...) {
    rethrow_as_dist_error("nccl_core: communicator initialisation");
  }
}

ncclUniqueId Backend::unique_id(const std::string& key, std::chrono::milliseconds timeout) {
  ncclUniqueId id;
  if (rank_ == 0) {
    id = Communicator::new_unique_id();
    std::vector<uint8_t> bytes(sizeof(id));
    std::memcpy(bytes.data(), &id, sizeof(id));
    store_->set(key, bytes);
    return id;
  }
  store_->wait({key}, timeout);
  auto bytes = store_->get(key);
  NCCL_CORE_CHECK_STATE(bytes.size() == sizeof(id), "nccl_core: malformed unique id in the store");
  std::memcpy(&id, bytes.data(), sizeof(id));
  return id;
}

void Backend::adopt(std::shared_ptr<Communicator> comm, at::Device device) {
  TORCH_INTERNAL_ASSERT(comm, "nccl_core: adopt() of a null communicator");
  c10::cuda::CUDAGuard guard(device);
  stream_ = at::cuda::getStreamFromPool(options_->is_high_priority_stream,
                                        device.index());
  ready_event_ = std::make_unique<at::cuda::CUDAEvent>(cudaEventDisableTiming);
  auto paths = nvlink::paths_for(size_, {options_->fast_path_max_bytes,
                                        options_->eager_fast_path_max_bytes,
                                        options_->push_min_bytes, options_->push_max_bytes,
                                        options_->push_ctas, options_->two_shot_min_bytes,
                                        options_->one_way_max_bytes});
  check_paths_agree(*comm, paths);
  if (paths.any()) {
    fast_ = nvlink::engine_of(*comm, paths);  // the first asker's paths hold
  }
  device_ = device;
  comm_ = std::move(comm);
  GroupFailures::Settings failing{options_->watchdog_interval,     options_->policy(),
                                  options_->heartbeat_timeout,
                                  // A reconfigurable group's failures end no process.
                                  options_->reconfigurable() ? std::chrono::milliseconds(0)
                                                             : options_->unraised_error_grace,
                                  options_->desync_report_wait,    options_->call_check_interval,
                                  options_->nan_check && !options_->nan_check_strict};
  failures_->start(failing, store_, options_->group_name + "/" + std::to_string(size_), rank_,
                   size_, comm_, [this](OpState& op) { hooks_->finished(op); });
  if (options_->blocking_wait) {
    failures_->watchdog()->leave_timeouts_to_wait();
  }
  if (fast_) {  // its abort and close hooks are the engine's own (shared_engine.h)
    failures_->watchdog()->follow(fast_->engine.progress(), [this] { return options_->timeout; });
  }
  if (!getBoundDeviceId()) {
    setBoundDeviceId(device);
  }
  if (options_->register_allocator_segments) {
    // Best effort per segment (a refused one is a warning): registration
    // only makes collectives faster.
    segments::Registry::get().follow_all(comm_);
  }
}

void Backend::announce(bool up) {
  if (!comm_listener::installed() || options_->group_name.empty()) {
    return;
  }
  if (up) {
    if (!comm_ || !comm_->is_live() || announced_.exchange(true)) {
      return;
    }
    try {
      announced_comm_ = reinterpret_cast<uintptr_t>(comm_->get());
    } catch (...) {
      announced_ = false;
      return;
    }
  } else if (!announced_.exchange(false)) {
    return;
  }
  comm_listener::notify(
      comm_listener::Notice{options_->group_name, announced_comm_, device_->index(), up});
}

void Backend::retire_registrations() {
  announce(false);
  if (comm_) {
    segments::Registry::get().forget(comm_.get());
  }
}

c10::cuda::CUDAStream Backend::stream() {
  communicator();
  return *stream_;
}

size_t Backend::pending_works() const {
  return failures_->pending();
}

void Backend::eagerConnectSingleDevice(at::Device device) {
  if (options_->reconfigurable()) {
    setBoundDeviceId(device);  // the communicator waits for reconfigure()
    return;
  }
  communicator(device);
}

void Backend::setBoundDeviceId(std::optional<at::Device> device) {
  if (device) {
    NCCL_CORE_CHECK_VALUE(device->is_cuda() && device->has_index(),
                          "nccl_core: the bound device must be a CUDA device with an index, got ",
                          device->str());
    NCCL_CORE_CHECK_VALUE(!device_ || device_->index() == device->index(),
                          "nccl_core: this group's communicator is on ", device_->str(),
                          ", it cannot be bound to ", device->str());
  }
  c10d::Backend::setBoundDeviceId(device);
}

} // namespace nccl_core
