// Collectives of the nccl_core backend: reductions, broadcast, barrier (the
// gathers and scatter are in gathers.cpp).
#include <ATen/ATen.h>

#include "backend/backend.h"
#include "backend/launch.h"
#include "collectives/path_choice.h"
#include "collectives/torch_checks.h"
#include "collectives/nccl_calls.h"
#include "collectives/one_rank.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "nccl/seam.h"
#include "util/checked.h"

namespace nccl_core {

using collectives::Check;

using c10d::OpType;


namespace {

// A group of one rank reduces nothing (collectives/one_rank.h): the result is
// the input, times the factor of PREMUL_SUM (validated by reduce_op).  Runs on
// the current stream, which is the call's.
void reduce_without_nccl(const c10d::ReduceOp& op, const at::Tensor& in, at::Tensor out) {
  if (!out.is_same(in)) {
    out.copy_(in.reshape(out.sizes()));
  }
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
    return;
  }
  // The factor in the tensor's (real) type, as NCCL multiplies.
  auto* sup = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  auto real = out.is_complex() ? at::toRealValueType(out.scalar_type()) : out.scalar_type();
  if (sup->tensor_factor.defined()) {
    out.mul_(sup->tensor_factor.to(out.device(), real).reshape({}));
  } else {
    out.mul_(at::scalar_tensor(sup->double_factor, at::TensorOptions().dtype(real)));
  }
}

// reduce_without_nccl for a group of `size` ranks where it reduces without
// NCCL (tried once the fast path declined the call); empty for the others.
collectives::OneRankFallback one_rank_fallback(int size, const c10d::ReduceOp& op,
                                               const at::Tensor& in, const at::Tensor& out) {
  if (!one_rank::reduces_without_nccl(size)) {
    return {};
  }
  return [&op, in, out] {
    reduce_without_nccl(op, in, out);
    return true;
  };
}

}  // namespace

Buf Backend::buf(const at::Tensor& t, const char* op) const {
  torch_checks::usable(t, op, device_);
  if (t.is_complex()) {
    auto real = at::toRealValueType(t.scalar_type());
    return Buf{t.data_ptr(),
               checked::mul<raise_value_error>(
                   checked::narrow<size_t, raise_value_error>(t.numel(), "element count"), 2,
                   "complex element count"),
               types::to_nccl_or_throw(real)};
  }
  auto type = types::to_nccl(t.scalar_type());
  if (!type) {
    C10_THROW_ERROR(TypeError, concat("nccl_core ", op, ": dtype ", t.scalar_type(),
                                      " is not supported by NCCL"));
  }
  return Buf{t.data_ptr(), checked::narrow<size_t, raise_value_error>(t.numel(), "element count"),
             *type};
}

ncclRedOp_t Backend::reduce_op(const c10d::ReduceOp& op, const at::Tensor& t,
                               ncclDataType_t type, Work& work,
                               const char* what) {
  if (auto mapped = torch_checks::reduce_op(op, t, type, what)) {
    return *mapped;
  }
  // PREMUL_SUM (its factor checked): output = factor * sum(inputs).
  auto* sup = static_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  ncclComm_t comm = comm_->get();
  ncclRedOp_t out;
  auto real_type = t.is_complex() ? at::toRealValueType(t.scalar_type()) : t.scalar_type();
  if (sup->tensor_factor.defined()) {
    // NCCL reads the device scalar while the collective runs, and it may be
    // the caller's own tensor (no copy): kept like the call's inputs.
    at::Tensor factor = sup->tensor_factor.to(t.device(), real_type).contiguous();
    work.keep_like_inputs(factor);
    NCCL_CORE_CHECK(comm, nccl().RedOpCreatePreMulSum(&out, factor.data_ptr(), type,
                                                   ncclScalarDevice, comm));
  } else {
    // A host scalar is read as sizeof(type) bytes: convert to that type.
    at::Tensor scalar = at::scalar_tensor(sup->double_factor,
                                          at::TensorOptions().dtype(real_type));
    NCCL_CORE_CHECK(comm,
                    nccl().RedOpCreatePreMulSum(&out, scalar.data_ptr(), type,
                                             ncclScalarHostImmediate, comm));
  }
  redops_.push_back(out);
  return out;
}


