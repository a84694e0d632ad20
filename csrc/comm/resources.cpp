#include "comm/resources.h"

#include <algorithm>

#include "comm/communicator.h"
#include "comm/device_scope.h"
#include "comm/window_layout.h"
#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/types.h"
#include "nccl/seam.h"

namespace nccl_core {

// --- Resource ---------------------------------------------------------------

Resource::Resource(std::shared_ptr<Communicator> owner, const char* kind)
    : owner_(owner), kind_(kind) {}

bool Resource::is_valid() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return valid_;
}

void Resource::ensure_valid() const {
  NCCL_CORE_REQUIRE(is_valid(), kind_, " has been closed and is no longer valid");
}

void Resource::close() { close_after(true); }

void Resource::close_unused() { close_after(false); }

void Resource::close_after(bool quiesce) {
  std::shared_ptr<Communicator> comm = owner_.lock();
  if (quiesce && comm && comm->is_live() && is_valid() && needs_quiet()) {
    // A kernel queued before close() (a put_signal, a collective on a
    // registered buffer) must be done before the memory is unmapped or freed.
    comm->quiesce();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!valid_) {
      return;
    }
    valid_ = false;
    // Released while the communicator is live; otherwise NCCL already
    // freed it with the communicator.
    if (comm && comm->is_live()) {
      try {
        release(*comm);
      } catch (...) {
        drop_memory();
        comm->untrack(this);
        throw;
      }
    }
    drop_memory();
  }
  if (comm) {
    comm->untrack(this);
  }
}

void Resource::forget() {
  std::lock_guard<std::mutex> lock(mutex_);
  valid_ = false;
  drop_memory();
}

// --- RegisteredBuffer -------------------------------------------------------

RegisteredBuffer::RegisteredBuffer(std::shared_ptr<Communicator> comm, void* ptr, size_t size,
                                   void* handle, c10::Storage keep)
    : Resource(std::move(comm), "RegisteredBufferHandle"),
      ptr_(ptr),
      size_(size),
      handle_(handle),
      keep_(std::move(keep)) {}

std::shared_ptr<RegisteredBuffer> RegisteredBuffer::create(
    const std::shared_ptr<Communicator>& comm, void* ptr, size_t size, c10::Storage keep) {
  NCCL_CORE_REQUIRE(size > 0, "register_buffer: the buffer is empty");
  ncclComm_t c = comm->get();
  void* handle = nullptr;
  comm->run("ncclCommRegister", [&] { return nccl().CommRegister(c, ptr, size, &handle); });
  comm->wait_ready("ncclCommRegister");
  std::shared_ptr<RegisteredBuffer> buf(
      new RegisteredBuffer(comm, ptr, size, handle, std::move(keep)));
  comm->track(buf);
  return buf;
}

void* RegisteredBuffer::handle() const {
  ensure_valid();
  return handle_;
}

void RegisteredBuffer::release(Communicator& comm) {
  comm.run("ncclCommDeregister", [&] { return nccl().CommDeregister(comm.get(), handle_); });
}

// --- Window -----------------------------------------------------------------

Window::Window(std::shared_ptr<Communicator> comm, void* ptr, size_t size, int flags,
               ncclWindow_t win, c10::Storage keep, std::vector<size_t> sizes)
    : Resource(std::move(comm), "RegisteredWindowHandle"),
      ptr_(ptr),
      size_(size),
      flags_(flags),
      win_(win),
      keep_(std::move(keep)),
      sizes_(std::move(sizes)) {
  min_size_ = size_;
  for (size_t s : sizes_) {
    min_size_ = std::min(min_size_, s);
  }
}

void Window::check_flags(long long flags) {
  NCCL_CORE_REQUIRE(flags >= 0 && (flags & ~static_cast<long long>(newer::kWinKnownFlags)) == 0,
                    "Invalid WindowFlag: ", flags);
  if ((flags & newer::kWinStrictOrdering) != 0 &&
      !features::available(features::kWindowStrictOrdering)) {
    features::refuse(features::kWindowStrictOrdering, "register_window: WindowFlag.STRICT_ORDERING");
  }
}

