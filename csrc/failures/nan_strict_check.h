// The strict NaN check (NCCL_CORE_NAN_CHECK=strict, Options.nan_check_strict):
// the data an op sends is checked for NaN before NCCL sees it, on the op's
// stream.  The default check (nan_watch.h) never waits on the host; this
// one does, so that it can refuse the op.
//
// Outside CUDA graph capture the check waits for its result and refuses the
// op with a ValueError naming the op, its sequence number and the first NaN's
// index: nothing is sent, and this rank's peers then time out in the op as
// with any rank that skips a collective.  During capture the host cannot wait:
// a device-side assert fires on replay instead (as backend nccl's trap does),
// which ends the process.  Integer and bool data cannot hold NaN and are not
// read.  The cost is a reduction kernel and a host wait per op.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace nccl_core {

// Runs on the current stream.  `capturing`: the stream is being captured.
void check_for_nan(const std::vector<at::Tensor>& tensors, const char* op, uint64_t seq,
                   bool capturing);

}  // namespace nccl_core