WorkPtr Backend::broadcast(std::vector<at::Tensor>& tensors,
                           const c10d::BroadcastOptions& opts) {
  torch_checks::one_tensor(tensors, "broadcast");
  auto& t = tensors[0];
  int root = torch_checks::root(opts.rootRank, size_, "broadcast");
  auto dev = pick_device(&t);
  CallOpts call = call_opts(opts);
  call.sends = opts.rootRank == rank_;
  return launch(OpType::BROADCAST, dev, {}, {t}, call, "broadcast",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  Buf b = buf(t, "broadcast");
                  // Bytes that would wrap are refused here, as torch's ValueError.
                  (void)checked::bytes<raise_value_error>(b.count, types::element_size(b.type),
                                                          "broadcast bytes");
                  collectives::broadcast_on_a_path(on(c, s), fast_path(), b.ptr,
                                                   b.ptr, b.count, b.type, root);
                });
}

WorkPtr Backend::allreduce(std::vector<at::Tensor>& tensors,
                           const c10d::AllreduceOptions& opts) {
  torch_checks::one_tensor(tensors, "allreduce");
  auto& t = tensors[0];
  auto dev = pick_device(&t);
  return launch(OpType::ALLREDUCE, dev, {}, {t}, call_opts(opts), "allreduce",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  Buf b = buf(t, "allreduce");
                  ncclRedOp_t op = reduce_op(opts.reduceOp, t, b.type, w, "allreduce");
                  collectives::all_reduce_on_a_path(on(c, s), fast_path(), b.ptr,
                                                    b.ptr, b.count, b.type, op,
                                                    one_rank_fallback(size_, opts.reduceOp, t, t));
                });
}

WorkPtr Backend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors,
    const c10d::AllreduceCoalescedOptions& opts) {
  torch_checks::allreduce_coalesced(tensors);
  auto dev = pick_device(&tensors[0]);
  return launch(OpType::ALLREDUCE_COALESCED, dev, {}, tensors, call_opts(opts),
                "allreduce_coalesced",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  std::vector<Buf> bufs;
                  std::vector<ncclRedOp_t> ops;
                  for (auto& t : tensors) {
                    bufs.push_back(buf(t, "allreduce_coalesced"));
                    ops.push_back(reduce_op(opts.reduceOp, t, bufs.back().type, w,
                                            "allreduce_coalesced"));
                  }
                  if (one_rank::reduces_without_nccl(size_)) {
                    for (auto& t : tensors) {
                      reduce_without_nccl(opts.reduceOp, t, t);
                    }
                    return;
                  }
                  NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                  for (size_t i = 0; i < bufs.size(); ++i) {
                    auto& b = bufs[i];
                    collectives::all_reduce(on(c, s, Check::kGrouped), b.ptr, b.ptr, b.count, b.type,
                                            ops[i]);
                  }
                  c.call(nccl().GroupEnd(), "ncclGroupEnd");
                });
}

WorkPtr Backend::reduce(std::vector<at::Tensor>& tensors,
                        const c10d::ReduceOptions& opts) {
  torch_checks::one_tensor(tensors, "reduce");
  auto& t = tensors[0];
  int root = torch_checks::root(opts.rootRank, size_, "reduce");
  auto dev = pick_device(&t);
  return launch(OpType::REDUCE, dev, {}, {t}, call_opts(opts), "reduce",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  Buf b = buf(t, "reduce");
                  ncclRedOp_t op = reduce_op(opts.reduceOp, t, b.type, w, "reduce");
                  if (one_rank::reduces_without_nccl(size_)) {
                    reduce_without_nccl(opts.reduceOp, t, t);
                    return;
                  }
                  collectives::reduce(on(c, s), b.ptr, b.ptr, b.count, b.type, op,
                                      root);
                });
}

WorkPtr Backend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                      const c10d::ReduceScatterOptions& opts) {
  torch_checks::reduce_scatter_tensor(input, output, size_);
  auto dev = pick_device(&input);
  return launch(OpType::_REDUCE_SCATTER_BASE, dev, {input}, {output}, call_opts(opts),
                "reduce_scatter_tensor",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  Buf in = buf(input, "reduce_scatter_tensor");
                  Buf out = buf(output, "reduce_scatter_tensor");
                  ncclRedOp_t op = reduce_op(opts.reduceOp, input, in.type, w,
                                             "reduce_scatter_tensor");
                  collectives::reduce_scatter_on_a_path(on(c, s), fast_path(),
                                                        in.ptr, out.ptr, out.count, out.type, op,
                                                        one_rank_fallback(size_, opts.reduceOp,
                                                                          input, output));
                });
}

