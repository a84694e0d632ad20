// Gathers and scatter of the nccl_core backend: all_gather (into a tensor,
// list-shaped, coalesced), gather (into a list, into one tensor) and scatter.
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

// One flat tensor holding `n` copies of `like`'s shape, allocated on the
// current (backend) stream.
at::Tensor flat_like(const at::Tensor& like, int64_t n) {
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), like.sizes().begin(), like.sizes().end());
  return at::empty(shape, like.options());
}

}  // namespace

WorkPtr Backend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                 const c10d::AllgatherOptions& opts) {
  torch_checks::all_gather_into_tensor(input, output, size_);
  auto dev = pick_device(&input);
  return launch(OpType::_ALLGATHER_BASE, dev, {input}, {output}, call_opts(opts),
                "all_gather_into_tensor",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  Buf in = buf(input, "all_gather_into_tensor");
                  Buf out = buf(output, "all_gather_into_tensor");
                  // Bytes that would wrap are refused here, as torch's ValueError.
                  (void)checked::bytes<raise_value_error>(
                      in.count, types::element_size(in.type), "all_gather bytes per rank");
                  collectives::all_gather_on_a_path(on(c, s), fast_path(), in.ptr,
                                                    out.ptr, in.count, in.type);
                });
}

WorkPtr Backend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                           std::vector<at::Tensor>& inputs,
                           const c10d::AllgatherOptions& opts) {
  bool even = torch_checks::all_gather(outputs, inputs, size_, rank_);
  auto& input = inputs[0];
  auto& outs = outputs[0];
  auto dev = pick_device(&input);
  return launch(OpType::ALLGATHER, dev, {input}, outs, call_opts(opts), "all_gather",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  Buf in = buf(input, "all_gather");
                  std::vector<Buf> out_bufs;
                  for (auto& o : outs) {
                    out_bufs.push_back(buf(o, "all_gather"));
                  }
                  if (!even) {
                    // Uneven sizes: each rank broadcasts its input into
                    // everyone's output of its index, in one NCCL group.
                    NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                    for (int r = 0; r < size_; ++r) {
                      const void* send = r == rank_ ? in.ptr : out_bufs[r].ptr;
                      collectives::broadcast(on(c, s, Check::kGrouped), send, out_bufs[r].ptr,
                                             out_bufs[r].count, in.type, r);
                    }
                    c.call(nccl().GroupEnd(), "ncclGroupEnd");
                    return;
                  }
                  at::Tensor flat = flat_like(input, size_);
                  w.stash.push_back(flat);
                  collectives::all_gather(on(c, s), in.ptr, flat.data_ptr(), in.count,
                                          in.type);
                  w.epilogue.push_back([flat, outs = outs, n = size_]() mutable {
                    for (int r = 0; r < n; ++r) {
                      outs[r].copy_(flat[r].view_as(outs[r]), /*non_blocking=*/true);
                    }
                  });
                });
}

WorkPtr Backend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs,
    std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  torch_checks::allgather_coalesced(outputs, inputs, size_);
  std::vector<at::Tensor> all_outs;
  for (auto& list : outputs) {
    all_outs.insert(all_outs.end(), list.begin(), list.end());
  }
  auto dev = pick_device(&inputs[0]);
  return launch(OpType::ALLGATHER_COALESCED, dev, inputs, all_outs, call_opts(opts),
                "allgather_coalesced",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  std::vector<at::Tensor> flats;
                  NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                  for (auto& in : inputs) {
                    Buf b = buf(in, "allgather_coalesced");
                    flats.push_back(flat_like(in, size_));
                    collectives::all_gather(on(c, s, Check::kGrouped), b.ptr, flats.back().data_ptr(),
                                            b.count, b.type);
                  }
                  c.call(nccl().GroupEnd(), "ncclGroupEnd");
                  for (auto& f : flats) {
                    w.stash.push_back(f);
                  }
                  w.epilogue.push_back([flats, outs = outputs, n = size_]() mutable {
                    for (size_t i = 0; i < flats.size(); ++i) {
                      for (int r = 0; r < n; ++r) {
                        outs[i][r].copy_(flats[i][r].view_as(outs[i][r]), true);
                      }
                    }
                  });
                });
}

