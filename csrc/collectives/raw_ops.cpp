#include "collectives/raw_ops.h"

#include <memory>
#include <optional>
#include <vector>

#include "collectives/coll_config.h"
#include "collectives/path_agreement.h"
#include "collectives/path_choice.h"
#include "collectives/nccl_calls.h"
#include "collectives/one_rank.h"
#include "comm/communicator.h"
#include "nvlink/raw.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "nccl/features.h"
#include "nccl/seam.h"
#include "util/checked.h"

namespace nccl_core::raw {

using collectives::Check;
using collectives::Target;

namespace {

// The communicators of this thread's open group are held by the group
// (Communicator::hold_for_open_group) until group_end launches it.
thread_local int t_depth = 0;
// Buffers of the open group's calls: NCCL reads and writes them at group_end.
thread_local std::vector<at::Tensor> t_kept;

// Where this thread's next call goes: inside a group NCCL only queues (and
// may answer ncclInProgress), so waiting happens at group_end, and the group
// holds the communicator until then.
Target at(Communicator& c, cudaStream_t stream, const collectives::CollConfig* config = nullptr) {
  if (t_depth == 0) {
    return Target{c, stream, Check::kBounded, config};
  }
  (void)c.get();  // a closed communicator is refused before the group holds it
  c.hold_for_open_group();
  return Target{c, stream, Check::kGrouped, config};
}

void check_device(const Communicator& c, const Buffer& b, const char* name) {
  NCCL_CORE_REQUIRE(b.device == c.device(), name, " is on device ", b.device,
                    ", but communicator is on device ", c.device(),
                    ". Buffers must be on the same device as the communicator.");
}

const char* dtype_name(const Buffer& b) {
  return b.logical ? "bool" : types::name(b.type);
}

void check_types(const Buffer& s, const Buffer& r) {
  // bool and uint8 are both uint8 to NCCL, but 0/1 flags are not bytes.
  NCCL_CORE_REQUIRE(s.type == r.type && s.logical == r.logical,
                    "Dtype mismatch: sendbuf has dtype ", dtype_name(s),
                    ", recvbuf has dtype ", dtype_name(r));
}

void check_root(const Communicator& c, int root) {
  NCCL_CORE_REQUIRE(root >= 0 && root < c.nranks(), "root ", root,
                    " is outside the communicator of ", c.nranks(), " ranks");
}

void check_peer(const Communicator& c, int peer) {
  NCCL_CORE_REQUIRE(peer >= 0 && peer < c.nranks(), "peer ", peer,
                    " is outside the communicator of ", c.nranks(), " ranks");
}

void check_at_least(size_t have, size_t need, const char* name) {
  NCCL_CORE_REQUIRE(have >= need, "Buffer count mismatch: ", name, " has ", have,
                    " elements, needs at least ", need);
}

// A per-rank block of `s`: its count divided by nranks, at least one.
size_t block_of(const Communicator& c, const Buffer& s) {
  size_t n = static_cast<size_t>(c.nranks());
  NCCL_CORE_REQUIRE(s.count >= n && s.count % n == 0, "sendbuf has ", s.count,
                    " elements; it must hold a whole, non-empty block for each of the ", n,
                    " ranks");
  return s.count / n;
}

// For reduce / gather: checks the root and the receive buffer, which all
// ranks need when root < 0 (the all- variant) and only the root otherwise.
// Returns the receive pointer (nullptr where none is needed).
void* rooted_recv(const Communicator& c, const Buffer& send, const std::optional<Buffer>& recv,
                  int root, size_t min_count, const char* all_name) {
  check_device(c, send, "sendbuf");
  bool all = root < 0;
  if (!all) {
    check_root(c, root);
  }
  if (!all && root != c.rank()) {
    return nullptr;
  }
  NCCL_CORE_REQUIRE(recv.has_value(), "recvbuf is required ",
                    all ? std::string("for ") + all_name : std::string("on the root rank"));
  check_device(c, *recv, "recvbuf");
  check_types(send, *recv);
  check_at_least(recv->count, min_count, "recvbuf");
  return recv->ptr;
}

// For broadcast / scatter: checks the root and the buffers; the send buffer
// is required and read on the root only.  Returns it there, nullptr elsewhere.
const Buffer* rooted_send(const Communicator& c, const std::optional<Buffer>& send,
                          const Buffer& recv, int root) {
  check_root(c, root);
  check_device(c, recv, "recvbuf");
  if (root != c.rank()) {
    return nullptr;
  }
  NCCL_CORE_REQUIRE(send.has_value(), "sendbuf is required on the root rank");
  check_device(c, *send, "sendbuf");
  check_types(*send, recv);
  return &*send;
}

// The communicator's engine for a call outside any group that stages
// `count` elements of `type` on each rank (inside a group NCCL only queues,
// so every call there is NCCL's, and so is every call with a config).
struct EngineOutsideGroup {
  std::optional<nvlink::RawEngineCall> call;
  EngineOutsideGroup(Communicator& c, size_t count, ncclDataType_t type, cudaStream_t stream,
                     const collectives::CollConfig* config, bool push = false) {
    if (t_depth == 0 && config == nullptr) {
      call.emplace(c, checked::bytes(count, types::element_size(type), "staged bytes"), push,
                   stream, &check_raw_paths_agree);
    }
  }
  nvlink::Engine* engine() const { return call ? call->engine() : nullptr; }
};


} // namespace

void reduce(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv,
            ncclRedOp_t op, int root, cudaStream_t stream,
            const collectives::CollConfig* config) {
  void* out = rooted_recv(c, send, recv, root, send.count, "allreduce");
  op = one_rank::nccl_op(c.nranks(), op);
  if (root < 0) {
    collectives::all_reduce(at(c, stream, config), send.ptr, out, send.count, send.type, op);
  } else {
    collectives::reduce(at(c, stream, config), send.ptr, out, send.count, send.type, op, root);
  }
}

bool all_reduce_now(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv,
                    ncclRedOp_t op, cudaStream_t stream) {
  void* out = rooted_recv(c, send, recv, -1, send.count, "allreduce");
  return t_depth == 0 &&
         nvlink::raw_all_reduce_now(c, send, out, one_rank::nccl_op(c.nranks(), op), stream);
}

void all_reduce(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv,
                ncclRedOp_t op, cudaStream_t stream,
                const collectives::CollConfig* config) {
  void* out = rooted_recv(c, send, recv, -1, send.count, "allreduce");
  op = one_rank::nccl_op(c.nranks(), op);
  EngineOutsideGroup held(c, send.count, send.type, stream, config, true);
  collectives::all_reduce_on_a_path(at(c, stream, config), held.engine(), send.ptr, out, send.count,
                                    send.type, op);
}

void broadcast(Communicator& c, const std::optional<Buffer>& send, const Buffer& recv, int root,
               cudaStream_t stream,
               const collectives::CollConfig* config) {
  const Buffer* s = rooted_send(c, send, recv, root);
  if (s != nullptr) {
    NCCL_CORE_REQUIRE(s->count == recv.count, "Buffer count mismatch: sendbuf has ", s->count,
                      " elements, recvbuf has ", recv.count);
  }
  const void* in = s != nullptr ? s->ptr : nullptr;
  EngineOutsideGroup held(c, recv.count, recv.type, stream, config);
  collectives::broadcast_on_a_path(at(c, stream, config), held.engine(), in, recv.ptr, recv.count,
                                   recv.type, root);
}

void gather(Communicator& c, const Buffer& send, const std::optional<Buffer>& recv, int root,
            cudaStream_t stream,
            const collectives::CollConfig* config) {
  void* out = rooted_recv(c, send, recv, root,
                          checked::mul(send.count, static_cast<size_t>(c.nranks()),
                                       "recvbuf count (sendbuf count x nranks)"),
                          "allgather");
  if (root < 0) {
    EngineOutsideGroup held(c, send.count, send.type, stream, config);
    collectives::all_gather_on_a_path(at(c, stream, config), held.engine(), send.ptr, out, send.count,
                                      send.type);
  } else {
    collectives::gather(at(c, stream, config), send.ptr, out, send.count, send.type, root);
  }
}

void reduce_scatter(Communicator& c, const Buffer& send, const Buffer& recv, ncclRedOp_t op,
                    cudaStream_t stream,
                    const collectives::CollConfig* config) {
  check_device(c, send, "sendbuf");
  check_device(c, recv, "recvbuf");
  check_types(send, recv);
  size_t count = block_of(c, send);
  check_at_least(recv.count, count, "recvbuf");
  op = one_rank::nccl_op(c.nranks(), op);
  EngineOutsideGroup held(c, send.count, send.type, stream, config);
  collectives::reduce_scatter_on_a_path(at(c, stream, config), held.engine(), send.ptr, recv.ptr, count,
                                        send.type, op);
}

void alltoall(Communicator& c, const Buffer& send, const Buffer& recv, cudaStream_t stream,
              const collectives::CollConfig* config) {
  check_device(c, send, "sendbuf");
  check_device(c, recv, "recvbuf");
  check_types(send, recv);
  size_t count = block_of(c, send);
  check_at_least(recv.count, send.count, "recvbuf");
  EngineOutsideGroup held(c, send.count, send.type, stream, config);
  collectives::all_to_all_on_a_path(at(c, stream, config), held.engine(), send.ptr, recv.ptr, count,
                                    send.type);
}

void scatter(Communicator& c, const std::optional<Buffer>& send, const Buffer& recv, int root,
             cudaStream_t stream,
             const collectives::CollConfig* config) {
  const Buffer* s = rooted_send(c, send, recv, root);
  if (s != nullptr) {
    size_t count = block_of(c, *s);
    NCCL_CORE_REQUIRE(recv.count == count, "Buffer count mismatch: recvbuf must have exactly ",
                      count, " elements (sendbuf / nranks), got ", recv.count);
  }
  const void* in = s != nullptr ? s->ptr : nullptr;
  collectives::scatter(at(c, stream, config), in, recv.ptr, recv.count, recv.type, root);
}

void send(Communicator& c, const Buffer& buf, int peer, cudaStream_t stream) {
  check_device(c, buf, "sendbuf");
  check_peer(c, peer);
  collectives::send(at(c, stream), buf.ptr, buf.count, buf.type, peer);
}

void recv(Communicator& c, const Buffer& buf, int peer, cudaStream_t stream) {
  check_device(c, buf, "recvbuf");
  check_peer(c, peer);
  collectives::recv(at(c, stream), buf.ptr, buf.count, buf.type, peer);
}

void group_start() {
  NCCL_CORE_CHECK(nullptr, nccl().GroupStart());
  ++t_depth;
}

void group_end() {
  NCCL_CORE_REQUIRE(t_depth > 0, "group_end() without a matching group_start()");
  --t_depth;
  if (t_depth > 0) {
    api::check(nccl().GroupEnd(), "ncclGroupEnd", nullptr);
    return;
  }
  // Released when this function returns, whatever happens: the members'
  // Uses and the group's buffers (held until NCCL has launched the group).
  std::vector<Communicator::GroupHold> members = Communicator::release_open_group();
  std::vector<at::Tensor> kept;
  kept.swap(t_kept);
  // The outermost end launches everything: bounded like any blocking call.
  std::optional<BoundedCall> guard;
  if (!members.empty()) {
    const auto& first = members[0].comm;
    guard.emplace(first, first->blocking(), first->timeout(), "ncclGroupEnd");
  }
  ncclResult_t r = nccl().GroupEnd();
  if (guard) {
    guard->rethrow_if_expired();
  }
  bool pending =
      api::check(r, "ncclGroupEnd", members.empty() ? nullptr : members[0].comm->get());
  if (pending) {
    for (auto& m : members) {
      m.comm->wait_ready("ncclGroupEnd");
    }
  }
}

float group_simulate_end() {
  NCCL_CORE_REQUIRE(t_depth > 0, "group_end(simulate=True) without a matching group_start()");
  NCCL_CORE_REQUIRE(t_depth == 1, "group_end(simulate=True) ends the outermost group only; "
                    "this one is nested ", t_depth, " deep");
  nccl().require("ncclGroupSimulateEnd", "group_end(simulate=True)",
                 features::kGroupSimulate.native_since);
  --t_depth;
  // Nothing is launched: the members' holds and the group's buffers go now.
  std::vector<Communicator::GroupHold> members = Communicator::release_open_group();
  t_kept.clear();
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  api::check(nccl().GroupSimulateEnd(&info), "ncclGroupSimulateEnd",
             members.empty() ? nullptr : members[0].comm->get());
  return info.estimatedTime;
}

int group_depth() {
  return t_depth;
}

void keep_for_group(at::Tensor t) {
  t_kept.push_back(std::move(t));
}

size_t kept_for_group() {
  return t_kept.size();
}

} // namespace nccl_core::raw
