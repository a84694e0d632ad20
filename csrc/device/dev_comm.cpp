#include "device/dev_comm.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "comm/communicator.h"
#include "device/layouts.h"
#include "device/properties.h"
#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/newer_than_2_28.h"
#include "nccl/seam.h"

namespace nccl_core {

namespace {

using namespace layout;

RequirementsBody body_of(const DevCommRequirements& q, void* resource_list, void* team_list) {
  RequirementsBody r;
  r.resource_requirements = resource_list;
  r.team_requirements = team_list;
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

// One node per requested resource, filled in by NCCL's helper and pointed at
// the resource's entry of `handles` (which must not move until the create is
// done), then linked in order.
std::vector<ResourceRequirements> resource_nodes(Communicator& comm,
                                                 const std::vector<ResourceRequest>& wanted,
                                                 std::vector<ResourceHandle>& handles) {
  using Kind = ResourceRequest::Kind;
  std::vector<ResourceRequirements> nodes(wanted.size());
  handles.assign(wanted.size(), ResourceHandle{});
  ncclComm_t c = comm.get();
  for (size_t i = 0; i < wanted.size(); ++i) {
    const ResourceRequest& w = wanted[i];
    const int team[3] = {w.team.nranks, w.team.rank, w.team.stride};
    void* handle = &handles[i];
    void* node = &nodes[i];
    if (w.kind == Kind::LsaBarrier) {
      nccl().require("ncclLsaBarrierCreateRequirement", "LsaBarrierRequirement",
                     newer::kDeviceApiVersion);
      api::check(nccl().LsaBarrierCreateRequirement(team, w.n_barriers, handle, node),
                 "ncclLsaBarrierCreateRequirement", c);
    } else if (w.kind == Kind::GinBarrier) {
      nccl().require("ncclGinBarrierCreateRequirement", "GinBarrierRequirement",
                     newer::kDeviceApiVersion);
      api::check(nccl().GinBarrierCreateRequirement(c, team, w.n_barriers, handle, node),
                 "ncclGinBarrierCreateRequirement", c);
    } else {
      nccl().require("ncclLLA2ACreateRequirement", "LLA2ARequirement", newer::kDeviceApiVersion);
      int slots = 0;
      api::check(nccl().LLA2ACalcSlots(w.max_elements, w.max_element_size, &slots),
                 "ncclLLA2ACalcSlots", c);
      api::check(nccl().LLA2ACreateRequirement(w.n_blocks, slots, handle, node),
                 "ncclLLA2ACreateRequirement", c);
    }
  }
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    nodes[i].next = &nodes[i + 1];
  }
  return nodes;
}

bool same_team(const Team& a, const Team& b) {
  return a.nranks == b.nranks && a.rank == b.rank && a.stride == b.stride;
}

// One entry per distinct team, in first-appearance order, multimem where any
// entry for it asks.
std::vector<TeamRequest> merge_teams(const std::vector<TeamRequest>& teams) {
  std::vector<TeamRequest> merged;
  for (const TeamRequest& t : teams) {
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const TeamRequest& m) { return same_team(m.team, t.team); });
    if (it == merged.end()) {
      merged.push_back(t);
    } else {
      it->multimem = it->multimem || t.multimem;
    }
  }
  return merged;
}

// One node per merged team, pointed at its entry of `handles` where it asks
// for multimem, then linked in order.
std::vector<TeamRequirements> team_nodes(const std::vector<TeamRequest>& merged,
                                         std::vector<MultimemHandle>& handles) {
  std::vector<TeamRequirements> nodes(merged.size());
  handles.assign(merged.size(), MultimemHandle{});
  for (size_t i = 0; i < merged.size(); ++i) {
    nodes[i].nranks = merged[i].team.nranks;
    nodes[i].rank = merged[i].team.rank;
    nodes[i].stride = merged[i].team.stride;
    nodes[i].multimem = merged[i].multimem;
    nodes[i].out_multimem_handle = merged[i].multimem ? &handles[i] : nullptr;
    if (i > 0) {
      nodes[i - 1].next = &nodes[i];
    }
  }
  return nodes;
}

