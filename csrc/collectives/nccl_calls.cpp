#include "collectives/nccl_calls.h"

#include "comm/communicator.h"
#include "nccl/api.h"
#include "nccl/seam.h"

namespace nccl_core::collectives {

namespace {

// `enqueue` makes one NCCL call on on.comm's handle, checked as on.check says.
template <class F>
void submit(const Target& on, const char* what, F&& enqueue) {
  Communicator& c = on.comm;
  switch (on.check) {
    case Check::kWait:
      c.call(enqueue(c.get()), what);
      return;
    case Check::kBounded:
      c.run(what, [&] { return enqueue(c.get()); });
      return;
    case Check::kGrouped:
      api::check(enqueue(c.get()), what, c.get());
      return;
  }
}

}  // namespace

void all_reduce(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
                ncclRedOp_t op) {
  submit(on, "ncclAllReduce",
         [&](ncclComm_t c) { return nccl().AllReduce(in, out, count, type, op, c, on.stream); });
}

void reduce(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
            ncclRedOp_t op, int root) {
  submit(on, "ncclReduce",
         [&](ncclComm_t c) { return nccl().Reduce(in, out, count, type, op, root, c, on.stream); });
}

void broadcast(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
               int root) {
  submit(on, "ncclBroadcast",
         [&](ncclComm_t c) { return nccl().Broadcast(in, out, count, type, root, c, on.stream); });
}

void all_gather(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type) {
  submit(on, "ncclAllGather",
         [&](ncclComm_t c) { return nccl().AllGather(in, out, count, type, c, on.stream); });
}

void gather(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
            int root) {
  submit(on, "ncclGather",
         [&](ncclComm_t c) { return nccl().Gather(in, out, count, type, root, c, on.stream); });
}

void reduce_scatter(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
                    ncclRedOp_t op) {
  submit(on, "ncclReduceScatter",
         [&](ncclComm_t c) { return nccl().ReduceScatter(in, out, count, type, op, c, on.stream); });
}

void all_to_all(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type) {
  submit(on, "ncclAlltoAll",
         [&](ncclComm_t c) { return nccl().AlltoAll(in, out, count, type, c, on.stream); });
}

void scatter(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
             int root) {
  submit(on, "ncclScatter",
         [&](ncclComm_t c) { return nccl().Scatter(in, out, count, type, root, c, on.stream); });
}

void send(const Target& on, const void* buf, size_t count, ncclDataType_t type, int peer) {
  submit(on, "ncclSend",
         [&](ncclComm_t c) { return nccl().Send(buf, count, type, peer, c, on.stream); });
}

void recv(const Target& on, void* buf, size_t count, ncclDataType_t type, int peer) {
  submit(on, "ncclRecv",
         [&](ncclComm_t c) { return nccl().Recv(buf, count, type, peer, c, on.stream); });
}

}  // namespace nccl_core::collectives
