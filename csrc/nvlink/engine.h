// The fast path of a group: small collectives as one kernel of our own
// (kernels.h) instead of an NCCL launch, where every rank of the group can
// load and store every other rank's memory (one NVLink domain).
//
// Enabled by `fast_path_max_bytes` (0 = off).  A call takes the path when the
// bytes it stages (its input) fit that size and its type and operator are
// covered; whether it does depends only on the call's arguments and on the
// group, never on where the user's tensors live, so every rank decides the
// same and no registration of user memory needs agreeing on.  The scratch
// window is created at the first eligible call, which every rank reaches
// together; a first eligible call under CUDA graph capture goes to NCCL
// instead (no allocation or registration may happen while capturing).
//
// The engine also runs the push all-reduce of larger calls (push.h), chosen
// the same way (arguments and group only); its kernels share the engine's
// call order and completion reports.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "nvlink/kernels.h"
#include "nvlink/launch_event.h"
#include "nvlink/path_table.h"
#include "nvlink/progress.h"
#include "nvlink/push.h"
#include "nvlink/push_staging.h"

namespace nccl_core {

class Communicator;
class Window;

namespace nvlink {

class Engine {
 public:
  // On the group's device (the progress word is allocated here).  `paths`:
  // which calls take the fast path and the push (path_table.h).
  explicit Engine(const GroupPaths& paths)
      : paths_(paths), max_bytes_(paths.largest_fast()), push_(paths.push),
        progress_(std::make_shared<Progress>()) {}

  // Each runs the call on `stream` and returns true when it is eligible;
  // false, with nothing enqueued, otherwise.  `op` is the ncclRedOp_t the
  // backend would hand NCCL; counts are in elements of `type`.
  bool all_reduce(Communicator& comm, const void* in, void* out, size_t count,
                  ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream);
  bool reduce_scatter(Communicator& comm, const void* in, void* out, size_t count,
                      ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream);
  // Sizes in bytes: `bytes` per rank.
  bool all_gather(Communicator& comm, const void* in, void* out, size_t bytes,
                  cudaStream_t stream);
  bool all_to_all(Communicator& comm, const void* in, void* out, size_t bytes,
                  cudaStream_t stream);
  // `in` is read on `root` only, and may be `out`.
  bool broadcast(Communicator& comm, const void* in, void* out, size_t bytes, int root,
                 cudaStream_t stream);
  // All-reduce into `out` by pushing (push.h), for calls of the push's
  // sizes, types and ops whatever memory `out` lies in.  The push works in
  // place: an `in` other than `out` is first copied into `out` on `stream`,
  // so that whether a call is in place (which NCCL lets each rank choose)
  // does not choose its path.  The staging window is created, or grown, at
  // the first call that needs it (every rank makes the same calls), never
  // under graph capture.
  bool all_reduce_pushed(Communicator& comm, const void* in, void* out, size_t count,
                         ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream);
  const PushConfig& push_config() const { return push_; }
  const GroupPaths& paths() const { return paths_; }
  // Whether the scratch window is made, so that an eligible call costs a
  // launch and waits for nothing on the host.
  bool is_set_up() const;

  // Calls that took the path so far, staged and pushed; pushed ones alone.
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  uint64_t push_calls() const { return push_calls_.load(std::memory_order_relaxed); }

  // Completion reports (progress.h): the caller arms the engine for each
  // call; every kernel such a call launches outside graph capture gets a
  // ticket that it reports when it leaves.  `track`: the call's Work relies
  // on the report instead of an end event.  take_ticket() disarms and
  // returns the call's last ticket if tracked, else 0.
  // `seq`: the caller's sequence number of the call, which a mismatch
  // reports (0: the engine counts).  `collective`: the group's count of
  // collectives at this call, which goes into the signature peers compare
  // (kernels.h): not `seq`, which counts send/recv too, and those differ
  // between ranks (a pipeline's first stage only sends).
  void arm(bool track, uint64_t seq = 0, uint64_t collective = 0) {
    armed_ = true;
    track_ = track;
    seq_ = seq;
    collective_ = collective;
  }
  uint64_t take_ticket();
  const std::shared_ptr<Progress>& progress() const { return progress_; }

 private:
  // The group qualifies, `staged` bytes fit `op`'s limit, and the scratch
  // window is ready.
  bool ready(Communicator& comm, Coll op, size_t staged, cudaStream_t stream);
  // Notes whether `stream` is capturing a graph (once per call: set-up and
  // ordering depend on it).
  void observe(cudaStream_t stream);
  bool whole_group_reachable(Communicator& comm);
  void set_up(Communicator& comm, cudaStream_t stream);
  // Calls share the scratch window and its epochs, so they must run one after
  // another: a call on another stream than the last one first waits for it
  // (never across a capture boundary).  A graph's replays are ordered by the
  // stream they are launched on, as any collective of one communicator is:
  // replaying a graph that holds our calls at the same time as eager calls
  // on another stream, unordered, is the program's error, as it would be
  // with NCCL's own kernels (NCCL asks for one order of
  // operations per communicator).
  void follow(cudaStream_t stream);
  // After a launch on `stream`: what the next call on another stream waits for.
  void mark_launched(cudaStream_t stream);
  // The staging window holds `bytes` for this group (made, or remade larger).
  bool push_ready(Communicator& comm, size_t bytes, cudaStream_t stream);
  // Counts the call, orders it after the last one, draws its ticket.
  void start_call(Communicator& comm, cudaStream_t stream);
  // After a launch attempt: commits the call's ticket if it was launched.
  bool settle(bool launched);
  // The kernel's tag for this call: ticket, sequence number, signature of
  // (kind, type, op, size, root).
  CallTag tag(int kind, int type, int op, size_t size, int root) const;

  const GroupPaths paths_;
  const size_t max_bytes_;  // the largest staged call of any operation
  bool disabled_ = false;
  std::shared_ptr<Window> window_;
  at::Tensor scratch_;
  at::Tensor epoch_;
  Shared shared_{};
  std::atomic<uint64_t> calls_{0};
  const PushConfig push_;
  PushStaging push_staging_;
  bool push_captured_ = false;  // a graph holds a push on the current staging
  bool push_disabled_ = false;
  PushShared push_shared_{};
  std::atomic<uint64_t> push_calls_{0};
  std::shared_ptr<Progress> progress_;
  bool armed_ = false;
  bool track_ = false;
  uint64_t ticket_ = 0;       // of the kernel being launched
  uint64_t seq_ = 0;          // of the armed call (0: none given)
  uint64_t collective_ = 0;   // the group's collective count at it (0: none given)
  uint64_t last_ticket_ = 0;  // of the armed call's last launched kernel
  cudaStream_t last_stream_ = nullptr;  // of the current call
  bool capturing_ = false;              // the current call's stream is capturing
  // The last launch outside capture, on recorded_stream_, is marked by its
  // ticket (recorded_ticket_: the next call on another stream waits until
  // that ticket is reported, progress.h) or, for a launch without a ticket
  // or where the device cannot wait on values, by switch_event_.
  bool recorded_ = false;
  cudaStream_t recorded_stream_ = nullptr;
  uint64_t recorded_ticket_ = 0;
  LaunchEvent switch_event_;
  int device_ = -1;
};

}  // namespace nvlink
}  // namespace nccl_core