void refuse_multimem(Communicator& comm, const char* field) {
  const char* env = std::getenv("NCCL_NVLS_ENABLE");
  if (env != nullptr && std::strcmp(env, "0") == 0) {
    throw NcclUnsupported(concat("create_dev_comm: ", field,
                                 " needs NVLink multicast (NVLS), which is disabled in this "
                                 "process (NCCL_NVLS_ENABLE=0)"));
  }
  if (features::available(features::kGinType) &&
      !comm_properties(comm, features::kGinType, "multimem").multimem_support) {
    throw NcclUnsupported(concat("create_dev_comm: ", field,
                                 " needs NVLink multicast, which this communicator does not "
                                 "support (ncclCommQueryProperties: multimemSupport = false)"));
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
      {"world_gin_barrier_count", world_gin_barrier_count},
      {"cft_caps", cft_caps},
      {"cft_barrier_count", cft_barrier_count},
  };
  for (const auto& [name, value] : counts) {
    NCCL_CORE_REQUIRE(value >= 0, "NCCLDevCommRequirements.", name, " must be >= 0, got ", value);
  }
  NCCL_CORE_REQUIRE(gin_connection_type >= 0 && gin_connection_type <= 3,
                    "NCCLDevCommRequirements.gin_connection_type must be an "
                    "NcclGinConnectionType (0 to 3), got ",
                    gin_connection_type);
  NCCL_CORE_REQUIRE(gin_custom_stride >= 1,
                    "NCCLDevCommRequirements.gin_custom_stride must be >= 1, got ",
                    gin_custom_stride);
  NCCL_CORE_REQUIRE(gin_type == 0 || (gin_type >= 2 && gin_type <= 5),
                    "NCCLDevCommRequirements.gin_type must be an NcclGinType (0, 2 to 5), got ",
                    gin_type);
  for (const ResourceRequest& r : resources) {
    const std::pair<const char*, int> sizes[] = {{"n_barriers", r.n_barriers},
                                                 {"n_blocks", r.n_blocks},
                                                 {"max_elements", r.max_elements},
                                                 {"max_element_size", r.max_element_size}};
    for (const auto& [name, value] : sizes) {
      NCCL_CORE_REQUIRE(value >= 0, "NCCLDevCommRequirements.resources: ", name,
                        " must be >= 0, got ", value);
    }
  }
  for (const TeamRequest& t : teams) {
    NCCL_CORE_REQUIRE(t.team.nranks >= 1 && t.team.rank >= 0 && t.team.rank < t.team.nranks,
                      "NCCLDevCommRequirements.teams: a team of ", t.team.nranks,
                      " ranks cannot hold rank ", t.team.rank);
  }
}

