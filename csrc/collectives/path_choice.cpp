#include "collectives/path_choice.h"

#include "comm/communicator.h"
#include "nccl/types.h"
#include "nvlink/engine.h"
#include "util/checked.h"

namespace nccl_core::collectives {

namespace {

// Bytes of `count` elements (the caller's checks bound them already).
size_t bytes_of(size_t count, ncclDataType_t type) {
  return checked::bytes(count, types::element_size(type), "collective bytes");
}

// The copy collectives: the engine's fast path where it takes the call,
// else NCCL.
template <class Fast, class Nccl>
Path fast_or_nccl(const Fast& fast, const nvlink::Engine* engine, const Nccl& nccl) {
  if (engine != nullptr && fast()) {
    return Path::kFast;
  }
  nccl();
  return Path::kNccl;
}

}  // namespace

Path all_reduce_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                          size_t count, ncclDataType_t type, ncclRedOp_t op,
                          const OneRankFallback& one_rank_fallback) {
  if (engine != nullptr && engine->all_reduce(on.comm, in, out, count, type, op, on.stream)) {
    return Path::kFast;
  }
  if (one_rank_fallback && one_rank_fallback()) {
    return Path::kOneRank;
  }
  if (engine != nullptr &&
      engine->all_reduce_pushed(on.comm, in, out, count, type, op, on.stream)) {
    return Path::kPush;
  }
  all_reduce(on, in, out, count, type, op);
  return Path::kNccl;
}

Path reduce_scatter_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                              size_t count, ncclDataType_t type, ncclRedOp_t op,
                              const OneRankFallback& one_rank_fallback) {
  if (engine != nullptr &&
      engine->reduce_scatter(on.comm, in, out, count, type, op, on.stream)) {
    return Path::kFast;
  }
  if (one_rank_fallback && one_rank_fallback()) {
    return Path::kOneRank;
  }
  reduce_scatter(on, in, out, count, type, op);
  return Path::kNccl;
}

Path all_gather_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                          size_t count, ncclDataType_t type) {
  return fast_or_nccl(
      [&] { return engine->all_gather(on.comm, in, out, bytes_of(count, type), on.stream); },
      engine, [&] { all_gather(on, in, out, count, type); });
}

Path all_to_all_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                          size_t count, ncclDataType_t type) {
  return fast_or_nccl(
      [&] { return engine->all_to_all(on.comm, in, out, bytes_of(count, type), on.stream); },
      engine, [&] { all_to_all(on, in, out, count, type); });
}

Path broadcast_on_a_path(const Target& on, nvlink::Engine* engine, const void* in, void* out,
                         size_t count, ncclDataType_t type, int root) {
  return fast_or_nccl(
      [&] { return engine->broadcast(on.comm, in, out, bytes_of(count, type), root, on.stream); },
      engine, [&] { broadcast(on, in, out, count, type, root); });
}

}  // namespace nccl_core::collectives
