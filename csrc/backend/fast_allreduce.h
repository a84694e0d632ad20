// An optional device-API path for small all_reduce calls of a group.
//
// When a group's `fast_allreduce_max_bytes` is set, all_reduce calls up to
// that size run as one kernel (device/collectives.h): each rank copies its
// input into its slot of a per-group symmetric scratch window, crosses an LSA
// barrier, reduces every rank's slot into its output and crosses a second
// barrier.  Whether a call takes this path depends only on its arguments and
// on the group (LSA team = whole group, kernels built for the loaded NCCL),
// never on where the user's tensor lives, so every rank decides the same and
// no registration of user memory needs agreeing on.  The scratch window and
// the device communicator are created at the first eligible call, which every
// rank reaches together.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

namespace nccl_core {

class Communicator;
class DevComm;
class Window;

class FastAllReduce {
 public:
  explicit FastAllReduce(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Runs the call on `stream` and returns true if it is eligible; false (and
  // nothing enqueued) otherwise.  `op` is what the backend would hand NCCL.
  bool try_run(Communicator& comm, void* ptr, size_t count, ncclDataType_t type, ncclRedOp_t op,
               cudaStream_t stream);

 private:
  bool eligible(Communicator& comm, size_t count, ncclDataType_t type, ncclRedOp_t op);
  void set_up(Communicator& comm);

  const size_t max_bytes_;
  int whole_lsa_ = -1;  // -1 unknown, 0 no, 1 yes
  bool disabled_ = false;
  std::shared_ptr<DevComm> dev_;
  std::shared_ptr<Window> win_;
  at::Tensor scratch_;
};

} // namespace nccl_core
