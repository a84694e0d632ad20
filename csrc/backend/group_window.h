// A group's one-sided window as torch.distributed hands it out (torch >= 2.15:
// dist._new_window, c10d::Window): one tensor per rank registered
// collectively as an NCCL COLL_SYMMETRIC window (csrc/comm's Window), and
// put / signal / wait_signal over the communicator's one-sided route
// (csrc/rma: nccl_core's kernels for load/store peers, NCCL's own calls for
// the others), each a Work the backend launches like any op.
//
// Every rank's (bytes, dtype) is exchanged at registration, in the same
// all-gather as the window's sizes: a put is checked against the
// destination's window before anything is enqueued.  put() signals its
// destination (NCCL's put cannot go without), signal() adds one more;
// wait_signal() waits for one signal from the peer.  map_remote_tensor()
// gives a peer's tensor where that peer is load/store reachable (NVLink), the
// own rank's anywhere; get_attr() says UNIFIED there, SEPARATE elsewhere.
#pragma once

#if NCCL_CORE_TORCH >= 215

#include <torch/csrc/distributed/c10d/Window.hpp>

#include <memory>
#include <vector>

#include "backend/backend.h"

namespace nccl_core {

class Window;

class GroupWindow final : public c10d::Window {
 public:
  explicit GroupWindow(c10::intrusive_ptr<Backend> backend);
  ~GroupWindow() override;

  void tensor_register(const at::Tensor& tensor, bool owning = true) override;
  void tensor_deregister() override;
  c10::intrusive_ptr<c10d::Work> put(const at::Tensor& tensor, int64_t dst_rank,
                                     int64_t target_offset_nelems, bool async_op,
                                     const c10d::PutOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> signal(int64_t peer_rank, bool async_op,
                                        const c10d::SignalOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> wait_signal(int64_t peer_rank, bool async_op,
                                             const c10d::WaitSignalOptions& opts) override;
  at::Tensor map_remote_tensor(int64_t rank) override;
  c10d::WindowAttr get_attr(int64_t peer_rank) override;

 private:
  struct Peer {
    size_t bytes;
    at::ScalarType dtype;
  };
  const nccl_core::Window& registered(const char* what) const;
  int peer_index(int64_t rank, const char* what) const;

  c10::intrusive_ptr<Backend> backend_;
  std::shared_ptr<nccl_core::Window> window_;
  std::vector<Peer> peers_;  // every rank's registered tensor, by rank
  at::Tensor tensor_;        // this rank's registered tensor (held where owning)
};

}  // namespace nccl_core

#endif  // NCCL_CORE_TORCH >= 215
