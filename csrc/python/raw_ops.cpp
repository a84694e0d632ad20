// Bindings of the raw operations on Communicator (collectives/raw_ops.h): the
// nccl.core collectives and point-to-point calls.  They are bound as
// vectorcall methods (fastcall.h): their host cost is what a raw call is for.
#include <c10/cuda/CUDAGuard.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include "comm/communicator.h"
#include "collectives/one_rank.h"
#include "collectives/raw_ops.h"
#include "comm/resources.h"
#include "python/bind.h"
#include "python/coll_config.h"
#include "python/convert.h"
#include "python/fastcall.h"
#include "util/host_profile.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

// Runs an enqueue with the GIL released: it may wait for peers (a blocking
// communicator connecting, a window being made).
template <class Fn>
void without_gil(Fn&& fn) {
  py::gil_scoped_release release;
  fn();
}

// A buffer only `root` reads or writes (root < 0: every rank does); None or
// anything else is ignored on the other ranks.
std::optional<Buffer> on_root(const Communicator& c, int root, py::handle obj,
                                   const char* name) {
  if (root >= 0 && root != c.rank()) {
    return std::nullopt;
  }
  return as_optional_buffer(obj, name);
}

// The factor of a PreMulSum that runs as a SUM and then scales its output
// (collectives/one_rank.h), or nothing for every other call.
std::optional<at::Tensor> premul_factor_after_sum(const Communicator& c, py::handle op) {
  if (!one_rank::premul_runs_as_sum_then_scale(c.nranks(), raw::group_depth()) ||
      !py::isinstance<CustomRedOp>(op)) {
    return std::nullopt;
  }
  return op.cast<CustomRedOp&>().scalar();
}

void scale_output(const Communicator& c, py::handle recvbuf, size_t count,
                  const at::Tensor& factor, cudaStream_t stream) {
  auto device = static_cast<c10::DeviceIndex>(c.device());
  c10::cuda::CUDAGuard on_device(device);
  c10::cuda::CUDAStreamGuard on_stream(c10::cuda::getStreamFromExternal(stream, device));
  at::Tensor out = as_tensor(recvbuf, "recvbuf").reshape({-1}).narrow(0, 0, count);
  out.mul_(factor.reshape({}));  // a CPU factor acts as a scalar
}

void all_reduce(Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle op,
                py::handle stream, py::handle config) {
  host_profile::Timer prof;
  Communicator::Use in_use(c);  // finalize/destroy on another thread waits for the call
  auto s = as_buffer(sendbuf, "sendbuf");
  auto r = as_buffer(recvbuf, "recvbuf");
  auto o = as_red_op(op, c, s);
  auto st = as_stream(stream, c.device());
  auto factor = premul_factor_after_sum(c, op);
  ncclRedOp_t use = factor ? ncclSum : o;
  auto cfg = as_coll_config(config);
  prof.mark(host_profile::kRawArgs);
  // On a fast path already set up the call is a kernel launch: it keeps the
  // GIL, as torch's own launches do (a release and re-acquire cost ~0.3 µs).
  // Anything that may wait (the first call's window, NCCL) runs without it;
  // a configured call is NCCL's.
  if (cfg != nullptr || !raw::all_reduce_now(c, s, r, use, st)) {
    without_gil([&] { raw::all_reduce(c, s, r, use, st, cfg.get()); });
  }
  prof.mark(host_profile::kRawOp);
  if (factor) {
    scale_output(c, recvbuf, s.count, *factor, st);
  }
}

using FromRoot = void (*)(Communicator&, const std::optional<Buffer>&, const Buffer&,
                          int, cudaStream_t, const collectives::CollConfig*);
using WithPeer = void (*)(Communicator&, const Buffer&, int, cudaStream_t);

// broadcast / scatter: `sendbuf` is read on `root` only.
template <FromRoot Op>
void from_root(Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle root,
               py::handle stream, py::handle config) {
  Communicator::Use use(c);
  int rt = as_rank(root, "root");
  auto s = on_root(c, rt, sendbuf, "sendbuf");
  auto r = as_buffer(recvbuf, "recvbuf");
  auto st = as_stream(stream, c.device());
  auto cfg = as_coll_config(config);
  without_gil([&] { Op(c, s, r, rt, st, cfg.get()); });
}

// send / recv: one buffer, named `name`, and a peer.
template <WithPeer Op>
void with_peer(Communicator& c, py::handle buffer, const char* name, py::handle peer,
               py::handle stream) {
  Communicator::Use use(c);
  int p = as_rank(peer, "peer");
  auto b = as_buffer(buffer, name);
  auto st = as_stream(stream, c.device());
  without_gil([&] { Op(c, b, p, st); });
}

} // namespace

