#include "device/dev_comm.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "comm/communicator.h"
#include "device/layouts.h"
#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/seam.h"

namespace nccl_core {

namespace {

using namespace layout;

RequirementsBody body_of(const DevCommRequirements& q) {
  RequirementsBody r;
  r.lsa_multimem = q.lsa_multimem;
  r.barrier_count = q.barrier_count;
  r.lsa_barrier_count = q.lsa_barrier_count;
  r.rail_gin_barrier_count = q.rail_gin_barrier_count;
  r.lsa_ll_a2a_block_count = q.lsa_ll_a2a_block_count;
  r.lsa_ll_a2a_slot_count = q.lsa_ll_a2a_slot_count;
  r.gin_force_enable = q.gin_force_enable;
  r.gin_context_count = q.gin_context_count;
  r.gin_signal_count = q.gin_signal_count;
  r.gin_counter_count = q.gin_counter_count;
  return r;
}

Properties229 query_properties(Communicator& comm, const features::Feature& f, const char* what) {
  if (!features::available(f)) {
    features::refuse(f, what);
  }
  nccl().require("ncclCommQueryProperties", what, f.native_since);
  int claimed = claimed_version(api::loaded_version());
  PropertiesStorage p{};
  p.head.magic = kApiMagic;
  p.head.version = static_cast<unsigned>(claimed);
  p.head.size = claimed >= api::version_code(2, 30, 0) ? sizeof(PropertiesStorage)
                : has_229_7_fields(claimed)          ? sizeof(Properties229)
                                                     : offsetof(Properties229, host_rma_support);
  ncclComm_t c = comm.get();
  NCCL_CORE_CHECK(c, nccl().CommQueryProperties(c, &p));
  // The run-time side of layout_checks.cu: the loaded release must have put
  // rank and size where our layout has them.
  if (p.head.rank != comm.rank() || p.head.nranks != comm.nranks()) {
    throw NcclError(ncclInternalError,
                    concat("ncclCommQueryProperties of NCCL ",
                           api::version_string(api::loaded_version()),
                           " answered in a layout nccl_core does not know (rank ", p.head.rank,
                           " of ", p.head.nranks, ", expected ", comm.rank(), " of ",
                           comm.nranks(), ")"));
  }
  return p.head;
}

void refuse_multimem(Communicator& comm) {
  const char* env = std::getenv("NCCL_NVLS_ENABLE");
  if (env != nullptr && std::strcmp(env, "0") == 0) {
    throw NcclUnsupported(
        "create_dev_comm: lsa_multimem needs NVLink multicast (NVLS), which is disabled in "
        "this process (NCCL_NVLS_ENABLE=0)");
  }
  if (features::available(features::kGinType) &&
      !query_properties(comm, features::kGinType, "multimem").multimem_support) {
    throw NcclUnsupported(
        "create_dev_comm: lsa_multimem needs NVLink multicast, which this communicator does "
        "not support (ncclCommQueryProperties: multimemSupport = false)");
  }
}

} // namespace

void DevCommRequirements::validate() const {
  const std::pair<const char*, int> counts[] = {
      {"barrier_count", barrier_count},
      {"lsa_barrier_count", lsa_barrier_count},
      {"rail_gin_barrier_count", rail_gin_barrier_count},
      {"lsa_ll_a2a_block_count", lsa_ll_a2a_block_count},
      {"lsa_ll_a2a_slot_count", lsa_ll_a2a_slot_count},
      {"gin_context_count", gin_context_count},
      {"gin_signal_count", gin_signal_count},
      {"gin_counter_count", gin_counter_count},
      {"gin_queue_depth", gin_queue_depth},
  };
  for (const auto& [name, value] : counts) {
    NCCL_CORE_REQUIRE(value >= 0, "NCCLDevCommRequirements.", name, " must be >= 0, got ", value);
  }
  NCCL_CORE_REQUIRE(gin_connection_type >= 0 && gin_connection_type <= 2,
                    "NCCLDevCommRequirements.gin_connection_type must be an "
                    "NcclGinConnectionType (0, 1 or 2), got ",
                    gin_connection_type);
}

DevComm::DevComm(std::shared_ptr<Communicator> comm, const DevCommRequirements& req)
    : Resource(std::move(comm), "DevCommResource"),
      req_(req),
      storage_(kDevCommBytes / sizeof(uint64_t), 0) {}

std::shared_ptr<DevComm> DevComm::create(const std::shared_ptr<Communicator>& comm,
                                         const DevCommRequirements& req) {
  req.validate();
  nccl().require("ncclDevCommCreate", "create_dev_comm", newer::kDeviceApiVersion);
  int v = api::loaded_version();
  if (!features::available(features::kDevCommGinConnection)) {
    const char* newer_field = req.gin_connection_type != 0 ? "gin_connection_type"
                              : req.gin_exclusive_contexts ? "gin_exclusive_contexts"
                              : req.gin_queue_depth != 0   ? "gin_queue_depth"
                                                           : nullptr;
    if (newer_field != nullptr) {
      features::refuse(features::kDevCommGinConnection,
                       concat("NCCLDevCommRequirements.", newer_field));
    }
  }
  if (req.lsa_multimem) {
    refuse_multimem(*comm);
  }
  std::shared_ptr<DevComm> dc(new DevComm(comm, req));
  ncclComm_t c = comm->get();
  void* out = dc->storage_.data();
  int claimed = claimed_version(v);
  if (claimed != 0) {
    // NCCL copies `size` bytes over its own defaults, so fields of newer
    // releases keep NCCL's initial values.
    Requirements229 r;
    r.body = body_of(req);
    bool full = has_229_7_fields(claimed);
    r.size = full ? sizeof(Requirements229) : offsetof(Requirements229, gin_connection_type);
    r.version = static_cast<unsigned>(claimed);
    r.gin_connection_type = req.gin_connection_type;
    r.gin_exclusive_contexts = req.gin_exclusive_contexts;
    r.gin_queue_depth = req.gin_queue_depth;
    comm->run("ncclDevCommCreate", [&] { return nccl().DevCommCreate(c, &r, out); });
  } else {
    RequirementsBody r = body_of(req);
    comm->run("ncclDevCommCreate", [&] { return nccl().DevCommCreate(c, &r, out); });
  }
  comm->wait_ready("ncclDevCommCreate");
  comm->track(dc);
  if (claimed >= api::version_code(2, 30, 0)) {
    // From 2.30 ncclDevComm starts with magic and the claimed version
    // (layout_checks.cu): the run-time check that the loaded release filled
    // in the layout we claimed.
    const auto* head = static_cast<const unsigned*>(out);
    if (head[0] != kApiMagic || head[1] != static_cast<unsigned>(claimed)) {
      dc->close();
      throw NcclError(ncclInternalError,
                      concat("ncclDevCommCreate of NCCL ", api::version_string(v),
                             " filled in an ncclDevComm without the versioned header nccl_core "
                             "expects (version ", head[1], ", claimed ", claimed, ")"));
    }
  }
  return dc;
}

const void* DevComm::ptr() const {
  ensure_valid();
  return storage_.data();
}

void DevComm::release(Communicator& comm) {
  nccl().require("ncclDevCommDestroy", "DevCommResource.close", newer::kDeviceApiVersion);
  ncclComm_t c = comm.get();
  comm.run("ncclDevCommDestroy", [&] { return nccl().DevCommDestroy(c, storage_.data()); });
}

CommProperties comm_properties(Communicator& comm) {
  auto p = query_properties(comm, features::kGinType, "Communicator properties");
  CommProperties out;
  out.rank = p.rank;
  out.nranks = p.nranks;
  out.cuda_dev = p.cuda_dev;
  out.nvml_dev = p.nvml_dev;
  out.device_api_support = p.device_api_support;
  out.multimem_support = p.multimem_support;
  out.gin_type = p.gin_type;
  out.has_2_29_7 = has_229_7_fields(claimed_version(api::loaded_version()));
  if (out.has_2_29_7) {
    out.n_lsa_teams = p.n_lsa_teams;
    out.host_rma_support = p.host_rma_support;
    out.railed_gin_type = p.railed_gin_type;
  }
  return out;
}

int gin_type(Communicator& comm, bool railed) {
  if (railed) {
    return query_properties(comm, features::kRailedGinType, "Communicator.railed_gin_type")
        .railed_gin_type;
  }
  return query_properties(comm, features::kGinType, "Communicator.gin_type").gin_type;
}

} // namespace nccl_core
