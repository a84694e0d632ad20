// Point-to-point, all-to-all and coalescing blocks of the nccl_core backend.
#include <ATen/ATen.h>

#include "backend/backend.h"
#include "backend/launch.h"
#include "collectives/nccl_calls.h"
#include "collectives/path_choice.h"
#include "collectives/torch_checks.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "nccl/seam.h"
#include "util/checked.h"

namespace nccl_core {

using collectives::Check;

using c10d::OpType;


namespace {

// Element offsets of each rank's block along dim 0 for split sizes (rows).
// The splits were checked against dim 0 (torch_checks::all_to_all_single),
// so these stay inside the tensor; checked all the same, as user numbers.
std::vector<size_t> offsets(const std::vector<int64_t>& splits, size_t row) {
  std::vector<size_t> out(splits.size() + 1, 0);
  for (size_t i = 0; i < splits.size(); ++i) {
    size_t n = checked::mul<raise_value_error>(static_cast<size_t>(splits[i]), row,
                                               "nccl_core all_to_all_single: split elements");
    out[i + 1] = checked::add<raise_value_error>(out[i], n,
                                                 "nccl_core all_to_all_single: split offset");
  }
  return out;
}

} // namespace

WorkPtr Backend::alltoall_base(at::Tensor& output, at::Tensor& input,
                               std::vector<int64_t>& output_splits,
                               std::vector<int64_t>& input_splits,
                               const c10d::AllToAllOptions& opts) {
  bool even = torch_checks::all_to_all_single(input, output, input_splits, output_splits, size_);
  auto dev = pick_device(&input);
  CallOpts call = call_opts(opts);
  call.in_splits = &input_splits;
  call.out_splits = &output_splits;
  return launch(OpType::ALLTOALL_BASE, dev, {input}, {output}, call,
                "all_to_all_single",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  Buf in = buf(input, "all_to_all_single");
                  Buf out = buf(output, "all_to_all_single");
                  if (even) {
                    size_t per_peer = in.count / size_;
                    // Bytes that would wrap are refused here, as torch's ValueError.
                    (void)checked::bytes<raise_value_error>(
                        per_peer, types::element_size(in.type), "all_to_all_single bytes per peer");
                    collectives::all_to_all_on_a_path(on(c, s), fast_path(), in.ptr,
                                                      out.ptr, per_peer, in.type);
                    return;
                  }
                  // Elements per dim-0 row (complex counted as real pairs).
                  size_t in_row = input.size(0) ? in.count / input.size(0) : 0;
                  size_t out_row = output.size(0) ? out.count / output.size(0) : 0;
                  auto in_splits = input_splits.empty()
                      ? std::vector<int64_t>(size_, input.size(0) / size_)
                      : input_splits;
                  auto out_splits = output_splits.empty()
                      ? std::vector<int64_t>(size_, output.size(0) / size_)
                      : output_splits;
                  auto in_off = offsets(in_splits, in_row);
                  auto out_off = offsets(out_splits, out_row);
                  size_t esz = types::element_size(in.type);
                  auto* send = static_cast<char*>(in.ptr);
                  auto* recv = static_cast<char*>(out.ptr);
                  NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                  for (int r = 0; r < size_; ++r) {
                    size_t n_send = in_off[r + 1] - in_off[r];
                    size_t n_recv = out_off[r + 1] - out_off[r];
                    if (n_send > 0) {
                      collectives::send({c, s, Check::kGrouped}, send + in_off[r] * esz, n_send,
                                        in.type, r);
                    }
                    if (n_recv > 0) {
                      collectives::recv({c, s, Check::kGrouped}, recv + out_off[r] * esz, n_recv,
                                        out.type, r);
                    }
                  }
                  c.call(nccl().GroupEnd(), "ncclGroupEnd");
                });
}