void bind_raw_ops(py::module_& m) {
  py::handle cls = m.attr("Communicator");
  fastcall::def(
      cls, "allreduce", "sendbuf, recvbuf, op, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle op,
         py::handle stream, py::handle config) {
        all_reduce(c, sendbuf, recvbuf, op, stream, config);
      },
      "ncclAllReduce of sendbuf into recvbuf; where every rank is reachable over NVLink, "
      "a small call runs as one nccl_core kernel instead, as the communicator's paths say "
      "(a group's, or the path table's: nccl_core_backend.paths).");
  fastcall::def(
      cls, "reduce", "sendbuf, recvbuf, op, root=None, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle op,
         py::handle root, py::handle stream, py::handle config) {
        Communicator::Use use(c);
        int rt = as_root(root);
        auto s = as_buffer(sendbuf, "sendbuf");
        auto r = on_root(c, rt, recvbuf, "recvbuf");
        auto o = as_red_op(op, c, s);
        auto st = as_stream(stream, c.device());
        auto factor = premul_factor_after_sum(c, op);
        auto cfg = as_coll_config(config);
        without_gil([&] { raw::reduce(c, s, r, factor ? ncclSum : o, rt, st, cfg.get()); });
        if (factor && r) {
          scale_output(c, recvbuf, s.count, *factor, st);
        }
      },
      "ncclReduce to `root` (None: all-reduce).");
  fastcall::def(
      cls, "broadcast", "sendbuf, recvbuf, root, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle root,
         py::handle stream, py::handle config) {
        from_root<&raw::broadcast>(c, sendbuf, recvbuf, root, stream, config);
      },
      "ncclBroadcast from `root` (sendbuf is only read there).");
  fastcall::def(
      cls, "allgather", "sendbuf, recvbuf, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle stream,
         py::handle config) {
        Communicator::Use use(c);
        auto s = as_buffer(sendbuf, "sendbuf");
        auto r = as_buffer(recvbuf, "recvbuf");
        auto st = as_stream(stream, c.device());
        auto cfg = as_coll_config(config);
        without_gil([&] { raw::gather(c, s, r, -1, st, cfg.get()); });
      },
      "ncclAllGather: recvbuf holds nranks blocks of sendbuf's size.");
  fastcall::def(
      cls, "gather", "sendbuf, recvbuf, root=None, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle root,
         py::handle stream, py::handle config) {
        Communicator::Use use(c);
        int rt = as_root(root);
        auto s = as_buffer(sendbuf, "sendbuf");
        auto r = on_root(c, rt, recvbuf, "recvbuf");
        auto st = as_stream(stream, c.device());
        auto cfg = as_coll_config(config);
        without_gil([&] { raw::gather(c, s, r, rt, st, cfg.get()); });
      },
      "ncclGather to `root` (None: all-gather).");
  fastcall::def(
      cls, "reduce_scatter", "sendbuf, recvbuf, op, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle op,
         py::handle stream, py::handle config) {
        Communicator::Use use(c);
        auto s = as_buffer(sendbuf, "sendbuf");
        auto r = as_buffer(recvbuf, "recvbuf");
        auto o = as_red_op(op, c, s);
        auto st = as_stream(stream, c.device());
        auto factor = premul_factor_after_sum(c, op);
        auto cfg = as_coll_config(config);
        without_gil([&] { raw::reduce_scatter(c, s, r, factor ? ncclSum : o, st, cfg.get()); });
        if (factor) {
          scale_output(c, recvbuf, s.count, *factor, st);
        }
      },
      "ncclReduceScatter: sendbuf holds nranks blocks, recvbuf gets this rank's.");
  fastcall::def(
      cls, "alltoall", "sendbuf, recvbuf, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle stream,
         py::handle config) {
        Communicator::Use use(c);
        auto s = as_buffer(sendbuf, "sendbuf");
        auto r = as_buffer(recvbuf, "recvbuf");
        auto st = as_stream(stream, c.device());
        auto cfg = as_coll_config(config);
        without_gil([&] { raw::alltoall(c, s, r, st, cfg.get()); });
      },
      "ncclAlltoAll: block i of sendbuf goes to rank i.");
  fastcall::def(
      cls, "scatter", "sendbuf, recvbuf, root, *, stream=None, config=None",
      [](Communicator& c, py::handle sendbuf, py::handle recvbuf, py::handle root,
         py::handle stream, py::handle config) {
        from_root<&raw::scatter>(c, sendbuf, recvbuf, root, stream, config);
      },
      "ncclScatter from `root`: rank i receives block i of sendbuf.");
  fastcall::def(
      cls, "send", "sendbuf, peer, *, stream=None",
      [](Communicator& c, py::handle sendbuf, py::handle peer, py::handle stream) {
        with_peer<&raw::send>(c, sendbuf, "sendbuf", peer, stream);
      },
      "ncclSend to `peer`.");
  fastcall::def(
      cls, "recv", "recvbuf, peer, *, stream=None",
      [](Communicator& c, py::handle recvbuf, py::handle peer, py::handle stream) {
        with_peer<&raw::recv>(c, recvbuf, "recvbuf", peer, stream);
      },
      "ncclRecv from `peer`.");
}

} // namespace nccl_core::python