std::shared_ptr<Window> Window::create(const std::shared_ptr<Communicator>& comm, void* ptr,
                                       size_t size, int flags, c10::Storage keep,
                                       std::vector<size_t> sizes) {
  NCCL_CORE_REQUIRE(size > 0, "register_window: the buffer is empty");
  check_flags(flags);
  comm->warm_up_for_windows();
  // Every rank's size: remote accesses are checked against the peer's window,
  // which may be smaller than this rank's.  Collective, like the
  // registration, and before it, so every rank takes part whatever NCCL answers.
  if (sizes.empty()) {
    sizes = comm->all_gather_sizes(size, "ncclAllGather (window sizes)");
  }
  NCCL_CORE_REQUIRE(sizes.size() == static_cast<size_t>(comm->nranks()) &&
                        sizes[comm->rank()] == size,
                    "register_window: the window sizes do not match the communicator");
  ncclComm_t c = comm->get();
  ncclWindow_t win = nullptr;
  comm->run("ncclCommWindowRegister",
            [&] { return nccl().CommWindowRegister(c, ptr, size, &win, flags); });
  // On a non-blocking communicator the registration may still be running
  // (and `win` unset) even when the call returned ncclSuccess.
  comm->wait_ready("ncclCommWindowRegister");
  if (win == nullptr) {
    return nullptr; // NCCL cannot register windows on this system
  }
  std::shared_ptr<Window> w(
      new Window(comm, ptr, size, flags, win, std::move(keep), std::move(sizes)));
  try {
    w->learn_layout(c);
  } catch (...) {
    (void)nccl().CommWindowDeregister(c, win);
    throw;
  }
  comm->track(w);
  return w;
}

void Window::learn_layout(ncclComm_t comm) {
  nccl().require("ncclTeamLsa", "window pointer queries", newer::kDeviceApiVersion);
  int stride = 0;
  NCCL_CORE_CHECK(comm, nccl().TeamLsa(comm, &lsa_size_, &lsa_rank_, &stride));
  world_rank_ = owner()->rank();
  if (!newer::has_host_pointer_queries()) {
    DeviceScope on_device(owner()->device());  // its private stream on our device
    auto layout = window_layout::read(win_);
    lsa_flat_base_ = layout.lsa_flat_base;
    stride_4g_ = layout.stride_4g;
    lsa_rank_ = layout.lsa_rank;
  }
}

ncclWindow_t Window::handle() const {
  ensure_valid();
  return win_;
}

void* Window::user_ptr() const {
  ensure_valid();
  return ptr_;
}

size_t Window::peer_size(int peer) const {
  NCCL_CORE_REQUIRE(peer >= 0 && static_cast<size_t>(peer) < sizes_.size(), "peer ", peer,
                    " is outside the communicator of ", sizes_.size(), " ranks");
  return sizes_[peer];
}

void Window::check_offset(size_t offset, size_t limit) const {
  ensure_valid();
  NCCL_CORE_REQUIRE(offset < limit, "window offset ", offset, " is outside the window of ",
                    limit, " bytes", limit < size_ ? " (the peer registered less than this rank)"
                                                   : "");
}

void* Window::lsa_pointer(int lsa_rank, size_t offset) const {
  NCCL_CORE_REQUIRE(lsa_rank >= 0 && lsa_rank < lsa_size_, "lsa_rank ", lsa_rank,
                    " is outside the LSA team of ", lsa_size_, " ranks");
  // The LSA team is a contiguous block of world ranks around this one.
  int world = world_rank_ + (lsa_rank - lsa_rank_);
  check_offset(offset, world >= 0 && static_cast<size_t>(world) < sizes_.size() ? sizes_[world]
                                                                                : min_size_);
  if (newer::has_host_pointer_queries()) {
    nccl().require("ncclGetLsaDevicePointer", "get_lsa_device_pointer",
                   newer::kHostPointersVersion);
    void* out = nullptr;
    NCCL_CORE_CHECK(nullptr, nccl().GetLsaDevicePointer(win_, offset, lsa_rank, &out));
    return out;
  }
  return window_layout::lsa_pointer(lsa_flat_base_, stride_4g_, lsa_rank, offset);
}

