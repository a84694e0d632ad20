#include "backend/group_window.h"

#if NCCL_CORE_TORCH >= 215

#include <c10/cuda/CUDAGuard.h>

#include "backend/launch.h"
#include "comm/buffer.h"
#include "comm/resources.h"
#include "memory/vmm.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "op/errors.h"
#include "rma/signals.h"
#include "util/checked.h"

namespace nccl_core {

namespace {

// A rank's registered tensor in one word of the registration's all-gather:
// its bytes below bit 56, its dtype above.
constexpr int kDtypeShift = 56;
constexpr uint64_t kBytesMask = (uint64_t{1} << kDtypeShift) - 1;

at::ScalarType dtype_of_word(uint64_t word, int rank) {
  auto code = static_cast<int64_t>(word >> kDtypeShift);
  NCCL_CORE_CHECK_STATE(code < static_cast<int64_t>(at::ScalarType::NumOptions),
                        "nccl_core window: rank ", rank, " registered an unknown dtype ", code);
  return static_cast<at::ScalarType>(code);
}

// NcclInvalid (the one-sided layer's refusal) reaches torch.distributed as
// its ValueError; everything else as launch turns it.
template <class Fn>
void as_value_errors(Fn&& fn) {
  try {
    fn();
  } catch (const NcclInvalid& e) {
    C10_THROW_ERROR(ValueError, e.what());
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Window> Backend::new_window(const std::optional<at::Tensor>& tensor) {
  auto window = c10::make_intrusive<GroupWindow>(c10::intrusive_ptr<Backend>::reclaim_copy(this));
  if (tensor && tensor->defined()) {
    window->tensor_register(*tensor, true);
  }
  return window;
}

WorkPtr Backend::one_sided(bool sends, std::vector<at::Tensor> inputs, CallOpts call,
                           const char* what,
                           const std::function<void(Communicator&, cudaStream_t)>& fn) {
  call.sends = sends;
  auto dev = pick_device(inputs.empty() ? nullptr : &inputs[0]);
  return launch(sends ? c10d::OpType::SEND : c10d::OpType::RECV, dev, inputs, {}, call, what,
                [&](Communicator& c, cudaStream_t s, Work&) { fn(c, s); });
}

GroupWindow::GroupWindow(c10::intrusive_ptr<Backend> backend) : backend_(std::move(backend)) {}

// Deregistration is the collective tensor_deregister(): a window dropped
// without it stays registered until the communicator ends, and its tensor
// goes back to its pool now (as with backend nccl).
GroupWindow::~GroupWindow() = default;

void GroupWindow::tensor_register(const at::Tensor& tensor, bool owning) {
  NCCL_CORE_CHECK_VALUE(tensor.defined(), "nccl_core window: tensor_register needs a tensor");
  NCCL_CORE_CHECK_VALUE(!window_, "nccl_core window: a tensor is registered already "
                                  "(tensor_deregister first)");
  NCCL_CORE_CHECK_VALUE(tensor.is_cuda(), "nccl_core window: the tensor must be a CUDA tensor, "
                                          "got one on ", tensor.device().str());
  NCCL_CORE_CHECK_VALUE(tensor.is_contiguous(), "nccl_core window: the tensor must be contiguous");
  Buffer b = resolve_tensor(tensor, "tensor", BufferLayout::Contiguous);
  auto comm = backend_->communicator(tensor.device());
  c10::cuda::CUDAGuard guard(tensor.device());
  size_t bytes = checked::bytes<raise_value_error>(b.count, types::element_size(b.type),
                                                   "window tensor bytes");
  NCCL_CORE_CHECK_VALUE(bytes <= kBytesMask, "nccl_core window: ", bytes, " bytes is too large");
  // Checked alike on every rank before the collective steps; a rank whose
  // memory NCCL cannot take still joins the exchange, so no rank is left waiting.
  bool usable = vmm::is_vmm(b.ptr);
  uint64_t word = usable ? (static_cast<uint64_t>(tensor.scalar_type()) << kDtypeShift) | bytes
                         : ~uint64_t{0};
  std::vector<size_t> words = comm->all_gather_sizes(word, "window registration (all-gather)");
  for (size_t r = 0; r < words.size(); ++r) {
    NCCL_CORE_CHECK_VALUE(words[r] != ~size_t{0}, "nccl_core window: rank ", r,
                          "'s tensor is not NCCL (VMM) memory; allocate window tensors from "
                          "a torch.cuda.MemPool on the group's mem_allocator, with "
                          "nccl_core_backend.torch.empty, or dist's allocate_tensor");
  }
  std::vector<Peer> peers;
  std::vector<size_t> sizes;
  for (size_t r = 0; r < words.size(); ++r) {
    peers.push_back({words[r] & kBytesMask, dtype_of_word(words[r], static_cast<int>(r))});
    sizes.push_back(words[r] & kBytesMask);
  }
  std::shared_ptr<nccl_core::Window> w;
  as_value_errors([&] {
    rma::prepare(comm);  // collective: the one-sided state, at the first window
    // The tensor is held here (owning), not by the communicator's resource:
    // dropping the window lets it go.
    w = nccl_core::Window::create(comm, b.ptr, bytes, NCCL_WIN_COLL_SYMMETRIC, c10::Storage(),
                                  sizes);
    if (w) {
      rma::after_window(comm, NCCL_WIN_COLL_SYMMETRIC);
    }
  });
  NCCL_CORE_CHECK_STATE(w != nullptr, "nccl_core window: NCCL cannot register windows on this "
                                      "system (ncclCommWindowRegister gave no window)");
  window_ = std::move(w);
  peers_ = std::move(peers);
  tensor_ = owning ? tensor : at::Tensor();
}

void GroupWindow::tensor_deregister() {
  registered("tensor_deregister");
  // Collective: no rank frees its copy while a peer may still store into it.
  backend_->barrier(c10d::BarrierOptions())->wait();
  window_->close();
  window_.reset();
  peers_.clear();
  tensor_ = at::Tensor();
}

const nccl_core::Window& GroupWindow::registered(const char* what) const {
  NCCL_CORE_CHECK_VALUE(window_ != nullptr, "nccl_core window: ", what,
                        " needs a registered tensor (new_window(tensor) or tensor_register)");
  return *window_;
}

int GroupWindow::peer_index(int64_t rank, const char* what) const {
  return checked::index<raise_value_error>(rank, backend_->getSize(), what);
}

c10::intrusive_ptr<c10d::Work> GroupWindow::put(const at::Tensor& tensor, int64_t dst_rank,
                                                int64_t target_offset_nelems, bool async_op,
                                                const c10d::PutOptions& opts) {
  const nccl_core::Window& w = registered("put");
  int peer = peer_index(dst_rank, "nccl_core window put: dst_rank");
  NCCL_CORE_CHECK_VALUE(tensor.defined() && tensor.is_cuda(),
                        "nccl_core window put: the tensor must be a CUDA tensor");
  NCCL_CORE_CHECK_VALUE(tensor.is_contiguous(), "nccl_core window put: the tensor must be contiguous");
  NCCL_CORE_CHECK_TYPE(tensor.scalar_type() == peers_[peer].dtype, "nccl_core window put: a ",
                       tensor.scalar_type(), " tensor into rank ", peer, "'s window of ",
                       peers_[peer].dtype);
  Buffer src = resolve_tensor(tensor, "tensor", BufferLayout::Contiguous);
  size_t elem = types::element_size(src.type);
  size_t offset = checked::offset_bytes<raise_value_error>(target_offset_nelems, elem,
                                                            "nccl_core window put: target_offset_nelems");
  size_t bytes = checked::bytes<raise_value_error>(src.count, elem, "nccl_core window put: bytes");
  size_t theirs = peers_[peer].bytes;
  NCCL_CORE_CHECK_VALUE(offset <= theirs && bytes <= theirs - offset, "nccl_core window put: ",
                        bytes, " bytes at element ", target_offset_nelems,
                        " do not fit rank ", peer, "'s window of ", theirs, " bytes");
  CallOpts call{opts.timeout, async_op};
  return backend_->one_sided(true, {tensor}, call, "window put",
                             [&](Communicator& c, cudaStream_t s) {
                               as_value_errors([&] { rma::put_signal(c, src, peer, w, offset, s); });
                             });
}

c10::intrusive_ptr<c10d::Work> GroupWindow::signal(int64_t peer_rank, bool async_op,
                                                   const c10d::SignalOptions& opts) {
  registered("signal");
  int peer = peer_index(peer_rank, "nccl_core window signal: peer_rank");
  CallOpts call{opts.timeout, async_op};
  return backend_->one_sided(true, {}, call, "window signal", [&](Communicator& c, cudaStream_t s) {
    as_value_errors([&] { rma::signal(c, peer, s); });
  });
}

c10::intrusive_ptr<c10d::Work> GroupWindow::wait_signal(int64_t peer_rank, bool async_op,
                                                        const c10d::WaitSignalOptions& opts) {
  registered("wait_signal");
  int peer = peer_index(peer_rank, "nccl_core window wait_signal: peer_rank");
  CallOpts call{opts.timeout, async_op};
  return backend_->one_sided(false, {}, call, "window wait_signal",
                             [&](Communicator& c, cudaStream_t s) {
                               as_value_errors([&] { rma::wait_signal(c, {{peer, 1}}, s); });
                             });
}

at::Tensor GroupWindow::map_remote_tensor(int64_t rank) {
  const nccl_core::Window& w = registered("map_remote_tensor");
  int peer = peer_index(rank, "nccl_core window map_remote_tensor: rank");
  auto options = at::TensorOptions()
                     .dtype(peers_[peer].dtype)
                     .device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(
                                                      w.owner()->device())));
  int64_t numel = static_cast<int64_t>(peers_[peer].bytes / c10::elementSize(peers_[peer].dtype));
  void* ptr = nullptr;
  if (peer == backend_->getRank()) {
    if (tensor_.defined()) {
      return tensor_;
    }
    ptr = w.user_ptr();
  } else {
    auto p = w.peer_pointer(peer, 0);
    NCCL_CORE_CHECK_VALUE(p.has_value(), "nccl_core window map_remote_tensor: rank ", peer,
                          " is not load/store reachable from rank ", backend_->getRank(),
                          " (NVLink peers only); reach it with put");
    ptr = *p;
  }
  // The view keeps the window (and so NCCL's mapping of it) alive.
  std::shared_ptr<nccl_core::Window> keep = window_;
  return at::from_blob(ptr, {numel}, [keep](void*) {}, options);
}

c10d::WindowAttr GroupWindow::get_attr(int64_t peer_rank) {
  const nccl_core::Window& w = registered("get_attr");
  int peer = peer_index(peer_rank, "nccl_core window get_attr: peer_rank");
  bool mapped = peer == backend_->getRank() || w.peer_pointer(peer, 0).has_value();
  c10d::WindowAttr attr;
  attr.access_type = mapped ? c10d::WindowAccessType::UNIFIED : c10d::WindowAccessType::SEPARATE;
  return attr;
}

}  // namespace nccl_core

#endif  // NCCL_CORE_TORCH >= 215