WorkPtr Backend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                std::vector<std::vector<at::Tensor>>& inputs,
                                const c10d::ReduceScatterOptions& opts) {
  bool even = torch_checks::reduce_scatter(outputs, inputs, size_, rank_);
  auto& output = outputs[0];
  auto& ins = inputs[0];
  auto dev = pick_device(&output);
  return launch(OpType::REDUCE_SCATTER, dev, ins, {output}, call_opts(opts),
                "reduce_scatter",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  Buf out = buf(output, "reduce_scatter");
                  std::vector<Buf> in_bufs;
                  for (auto& i : ins) {
                    in_bufs.push_back(buf(i, "reduce_scatter"));
                  }
                  if (one_rank::reduces_without_nccl(size_)) {
                    reduce_op(opts.reduceOp, output, out.type, w, "reduce_scatter");
                    reduce_without_nccl(opts.reduceOp, ins[0], output);
                    return;
                  }
                  if (!even) {
                    // Uneven sizes: input r is reduced to rank r, one NCCL
                    // group of reduces (the recv buffer matters at the root only).
                    ncclRedOp_t op = reduce_op(opts.reduceOp, output, out.type, w,
                                               "reduce_scatter");
                    NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                    for (int r = 0; r < size_; ++r) {
                      void* recv = r == rank_ ? out.ptr : in_bufs[r].ptr;
                      collectives::reduce(on(c, s, Check::kGrouped), in_bufs[r].ptr, recv,
                                          in_bufs[r].count, out.type, op, r);
                    }
                    c.call(nccl().GroupEnd(), "ncclGroupEnd");
                    return;
                  }
                  at::Tensor flat = at::stack(ins).contiguous();
                  w.stash.push_back(flat);
                  ncclRedOp_t op = reduce_op(opts.reduceOp, output, out.type, w,
                                             "reduce_scatter");
                  collectives::reduce_scatter(on(c, s), flat.data_ptr(), out.ptr,
                                              out.count, out.type, op);
                });
}

WorkPtr Backend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  torch_checks::reduce_scatter_tensor_coalesced(outputs, inputs, size_);
  auto dev = pick_device(&inputs[0]);
  return launch(OpType::COALESCED, dev, inputs, outputs, call_opts(opts),
                "reduce_scatter_tensor_coalesced",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  std::vector<Buf> ins, outs;
                  std::vector<ncclRedOp_t> ops;
                  for (size_t i = 0; i < inputs.size(); ++i) {
                    ins.push_back(buf(inputs[i], "reduce_scatter_tensor_coalesced"));
                    outs.push_back(buf(outputs[i], "reduce_scatter_tensor_coalesced"));
                    ops.push_back(reduce_op(opts.reduceOp, inputs[i], ins.back().type,
                                            w, "reduce_scatter_tensor_coalesced"));
                  }
                  if (one_rank::reduces_without_nccl(size_)) {
                    for (size_t i = 0; i < inputs.size(); ++i) {
                      reduce_without_nccl(opts.reduceOp, inputs[i], outputs[i]);
                    }
                    return;
                  }
                  NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                  for (size_t i = 0; i < ins.size(); ++i) {
                    collectives::reduce_scatter(on(c, s, Check::kGrouped), ins[i].ptr, outs[i].ptr,
                                                outs[i].count, outs[i].type, ops[i]);
                  }
                  c.call(nccl().GroupEnd(), "ncclGroupEnd");
                });
}

WorkPtr Backend::barrier(const c10d::BarrierOptions& opts) {
  at::Device dev = pick_device(nullptr);
  if (!opts.device_ids.empty()) {
    dev = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(opts.device_ids[0]));
  }
  communicator(dev);
  at::Tensor token = at::zeros({1}, at::TensorOptions().device(dev).dtype(at::kFloat));
  auto work = launch(OpType::BARRIER, dev, {}, {token}, call_opts(opts), "barrier",
                     [&](Communicator& c, cudaStream_t s, Work&) {
                       collectives::all_reduce({c, s, Check::kWait}, token.data_ptr(),
                                               token.data_ptr(), 1, ncclFloat32, ncclSum);
                     });
  // barrier() blocks the host in wait(), as with backend nccl.
  static_cast<Work*>(work.get())->blocks_host = true;
  return work;
}

} // namespace nccl_core