std::optional<void*> Window::peer_pointer(int peer, size_t offset) const {
  auto comm = owner();
  int nranks = comm ? comm->nranks() : 0;
  NCCL_CORE_REQUIRE(peer >= 0 && peer < nranks, "peer ", peer,
                    " is outside the communicator of ", nranks, " ranks");
  // The LSA team is a contiguous block of world ranks around this one.
  int index = lsa_rank_ + (peer - world_rank_);
  if (index < 0 || index >= lsa_size_) {
    check_offset(offset, sizes_[peer]);
    return std::nullopt;
  }
  return lsa_pointer(index, offset);
}

std::optional<void*> Window::lsa_multimem_pointer(size_t offset) const {
  check_offset(offset, min_size_);
  if (!nccl().provides("ncclGetLsaMultimemDevicePointer")) {
    // NCCL 2.28 keeps the multicast handle in the device communicator only;
    // windows here never carry one we could report.
    return std::nullopt;
  }
  void* out = nullptr;
  if (nccl().GetLsaMultimemDevicePointer(win_, offset, &out) != ncclSuccess || out == nullptr) {
    return std::nullopt; // multicast not available (NVLS off)
  }
  return out;
}

std::optional<void*> Window::multimem_pointer(void* mc_base_ptr, size_t offset) const {
  check_offset(offset, min_size_);
  nccl().require("ncclGetMultimemDevicePointer", "get_multimem_device_pointer",
                 newer::kHostPointersVersion);
  NCCL_CORE_REQUIRE(mc_base_ptr != nullptr,
                    "get_multimem_device_pointer: the MultimemHandle has no multicast base "
                    "(mc_base_pointer 0)");
  void* out = nullptr;
  NCCL_CORE_CHECK(nullptr, nccl().GetMultimemDevicePointer(win_, offset, mc_base_ptr, &out));
  if (out == nullptr) {
    return std::nullopt;  // multicast not available (NVLS off)
  }
  return out;
}

void Window::release(Communicator& comm) {
  comm.run("ncclCommWindowDeregister",
           [&] { return nccl().CommWindowDeregister(comm.get(), win_); });
}

// --- CustomRedOp ------------------------------------------------------------

CustomRedOp::CustomRedOp(std::shared_ptr<Communicator> comm, ncclRedOp_t op,
                         ncclDataType_t type, ncclScalarResidence_t residence,
                         at::Tensor scalar)
    : Resource(std::move(comm), "CustomRedOp"),
      op_(op),
      type_(type),
      residence_(residence),
      scalar_(std::move(scalar)) {}

std::shared_ptr<CustomRedOp> CustomRedOp::create(const std::shared_ptr<Communicator>& comm,
                                                 const at::Tensor& scalar,
                                                 ncclDataType_t type) {
  NCCL_CORE_REQUIRE(scalar.numel() == 1, "the PreMulSum scalar must have exactly 1 element, got ",
                    scalar.numel());
  NCCL_CORE_REQUIRE(types::to_nccl(scalar.scalar_type()) == type,
                    "the PreMulSum scalar's dtype ", scalar.scalar_type(),
                    " does not match the requested datatype ", types::name(type));
  NCCL_CORE_REQUIRE(types::is_floating(type) || type == ncclInt32 || type == ncclUint32 ||
                        type == ncclInt64 || type == ncclUint64 || type == ncclInt8 ||
                        type == ncclUint8,
                    "PreMulSum is not defined for ", types::name(type));
  auto residence = scalar.is_cuda() ? ncclScalarDevice : ncclScalarHostImmediate;
  if (scalar.is_cuda()) {
    NCCL_CORE_REQUIRE(scalar.device().index() == comm->device(),
                      "the PreMulSum scalar is on device ", scalar.device().index(),
                      ", but communicator is on device ", comm->device());
  }
  at::Tensor kept = scalar.contiguous();
  ncclComm_t c = comm->get();
  ncclRedOp_t op{};
  NCCL_CORE_CHECK(c, nccl().RedOpCreatePreMulSum(&op, kept.data_ptr(), type, residence, c));
  std::shared_ptr<CustomRedOp> r(new CustomRedOp(comm, op, type, residence, std::move(kept)));
  comm->track(r);
  return r;
}

ncclRedOp_t CustomRedOp::op() const {
  ensure_valid();
  return op_;
}

void CustomRedOp::release(Communicator& comm) {
  comm.call(nccl().RedOpDestroy(op_, comm.get()), "ncclRedOpDestroy");
}

} // namespace nccl_core