WorkPtr Backend::alltoall(std::vector<at::Tensor>& outputs,
                          std::vector<at::Tensor>& inputs,
                          const c10d::AllToAllOptions& opts) {
  torch_checks::all_to_all(outputs, inputs, size_);
  auto dev = pick_device(&inputs[0]);
  return launch(OpType::ALLTOALL, dev, inputs, outputs, call_opts(opts), "all_to_all",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  std::vector<Buf> ins, outs;
                  for (int r = 0; r < size_; ++r) {
                    ins.push_back(buf(inputs[r], "all_to_all"));
                    outs.push_back(buf(outputs[r], "all_to_all"));
                  }
                  NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                  for (int r = 0; r < size_; ++r) {
                    collectives::send({c, s, Check::kGrouped}, ins[r].ptr, ins[r].count,
                                      ins[r].type, r);
                    collectives::recv({c, s, Check::kGrouped}, outs[r].ptr, outs[r].count,
                                      outs[r].type, r);
                  }
                  c.call(nccl().GroupEnd(), "ncclGroupEnd");
                });
}

WorkPtr Backend::send(std::vector<at::Tensor>& tensors, int dst, int /*tag*/) {
  torch_checks::point_to_point(tensors, dst, size_, "send");
  auto& t = tensors[0];
  auto dev = pick_device(&t);
  return launch(OpType::SEND, dev, {t}, {}, CallOpts{c10d::kUnsetTimeout}, "send",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  Buf b = buf(t, "send");
                  collectives::send({c, s, Check::kWait}, b.ptr, b.count, b.type, dst);
                });
}

WorkPtr Backend::recv(std::vector<at::Tensor>& tensors, int src, int /*tag*/) {
  torch_checks::point_to_point(tensors, src, size_, "recv");
  auto& t = tensors[0];
  auto dev = pick_device(&t);
  CallOpts call{c10d::kUnsetTimeout};
  call.sends = false;
  return launch(OpType::RECV, dev, {}, {t}, call, "recv",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  Buf b = buf(t, "recv");
                  collectives::recv({c, s, Check::kWait}, b.ptr, b.count, b.type, src);
                });
}

WorkPtr Backend::recvAnysource(std::vector<at::Tensor>& /*tensors*/,
                               int /*tag*/) {
  C10_THROW_ERROR(ValueError,
                  "nccl_core recv: receiving from any source is not possible "
                  "with NCCL; pass src= explicitly");
}

void Backend::startCoalescing() {
  NCCL_CORE_CHECK_STATE(!coalescing_,
              "nccl_core: startCoalescing inside an unfinished coalescing block");
  check_healthy();
  coalescing_ = true;
  coalesced_.reset();
  // NCCL's group opens once the communicator exists (open_group): NCCL defers
  // an init issued inside a group to the group's end, and our init waits for
  // it.  A block on a fresh group creates it at its first operation, on that
  // operation's device (torch does not tell startCoalescing the device).
  group_open_ = false;
  if (comm_) {
    open_group();
  }
}

void Backend::open_group() {
  if (coalescing_ && !group_open_) {
    NCCL_CORE_CHECK(nullptr, nccl().GroupStart());
    group_open_ = true;
  }
}

WorkPtr Backend::endCoalescing() {
  NCCL_CORE_CHECK_STATE(coalescing_, "nccl_core: endCoalescing without startCoalescing");
  coalescing_ = false;
  c10::intrusive_ptr<Work> work = std::move(coalesced_);
  coalesced_.reset();
  try {
    bool was_open = group_open_;
    group_open_ = false;
    if (!work) {
      // Nothing was enqueued: close the group and hand back a finished work.
      if (was_open) {
        NCCL_CORE_CHECK(nullptr, nccl().GroupEnd());
      }
      auto dev = pick_device(nullptr);
      auto comm = communicator(dev);
      auto empty = c10::make_intrusive<Work>(rank_, OpType::COALESCED, seq_.load(),
                                             dev, comm, options_->timeout,
                                             options_->blocking_wait);
      empty->op().record_end(*stream_);
      return empty;
    }
    comm_->run("ncclGroupEnd (endCoalescing)", [] { return nccl().GroupEnd(); });
    destroy_redops();
    {
      c10::cuda::CUDAStreamGuard on_stream(*stream_);
      work->run_epilogue();
    }
    work->drop_temporaries();  // the group has launched its kernels
    work->op().record_end(*stream_);
    work->op().close_record();
    if (!work->op().captured) {
      // A block runs on our stream: its tensors are held like an async call's.
      failures_->watchdog()->watch(work->op_state(), comm_, work->hold());
    }
    return work;
  } catch (const c10::Error&) {
    throw;
  } catch (...) {
    rethrow_as_dist_error("endCoalescing");
  }
}

} // namespace nccl_core
