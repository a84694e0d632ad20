#include "collectives/nccl_calls.h"

#include "collectives/coll_config.h"

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

// A collective with or without the target's config: `plain` or `configured`
// (the nccl*Config call) on the communicator's handle.
template <class Plain, class Configured>
void collective(const Target& on, const char* plain_name, const char* configured_name,
                Plain&& plain, Configured&& configured) {
  if (on.config == nullptr) {
    submit(on, plain_name, plain);
    return;
  }
  const newer::CollConfig* config = on.config->get();
  submit(on, configured_name, [&](ncclComm_t c) { return configured(c, config); });
}

}  // namespace

void all_reduce(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
                ncclRedOp_t op) {
  collective(
      on, "ncclAllReduce", "ncclAllReduceConfig",
      [&](ncclComm_t c) { return nccl().AllReduce(in, out, count, type, op, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().AllReduceConfig(in, out, count, type, op, c, on.stream, config);
      });
}

void reduce(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
            ncclRedOp_t op, int root) {
  collective(
      on, "ncclReduce", "ncclReduceConfig",
      [&](ncclComm_t c) { return nccl().Reduce(in, out, count, type, op, root, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().ReduceConfig(in, out, count, type, op, root, c, on.stream, config);
      });
}

void broadcast(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
               int root) {
  collective(
      on, "ncclBroadcast", "ncclBroadcastConfig",
      [&](ncclComm_t c) { return nccl().Broadcast(in, out, count, type, root, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().BroadcastConfig(in, out, count, type, root, c, on.stream, config);
      });
}

void all_gather(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type) {
  collective(
      on, "ncclAllGather", "ncclAllGatherConfig",
      [&](ncclComm_t c) { return nccl().AllGather(in, out, count, type, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().AllGatherConfig(in, out, count, type, c, on.stream, config);
      });
}

void gather(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
            int root) {
  collective(
      on, "ncclGather", "ncclGatherConfig",
      [&](ncclComm_t c) { return nccl().Gather(in, out, count, type, root, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().GatherConfig(in, out, count, type, root, c, on.stream, config);
      });
}

void reduce_scatter(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
                    ncclRedOp_t op) {
  collective(
      on, "ncclReduceScatter", "ncclReduceScatterConfig",
      [&](ncclComm_t c) { return nccl().ReduceScatter(in, out, count, type, op, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().ReduceScatterConfig(in, out, count, type, op, c, on.stream, config);
      });
}

void all_to_all(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type) {
  collective(
      on, "ncclAlltoAll", "ncclAlltoAllConfig",
      [&](ncclComm_t c) { return nccl().AlltoAll(in, out, count, type, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().AlltoAllConfig(in, out, count, type, c, on.stream, config);
      });
}

void scatter(const Target& on, const void* in, void* out, size_t count, ncclDataType_t type,
             int root) {
  collective(
      on, "ncclScatter", "ncclScatterConfig",
      [&](ncclComm_t c) { return nccl().Scatter(in, out, count, type, root, c, on.stream); },
      [&](ncclComm_t c, const newer::CollConfig* config) {
        return nccl().ScatterConfig(in, out, count, type, root, c, on.stream, config);
      });
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