// The first field set away from NCCL's default that the loaded release
// lacks, with the feature that brought it; nullptr where there is none.
std::pair<const char*, const features::Feature*> DevCommRequirements::newer_field() const {
  using namespace features;
  const std::pair<bool, std::pair<const char*, const Feature*>> fields[] = {
      {gin_connection_type == 3, {"gin_connection_type=CUSTOM_STRIDE", &kDevCommCft}},
      {gin_connection_type != 0, {"gin_connection_type", &kDevCommGinConnection}},
      {gin_exclusive_contexts, {"gin_exclusive_contexts", &kDevCommGinConnection}},
      {gin_queue_depth != 0, {"gin_queue_depth", &kDevCommGinConnection}},
      {gin_traffic_class != INT32_MIN, {"gin_traffic_class", &kDevCommGin230}},
      {world_gin_barrier_count != 0, {"world_gin_barrier_count", &kDevCommGin230}},
      {!gin_strong_signals_required, {"gin_strong_signals_required", &kDevCommGinSignals}},
      {!gin_va_signals_required, {"gin_va_signals_required", &kDevCommGinSignals}},
      {gin_custom_stride != 1, {"gin_custom_stride", &kDevCommCft}},
      {gin_type != 0, {"gin_type", &kDevCommCft}},
      {cft_caps != 0, {"cft_caps", &kDevCommCft}},
      {cft_barrier_count != 0, {"cft_barrier_count", &kDevCommCft}},
  };
  for (const auto& [set, field] : fields) {
    if (set && !available(*field.second)) {
      return field;
    }
  }
  return {nullptr, nullptr};
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
  if (auto [field, feature] = req.newer_field(); field != nullptr) {
    features::refuse(*feature, concat("NCCLDevCommRequirements.", field));
  }
  if (req.lsa_multimem) {
    refuse_multimem(*comm, "lsa_multimem");
  }
  std::vector<TeamRequest> merged = merge_teams(req.teams);
  if (std::any_of(merged.begin(), merged.end(), [](const TeamRequest& t) { return t.multimem; })) {
    refuse_multimem(*comm, "a team with multimem");
  }
  std::shared_ptr<DevComm> dc(new DevComm(comm, req));
  dc->merged_teams_ = merged;
  ncclComm_t c = comm->get();
  // NCCL completes the handles during the create: the nodes live until then.
  std::vector<ResourceRequirements> nodes = resource_nodes(*comm, req.resources, dc->handles_);
  void* list = nodes.empty() ? nullptr : nodes.data();
  std::vector<TeamRequirements> teams = team_nodes(merged, dc->multimem_);
  void* team_list = teams.empty() ? nullptr : teams.data();
  void* out = dc->storage_.data();
  int claimed = claimed_version(v);
  if (claimed >= api::version_code(2, 30, 0)) {
    // The loaded release's layout, its size stopping at its last field.
    Requirements231 r;
    r.body = body_of(req, list, team_list);
    r.size = requirements_size(claimed);
    r.version = static_cast<unsigned>(claimed);
    r.gin_connection_type = req.gin_connection_type;
    r.gin_exclusive_contexts = req.gin_exclusive_contexts;
    r.gin_queue_depth = req.gin_queue_depth;
    r.gin_traffic_class = req.gin_traffic_class;
    r.world_gin_barrier_count = req.world_gin_barrier_count;
    r.gin_strong_signals_required = req.gin_strong_signals_required;
    r.gin_va_signals_required = req.gin_va_signals_required;
    r.gin_custom_stride = req.gin_custom_stride;
    r.gin_type = req.gin_type;
    r.cft_caps = req.cft_caps;
    r.cft_barrier_count = req.cft_barrier_count;
    comm->run("ncclDevCommCreate", [&] { return nccl().DevCommCreate(c, &r, out); });
  } else if (claimed != 0) {
    // NCCL copies `size` bytes over its own defaults, so fields of newer
    // releases keep NCCL's initial values.
    Requirements229 r;
    r.body = body_of(req, list, team_list);
    bool full = has_229_7_fields(claimed);
    r.size = full ? sizeof(Requirements229) : offsetof(Requirements229, gin_connection_type);
    r.version = static_cast<unsigned>(claimed);
    r.gin_connection_type = req.gin_connection_type;
    r.gin_exclusive_contexts = req.gin_exclusive_contexts;
    r.gin_queue_depth = req.gin_queue_depth;
    comm->run("ncclDevCommCreate", [&] { return nccl().DevCommCreate(c, &r, out); });
  } else {
    RequirementsBody r = body_of(req, list, team_list);
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

std::optional<void*> DevComm::multimem_handle(const Team& team) const {
  ensure_valid();
  for (size_t i = 0; i < merged_teams_.size(); ++i) {
    if (merged_teams_[i].multimem && same_team(merged_teams_[i].team, team)) {
      return multimem_[i].mc_base_ptr;
    }
  }
  return std::nullopt;
}

void DevComm::release(Communicator& comm) {
  nccl().require("ncclDevCommDestroy", "DevCommResource.close", newer::kDeviceApiVersion);
  ncclComm_t c = comm.get();
  comm.run("ncclDevCommDestroy", [&] { return nccl().DevCommDestroy(c, storage_.data()); });
}

} // namespace nccl_core
