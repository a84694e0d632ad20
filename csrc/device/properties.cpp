#include "device/properties.h"

#include <cstddef>

#include "comm/communicator.h"
#include "device/layouts.h"
#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/seam.h"

namespace nccl_core {

using namespace layout;

namespace {

// The size we hand NCCL: 2.29.x copies exactly the layout it was told (2.29.2
// ends before host_rma_support); from 2.30 NCCL fills in its own release's
// struct, which must fit our storage (layout_checks.cu).
size_t claimed_size(int claimed) {
  if (claimed >= api::version_code(2, 30, 0)) {
    return sizeof(PropertiesStorage);
  }
  return has_229_7_fields(claimed) ? sizeof(Properties229)
                                   : offsetof(Properties229, host_rma_support);
}

} // namespace

CommProperties comm_properties(Communicator& comm, const features::Feature& feature,
                               const char* what) {
  if (!features::available(feature)) {
    features::refuse(feature, what);
  }
  nccl().require("ncclCommQueryProperties", what, features::kGinType.native_since);
  int loaded = api::loaded_version();
  int claimed = claimed_version(loaded);
  PropertiesStorage p{};
  Properties229& base = p.head.base;
  base.magic = kApiMagic;
  base.version = static_cast<unsigned>(claimed);
  base.size = claimed_size(claimed);
  ncclComm_t c = comm.get();
  NCCL_CORE_CHECK(c, nccl().CommQueryProperties(c, &p));
  // The run-time side of layout_checks.cu: the loaded release must have put
  // rank and size where our layout has them.
  if (base.rank != comm.rank() || base.nranks != comm.nranks()) {
    throw NcclError(ncclInternalError,
                    concat("ncclCommQueryProperties of NCCL ", api::version_string(loaded),
                           " answered in a layout nccl_core does not know (rank ", base.rank,
                           " of ", base.nranks, ", expected ", comm.rank(), " of ",
                           comm.nranks(), ")"));
  }
  CommProperties out;
  out.rank = base.rank;
  out.nranks = base.nranks;
  out.cuda_dev = base.cuda_dev;
  out.nvml_dev = base.nvml_dev;
  out.device_api_support = base.device_api_support;
  out.multimem_support = base.multimem_support;
  out.gin_type = base.gin_type;
  out.has_2_29_7 = has_229_7_fields(claimed);
  if (out.has_2_29_7) {
    out.n_lsa_teams = base.n_lsa_teams;
    out.host_rma_support = base.host_rma_support;
    out.railed_gin_type = base.railed_gin_type;
  }
  out.has_2_31 = claimed >= kProperties231;
  if (out.has_2_31) {
    const Properties232& h = p.head;
    out.comm_hash = h.comm_hash;
    out.gin_min_stride = h.gin_min_stride;
    out.gin_connection_type = h.gin_connection_type;
    for (int t = 1; t < static_cast<int>(sizeof(h.gin_support)); ++t) {
      if (h.gin_support[t]) {
        out.available_gin_types.push_back(t);
      }
    }
    out.dev_comm_runtime_version_size = h.dev_comm_runtime_version_size;
  }
  out.has_2_32 = claimed >= kProperties232;
  if (out.has_2_32) {
    out.cft_support = p.head.cft_support;
    out.cft_multicast_support = p.head.cft_multicast_support;
    out.cft_counted_support = p.head.cft_counted_support;
  }
  return out;
}

CommProperties comm_properties(Communicator& comm) {
  return comm_properties(comm, features::kGinType, "Communicator.properties");
}

int gin_type(Communicator& comm, bool railed) {
  if (railed) {
    return comm_properties(comm, features::kRailedGinType, "Communicator.railed_gin_type")
        .railed_gin_type;
  }
  return comm_properties(comm, features::kGinType, "Communicator.gin_type").gin_type;
}

} // namespace nccl_core
