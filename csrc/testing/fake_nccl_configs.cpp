// FakeNccl's nccl*Config collectives (fake_nccl.h): each records its
// arguments and the config as NCCL would read it -- the fields of the
// release the fake plays that fit the config's size, and the vendor options
// in list order (their int member) -- so that the CPU tests see what reached NCCL.
#include "testing/fake_nccl.h"

#include "nccl/newer_than_2_28.h"
#include "util/concat.h"

namespace nccl_core::testing {

std::string FakeNccl::describe(const newer::CollConfig* c) {
  if (c == nullptr) {
    return "config=null";
  }
  std::string out = concat("size=", c->size, ", magic=", c->magic == newer::kApiMagic ? "ok" : "bad",
                           ", version=", c->version, ", minCTAs=", c->min_ctas,
                           ", maxCTAs=", c->max_ctas, ", nvlsCTAs=", c->nvls_ctas,
                           ", cga=", c->cga_cluster_size,
                           ", alg=", c->alg_selection == nullptr ? "null" : c->alg_selection,
                           ", force=", c->force_alg_selection, ", policy=", c->cta_policy,
                           ", tag=", c->user_profiler_tag);
  // A release before launchCompletionEvent reads no further than its size.
  if (c->size > newer::kCollConfigSize231) {
    out += concat(", event=", reinterpret_cast<uintptr_t>(c->launch_completion_event));
  }
  out += ", ext=[";
  for (const newer::ConfigExt* e = c->ext; e != nullptr; e = e->next) {
    out += concat(e == c->ext ? "" : " ", e->vendor_id, ":", e->option_id, "=", e->value.i);
  }
  return out + "]";
}

ncclResult_t FakeNccl::AllReduceConfig(const void*, void*, size_t count, ncclDataType_t,
                                       ncclRedOp_t op, ncclComm_t, cudaStream_t,
                                       const newer::CollConfig* config) {
  return answer("AllReduceConfig", concat("count=", count, ", op=", static_cast<int>(op), ", ",
                                          describe(config)));
}
ncclResult_t FakeNccl::ReduceConfig(const void*, void*, size_t count, ncclDataType_t, ncclRedOp_t,
                                    int root, ncclComm_t, cudaStream_t,
                                    const newer::CollConfig* config) {
  return answer("ReduceConfig", concat("count=", count, ", root=", root, ", ", describe(config)));
}
ncclResult_t FakeNccl::BroadcastConfig(const void*, void*, size_t count, ncclDataType_t, int root,
                                       ncclComm_t, cudaStream_t, const newer::CollConfig* config) {
  return answer("BroadcastConfig", concat("count=", count, ", root=", root, ", ", describe(config)));
}
ncclResult_t FakeNccl::AllGatherConfig(const void*, void*, size_t count, ncclDataType_t, ncclComm_t,
                                       cudaStream_t, const newer::CollConfig* config) {
  return answer("AllGatherConfig", concat("count=", count, ", ", describe(config)));
}
ncclResult_t FakeNccl::ReduceScatterConfig(const void*, void*, size_t count, ncclDataType_t,
                                           ncclRedOp_t, ncclComm_t, cudaStream_t,
                                           const newer::CollConfig* config) {
  return answer("ReduceScatterConfig", concat("count=", count, ", ", describe(config)));
}
ncclResult_t FakeNccl::AlltoAllConfig(const void*, void*, size_t count, ncclDataType_t, ncclComm_t,
                                      cudaStream_t, const newer::CollConfig* config) {
  return answer("AlltoAllConfig", concat("count=", count, ", ", describe(config)));
}
ncclResult_t FakeNccl::GatherConfig(const void*, void*, size_t count, ncclDataType_t, int root,
                                    ncclComm_t, cudaStream_t, const newer::CollConfig* config) {
  return answer("GatherConfig", concat("count=", count, ", root=", root, ", ", describe(config)));
}
ncclResult_t FakeNccl::ScatterConfig(const void*, void*, size_t count, ncclDataType_t, int root,
                                     ncclComm_t, cudaStream_t, const newer::CollConfig* config) {
  return answer("ScatterConfig", concat("count=", count, ", root=", root, ", ", describe(config)));
}

}  // namespace nccl_core::testing