WorkPtr Backend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  torch_checks::allgather_into_tensor_coalesced(outputs, inputs, size_);
  auto dev = pick_device(&inputs[0]);
  return launch(OpType::COALESCED, dev, inputs, outputs, call_opts(opts),
                "allgather_into_tensor_coalesced",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  NCCL_CORE_CHECK(c.get(), nccl().GroupStart());
                  for (size_t i = 0; i < inputs.size(); ++i) {
                    Buf in = buf(inputs[i], "allgather_into_tensor_coalesced");
                    Buf out = buf(outputs[i], "allgather_into_tensor_coalesced");
                    collectives::all_gather(on(c, s, Check::kGrouped), in.ptr, out.ptr, in.count,
                                            in.type);
                  }
                  c.call(nccl().GroupEnd(), "ncclGroupEnd");
                });
}

WorkPtr Backend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                        std::vector<at::Tensor>& inputs,
                        const c10d::GatherOptions& opts) {
  torch_checks::one_tensor(inputs, "gather");
  auto& input = inputs[0];
  int root = torch_checks::root(opts.rootRank, size_, "gather");
  torch_checks::gather(outputs, input, size_, rank_ == root);
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    outs = outputs[0];
  }
  auto dev = pick_device(&input);
  return launch(OpType::GATHER, dev, {input}, outs, call_opts(opts), "gather",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  Buf in = buf(input, "gather");
                  void* recv = nullptr;
                  at::Tensor flat;
                  if (rank_ == root) {
                    flat = flat_like(input, size_);
                    w.stash.push_back(flat);
                    recv = flat.data_ptr();
                  }
                  collectives::gather(on(c, s), in.ptr, recv, in.count, in.type, root);
                  w.epilogue.push_back([flat, outs = outs]() mutable {
                    for (size_t r = 0; r < outs.size(); ++r) {
                      outs[r].copy_(flat[r].view_as(outs[r]), true);
                    }
                  });
                });
}

#if NCCL_CORE_TORCH >= 215
// dist.gather_single: ncclGather straight into the root's flat output, no
// copy; torch's canonical gather_single forwards here.
WorkPtr Backend::gather_into_tensor(at::Tensor& output, at::Tensor& input,
                                    const c10d::GatherOptions& opts) {
  int root = torch_checks::root(opts.rootRank, size_, "gather_single");
  const bool is_root = rank_ == root;
  torch_checks::gather_single(input, output, size_, is_root);
  std::vector<at::Tensor> outs;
  if (is_root) {
    outs.push_back(output);
  }
  auto dev = pick_device(&input);
  return launch(OpType::GATHER, dev, {input}, outs, call_opts(opts), "gather_single",
                [&](Communicator& c, cudaStream_t s, Work&) {
                  Buf in = buf(input, "gather_single");
                  void* recv = is_root ? buf(output, "gather_single").ptr : nullptr;
                  collectives::gather(on(c, s), in.ptr, recv, in.count, in.type, root);
                });
}
#endif

WorkPtr Backend::scatter(std::vector<at::Tensor>& outputs,
                         std::vector<std::vector<at::Tensor>>& inputs,
                         const c10d::ScatterOptions& opts) {
  torch_checks::one_tensor(outputs, "scatter");
  auto& output = outputs[0];
  int root = torch_checks::root(opts.rootRank, size_, "scatter");
  torch_checks::scatter(inputs, output, size_, rank_ == root);
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    ins = inputs[0];
  }
  auto dev = pick_device(&output);
  CallOpts call = call_opts(opts);
  call.sends = rank_ == root;
  return launch(OpType::SCATTER, dev, ins, {output}, call, "scatter",
                [&](Communicator& c, cudaStream_t s, Work& w) {
                  Buf out = buf(output, "scatter");
                  const void* send = nullptr;
                  if (rank_ == root) {
                    at::Tensor flat = at::stack(ins).contiguous();
                    w.stash.push_back(flat);
                    send = flat.data_ptr();
                  }
                  collectives::scatter(on(c, s), send, out.ptr, out.count, out.type,
                                       root);
                });
}

} // namespace nccl_core
