#include "backend/fast_allreduce.h"

#include "comm/communicator.h"
#include "comm/resources.h"
#include "device/collectives.h"
#include "device/dev_comm.h"
#include "memory/allocator.h"
#include "nccl/api.h"
#include "nccl/newer.h"
#include "nccl/types.h"

namespace nccl_core {

namespace {

constexpr int kBarriers = 32;

bool kernel_type(ncclDataType_t t) {
  switch (t) {
    case ncclFloat32: case ncclFloat64: case ncclFloat16: case ncclBfloat16:
    case ncclInt8: case ncclUint8: case ncclInt32: case ncclInt64:
      return true;
    default:
      return false;
  }
}

bool floating(ncclDataType_t t) {
  return t == ncclFloat32 || t == ncclFloat64 || t == ncclFloat16 || t == ncclBfloat16;
}

} // namespace

bool FastAllReduce::eligible(Communicator& comm, size_t count, ncclDataType_t type,
                             ncclRedOp_t op) {
  if (disabled_ || count == 0 || !kernel_type(type) || static_cast<int>(op) > ncclAvg ||
      (op == ncclAvg && !floating(type)) || count * types::element_size(type) > max_bytes_) {
    return false;
  }
  if (whole_lsa_ < 0) {
    bool whole = false;
    if (device_kernels_match_loaded_nccl() && api::find_symbol("ncclTeamLsa") != nullptr) {
      auto team = api::require<newer::TeamLsaFn>("ncclTeamLsa", "fast all_reduce",
                                                 newer::kDeviceApiVersion)(comm.get());
      whole = team.nranks == comm.nranks() && comm.nranks() > 1;
    }
    whole_lsa_ = whole ? 1 : 0;
  }
  return whole_lsa_ == 1;
}

void FastAllReduce::set_up(Communicator& comm) {
  auto self = comm.shared_from_this();
  DevCommRequirements req;
  req.lsa_barrier_count = kBarriers;
  dev_ = DevComm::create(self, req);
  scratch_ = memory::empty({static_cast<int64_t>(max_bytes_)}, at::kByte, comm.device(), false);
  win_ = Window::create(self, scratch_.data_ptr(), max_bytes_, 0, scratch_.storage());
  if (!win_) {
    disabled_ = true;  // no windows on this platform: the same on every rank
  }
}

bool FastAllReduce::try_run(Communicator& comm, void* ptr, size_t count, ncclDataType_t type,
                            ncclRedOp_t op, cudaStream_t stream) {
  if (!eligible(comm, count, type, op)) {
    return false;
  }
  // Closed by close_all_resources() (on every rank, like any collective
  // resource call): set up again here, at the same call everywhere.
  if (!dev_ || !win_ || !dev_->is_valid() || !win_->is_valid()) {
    set_up(comm);
    if (disabled_) {
      return false;
    }
  }
  device::all_reduce(*dev_, *win_, 0, ptr, ptr, count, type, static_cast<int>(op), stream);
  return true;
}

} // namespace nccl_core
