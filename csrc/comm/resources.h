// Resources a Communicator owns: registered buffers, windows and PreMulSum
// reduction ops (device communicators live in device/dev_comm.h).
//
// Each resource is tracked by its communicator, which is its one owner:
// `close()` releases it through NCCL (idempotent), and the communicator
// closes every resource before it is finalized or destroyed.  After an abort
// NCCL has already freed them, so they are only marked closed.  A resource
// keeps the memory it refers to alive until it is closed.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Storage.h>
#include <nccl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace nccl_core {

class Communicator;

class Resource {
 public:
  virtual ~Resource() = default;
  Resource(const Resource&) = delete;
  Resource& operator=(const Resource&) = delete;

  // Releases through NCCL and stops tracking; later calls do nothing.
  void close();
  // close() for an owner that knows no queued kernel uses the memory any
  // more (it waited for its own): no device-wide wait, which could sit
  // behind another group's stuck kernel.
  void close_unused();
  bool is_valid() const;
  // "RegisteredBufferHandle", ... (the Python class name, for messages).
  const char* kind() const { return kind_; }
  // The owning communicator, or nullptr once it is gone.
  std::shared_ptr<Communicator> owner() const { return owner_.lock(); }

 protected:
  Resource(std::shared_ptr<Communicator> owner, const char* kind);
  // Throws NcclInvalid naming the resource when it has been closed.
  void ensure_valid() const;
  // NCCL-side release; called once, with the communicator still live.
  virtual void release(Communicator& comm) = 0;
  // Drops memory kept alive for NCCL.
  virtual void drop_memory() {}
  // Whether kernels queued on any stream may still use memory this resource
  // maps or keeps alive: close() then waits for the device first.
  virtual bool needs_quiet() const { return false; }

 private:
  friend class Communicator;
  // The communicator was aborted: NCCL freed everything; just mark closed.
  void forget();
  void close_after(bool quiesce);

  std::weak_ptr<Communicator> owner_;
  const char* kind_;
  mutable std::mutex mutex_;
  bool valid_ = true;
};

// ncclCommRegister: zero-copy registration of a user buffer.
class RegisteredBuffer final : public Resource {
 public:
  static std::shared_ptr<RegisteredBuffer> create(const std::shared_ptr<Communicator>& comm,
                                                  void* ptr, size_t size, c10::Storage keep);
  void* handle() const;
  size_t size() const { return size_; }
  void* ptr() const { return ptr_; }

 private:
  RegisteredBuffer(std::shared_ptr<Communicator> comm, void* ptr, size_t size,
                   void* handle, c10::Storage keep);
  void release(Communicator& comm) override;
  void drop_memory() override { keep_ = c10::Storage(); }
  bool needs_quiet() const override { return true; }

  void* ptr_;
  size_t size_;
  void* handle_;
  c10::Storage keep_;
};

// ncclCommWindowRegister: a symmetric window for one-sided access.
class Window final : public Resource {
 public:
  // Collective.  Returns nullptr where NCCL cannot register windows here.
  // Every rank's size is exchanged first (one all-gather), unless the caller
  // already did and passes them as `sizes`.
  static std::shared_ptr<Window> create(const std::shared_ptr<Communicator>& comm, void* ptr,
                                        size_t size, int flags, c10::Storage keep,
                                        std::vector<size_t> sizes = {});
  // NcclInvalid for unknown WindowFlag bits, NcclUnsupported for a flag the
  // loaded NCCL does not know (it would ignore it).  `create` checks too;
  // callers check first when something collective precedes `create`.
  static void check_flags(long long flags);
  ncclWindow_t handle() const;
  // This rank's window, in bytes.
  size_t size() const { return size_; }
  // `peer`'s window, in bytes (every rank's size is exchanged at
  // registration: a peer may register less than this rank).
  size_t peer_size(int peer) const;
  // The smallest window of any rank (what reads of every rank's copy fit).
  size_t min_size() const { return min_size_; }
  int flags() const { return flags_; }
  void* user_ptr() const;
  // Device address of `lsa_rank`'s copy of this window (+offset).
  void* lsa_pointer(int lsa_rank, size_t offset) const;
  // Same by world rank; nullopt when `peer` is not load/store reachable.
  std::optional<void*> peer_pointer(int peer, size_t offset) const;
  // Multicast address; nullopt when NVLink multicast is not available.
  std::optional<void*> lsa_multimem_pointer(size_t offset) const;
  // Same through a team's multicast base (DevComm::multimem_handle; NCCL >=
  // 2.29.2); nullopt where this communicator has no NVLink multicast.
  std::optional<void*> multimem_pointer(void* mc_base_ptr, size_t offset) const;
  // Ranks reachable by load/store (the LSA team) and this rank's index in it.
  int lsa_size() const { return lsa_size_; }
  int lsa_rank() const { return lsa_rank_; }

 private:
  Window(std::shared_ptr<Communicator> comm, void* ptr, size_t size, int flags,
         ncclWindow_t win, c10::Storage keep, std::vector<size_t> sizes);
  void release(Communicator& comm) override;
  void drop_memory() override { keep_ = c10::Storage(); }
  bool needs_quiet() const override { return true; }
  // `offset` lies inside a window of `limit` bytes (a peer's size).
  void check_offset(size_t offset, size_t limit) const;
  void learn_layout(ncclComm_t comm);

  void* ptr_;
  size_t size_;
  int flags_;
  ncclWindow_t win_;
  c10::Storage keep_;
  std::vector<size_t> sizes_;  // every rank's size, by rank
  size_t min_size_ = 0;
  int lsa_size_ = 1;
  int lsa_rank_ = 0;
  int world_rank_ = 0;
  // NCCL 2.28 has no host-side pointer queries: the window's device-side
  // descriptor is read once (see window_layout.cpp).
  uintptr_t lsa_flat_base_ = 0;
  uint32_t stride_4g_ = 0;
};

// ncclRedOpCreatePreMulSum: output = scalar * sum(inputs).
class CustomRedOp final : public Resource {
 public:
  // `scalar` holds one element of `type`: a CPU tensor is read now
  // (ncclScalarHostImmediate), a CUDA tensor each time the op runs
  // (ncclScalarDevice), so it is kept alive with the op.
  static std::shared_ptr<CustomRedOp> create(const std::shared_ptr<Communicator>& comm,
                                             const at::Tensor& scalar, ncclDataType_t type);
  ncclRedOp_t op() const;
  ncclDataType_t type() const { return type_; }
  ncclScalarResidence_t residence() const { return residence_; }
  // The factor as created (CPU or CUDA tensor of one element).
  const at::Tensor& scalar() const { return scalar_; }

 private:
  CustomRedOp(std::shared_ptr<Communicator> comm, ncclRedOp_t op, ncclDataType_t type,
              ncclScalarResidence_t residence, at::Tensor scalar);
  void release(Communicator& comm) override;

  ncclRedOp_t op_;
  ncclDataType_t type_;
  ncclScalarResidence_t residence_;
  at::Tensor scalar_;
};

} // namespace nccl_core
