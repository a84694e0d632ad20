// FakeNccl's answers to queries (fake_nccl.h): communicator properties in
// the layout of the release the fake plays, teams of a one-node
// communicator, the grow handshake, a group's simulated time, NCCL's
// parameters from the script, and empty window pointers and device
// communicators.
#include "testing/fake_nccl.h"

#include <cstddef>
#include <cstring>

#include "device/layouts.h"
#include "util/concat.h"

namespace nccl_core::testing {

namespace {

void put_team(int nranks, int rank, int stride, int* n, int* r, int* s) {
  *n = nranks;
  *r = rank;
  *s = stride;
}

} // namespace

void FakeNccl::set_param(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  params_[key] = value;
}

// Fills in the fields of the release it plays that fit the size the caller
// claimed, as NCCL does: the tests see which release's layout was asked for
// (the recorded size and version) and which fields came back.
ncclResult_t FakeNccl::CommQueryProperties(ncclComm_t comm, void* properties) {
  using layout::Properties229;
  using layout::Properties232;
  auto* p = static_cast<Properties232*>(properties);
  Properties229& b = p->base;
  Comm* c = comm_of(comm);
  int version = 0;
  GetVersion(&version);
  size_t size = b.size;
  b.rank = c != nullptr ? c->rank : 0;
  b.nranks = c != nullptr ? c->nranks : 1;
  b.cuda_dev = 3;
  b.nvml_dev = 5;
  b.device_api_support = true;
  b.multimem_support = false;
  b.gin_type = 3;  // GDAKI
  if (version >= 22907 && size >= sizeof(Properties229)) {
    b.n_lsa_teams = 1;
    b.host_rma_support = true;
    b.railed_gin_type = 2;  // PROXY
  }
  if (version >= layout::kProperties231 &&
      size >= offsetof(Properties232, cft_support)) {
    p->comm_hash = 0x5eed0000u + static_cast<uint64_t>(b.nranks);
    p->gin_min_stride = 1;
    p->gin_connection_type = 1;  // FULL
    p->gin_support[2] = p->gin_support[3] = true;
    p->dev_comm_runtime_version_size = 248;
  }
  if (version >= layout::kProperties232 && size >= sizeof(Properties232)) {
    p->cft_support = true;
    p->cft_multicast_support = false;
    p->cft_counted_support = true;
  }
  return answer("CommQueryProperties", concat("size=", size, ", version=", b.version));
}

ncclResult_t FakeNccl::CommGetUniqueId(ncclComm_t, ncclUniqueId* id) {
  std::memset(id, 'g', sizeof(*id));
  return answer("CommGetUniqueId");
}

ncclResult_t FakeNccl::CommGrow(ncclComm_t comm, int nranks, const ncclUniqueId* id, int rank,
                                ncclComm_t* grown, ncclConfig_t*) {
  Comm* parent = comm_of(comm);
  bool marked = id != nullptr && id->internal[0] == 'g';
  ncclResult_t r = answer("CommGrow", concat("nranks=", nranks, ", id=",
                                             id == nullptr ? "none" : marked ? "grow" : "other",
                                             ", rank=", rank, ", parent=", parent ? "yes" : "no"));
  int new_rank = rank >= 0 ? rank : parent != nullptr ? parent->rank : 0;
  *grown = r == ncclSuccess ? make_comm(nranks, new_rank) : nullptr;
  return r;
}

ncclResult_t FakeNccl::GroupSimulateEnd(ncclSimInfo_t* info) {
  // NCCL refuses a struct its initializer did not fill in; the estimate is a
  // value the tests can recognise.
  bool initialised = info->size == sizeof(ncclSimInfo_t) && info->magic == 0x74685283u;
  if (initialised) {
    info->estimatedTime = 42.5f;
  }
  return initialised ? answer("GroupSimulateEnd") : ncclInvalidArgument;
}

ncclResult_t FakeNccl::ParamGetParameter(const char* key, const char** value, int* length) {
  std::string name(key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = params_.find(name);
    if (it != params_.end()) {
      *value = it->second.c_str();  // stable: entries are never erased
      *length = static_cast<int>(it->second.size()) + 1;  // NCCL counts the terminator
    }
  }
  ncclResult_t r = answer("ParamGetParameter", concat("key=", name));
  std::lock_guard<std::mutex> lock(mutex_);
  return r == ncclSuccess && params_.count(name) == 0 ? ncclInvalidArgument : r;
}

ncclResult_t FakeNccl::ParamGetAllParameterKeys(const char*** keys, int* count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    param_keys_.clear();
    for (const auto& [key, value] : params_) {
      param_keys_.push_back(key.c_str());
    }
    *keys = param_keys_.data();
    *count = static_cast<int>(param_keys_.size());
  }
  return answer("ParamGetAllParameterKeys");
}

ncclResult_t FakeNccl::ParamDumpAll() { return answer("ParamDumpAll"); }

ncclResult_t FakeNccl::TeamWorld(ncclComm_t comm, int* nranks, int* rank, int* stride) {
  Comm* c = comm_of(comm);
  put_team(c ? c->nranks : 1, c ? c->rank : 0, 1, nranks, rank, stride);
  return answer("TeamWorld");
}

ncclResult_t FakeNccl::TeamLsa(ncclComm_t comm, int* nranks, int* rank, int* stride) {
  Comm* c = comm_of(comm);
  put_team(c ? c->nranks : 1, c ? c->rank : 0, 1, nranks, rank, stride);
  return answer("TeamLsa");
}

// One node: every rank is in the LSA team, so each rail holds one rank.
ncclResult_t FakeNccl::TeamRail(ncclComm_t comm, int* nranks, int* rank, int* stride) {
  Comm* c = comm_of(comm);
  put_team(1, 0, c ? c->nranks : 1, nranks, rank, stride);
  return answer("TeamRail");
}

ncclResult_t FakeNccl::TeamCft(ncclComm_t comm, int mode, int* nranks, int* rank, int* stride) {
  Comm* c = comm_of(comm);
  put_team(c ? c->nranks : 1, c ? c->rank : 0, 1, nranks, rank, stride);
  return answer("TeamCft", concat("mode=", mode));
}

ncclResult_t FakeNccl::TeamCftMultimem(ncclComm_t comm, int* nranks, int* rank, int* stride) {
  Comm* c = comm_of(comm);
  put_team(c ? c->nranks : 1, c ? c->rank : 0, 1, nranks, rank, stride);
  return answer("TeamCftMultimem");
}

ncclResult_t FakeNccl::TeamRankToWorld(ncclComm_t comm, const int team[3], int team_rank,
                                       int* out) {
  Comm* c = comm_of(comm);
  *out = (c ? c->rank : 0) + (team_rank - team[1]) * team[2];
  return answer("TeamRankToWorld", concat("team=(", team[0], ",", team[1], ",", team[2],
                                          "), team_rank=", team_rank));
}

ncclResult_t FakeNccl::TeamRankToLsa(ncclComm_t comm, const int team[3], int team_rank,
                                     int* out) {
  Comm* c = comm_of(comm);  // the LSA team is the whole communicator here
  *out = (c ? c->rank : 0) + (team_rank - team[1]) * team[2];
  return answer("TeamRankToLsa", concat("team=(", team[0], ",", team[1], ",", team[2],
                                        "), team_rank=", team_rank));
}

// Window pointers and device communicators: answered empty.
ncclResult_t FakeNccl::GetLsaDevicePointer(ncclWindow_t, size_t, int, void** out) {
  *out = nullptr;
  return answer("GetLsaDevicePointer");
}
ncclResult_t FakeNccl::GetPeerDevicePointer(ncclWindow_t, size_t, int, void** out) {
  *out = nullptr;
  return answer("GetPeerDevicePointer");
}
ncclResult_t FakeNccl::GetLsaMultimemDevicePointer(ncclWindow_t, size_t, void** out) {
  *out = nullptr;
  return answer("GetLsaMultimemDevicePointer");
}
// As NCCL with multicast: the handle's base plus the offset (the fake's
// windows have no place of their own in the multicast range).
ncclResult_t FakeNccl::GetMultimemDevicePointer(ncclWindow_t, size_t offset, void* mc_base_ptr,
                                                void** out) {
  *out = static_cast<char*>(mc_base_ptr) + offset;
  return answer("GetMultimemDevicePointer", concat("offset=", offset));
}
ncclResult_t FakeNccl::WinGetUserPtr(ncclComm_t, ncclWindow_t, void** out) {
  *out = nullptr;
  return answer("WinGetUserPtr");
}
// From 2.30 the requirements are versioned and read up to their size, and
// the ncclDevComm starts with magic and version: recorded and written as
// the release the fake plays would.
ncclResult_t FakeNccl::DevCommCreate(ncclComm_t, const void* requirements, void* dev_comm) {
  int version = 0;
  GetVersion(&version);
  // Resource nodes get their handles as NCCL assigns them: buffer handles
  // 0x100 + i, GIN signal starts 0x200 + i, for the i-th node; team nodes
  // with multimem the multicast base 0x10000 * (i + 1) of the i-th team.
  const auto* body = version < 22902
                         ? static_cast<const layout::RequirementsBody*>(requirements)
                         : &static_cast<const layout::Requirements229*>(requirements)->body;
  int nodes = 0;
  for (auto* n = static_cast<layout::ResourceRequirements*>(body->resource_requirements);
       n != nullptr; n = static_cast<layout::ResourceRequirements*>(n->next), ++nodes) {
    if (n->out_buffer_handle != nullptr) {
      *static_cast<uint32_t*>(n->out_buffer_handle) = 0x100u + nodes;
    }
    if (n->out_gin_signal_start != nullptr) {
      *static_cast<uint32_t*>(n->out_gin_signal_start) = 0x200u + nodes;
    }
  }
  std::string teams;
  int t = 0;
  for (auto* n = static_cast<layout::TeamRequirements*>(body->team_requirements); n != nullptr;
       n = static_cast<layout::TeamRequirements*>(n->next), ++t) {
    teams += concat(t == 0 ? "teams=" : ",", "(", n->nranks, ",", n->rank, ",", n->stride,
                    n->multimem ? ",mm" : "", ")");
    if (n->out_multimem_handle != nullptr) {
      static_cast<layout::MultimemHandle*>(n->out_multimem_handle)->mc_base_ptr =
          reinterpret_cast<void*>(static_cast<uintptr_t>(0x10000) * (t + 1));
    }
  }
  if (version < 23000) {
    std::string fields = nodes != 0 ? concat("resources=", nodes) : "";
    return answer("DevCommCreate", teams.empty() ? fields
                                                 : fields.empty() ? teams : fields + ", " + teams);
  }
  const auto* r = static_cast<const layout::Requirements231*>(requirements);
  std::string fields = concat("size=", r->size, ", version=", r->version,
                              ", gin_connection_type=", r->gin_connection_type);
  auto has = [&](size_t end) { return r->size >= end; };
  if (has(offsetof(layout::Requirements231, gin_strong_signals_required))) {
    fields += concat(", traffic_class=", r->gin_traffic_class, ", world_barriers=",
                     r->world_gin_barrier_count);
  }
  if (has(offsetof(layout::Requirements231, gin_custom_stride))) {
    fields += concat(", strong=", r->gin_strong_signals_required, ", va=",
                     r->gin_va_signals_required);
  }
  if (has(sizeof(layout::Requirements231))) {
    fields += concat(", stride=", r->gin_custom_stride, ", gin_type=", r->gin_type,
                     ", cft_caps=", r->cft_caps, ", cft_barriers=", r->cft_barrier_count);
  }
  if (nodes != 0) {
    fields += concat(", resources=", nodes);
  }
  if (!teams.empty()) {
    fields += ", " + teams;
  }
  auto* head = static_cast<unsigned*>(dev_comm);
  head[0] = layout::kApiMagic;
  head[1] = static_cast<unsigned>(version);
  return answer("DevCommCreate", fields);
}
ncclResult_t FakeNccl::DevCommDestroy(ncclComm_t, const void*) { return answer("DevCommDestroy"); }

// The resource helpers fill the node as NCCL does in spirit: a buffer of the
// resource's size, the handle's own fields now, the rest at the create.
namespace {
layout::ResourceRequirements& fresh_node(void* req) {
  auto* node = static_cast<layout::ResourceRequirements*>(req);
  *node = layout::ResourceRequirements{};
  return *node;
}
std::string team_text(const int team[3]) {
  return concat("team=(", team[0], ",", team[1], ",", team[2], ")");
}
}  // namespace

ncclResult_t FakeNccl::LsaBarrierCreateRequirement(const int team[3], int n_barriers,
                                                   void* handle, void* req) {
  auto* h = static_cast<layout::ResourceHandle*>(handle);
  auto& node = fresh_node(req);
  node.buffer_size = static_cast<size_t>(n_barriers) * 64;
  node.out_buffer_handle = &h->first;
  h->second = static_cast<uint32_t>(n_barriers);
  return answer("LsaBarrierCreateRequirement", concat(team_text(team), ", n=", n_barriers));
}
ncclResult_t FakeNccl::GinBarrierCreateRequirement(ncclComm_t, const int team[3], int n_barriers,
                                                   void* handle, void* req) {
  auto* h = static_cast<layout::ResourceHandle*>(handle);
  auto& node = fresh_node(req);
  node.gin_signal_count = n_barriers;
  node.out_gin_signal_start = &h->first;
  return answer("GinBarrierCreateRequirement", concat(team_text(team), ", n=", n_barriers));
}
ncclResult_t FakeNccl::LLA2ACalcSlots(int max_elements, int max_element_size, int* out) {
  *out = max_elements * ((max_element_size + 7) / 8);
  return answer("LLA2ACalcSlots", concat(max_elements, ", ", max_element_size));
}
ncclResult_t FakeNccl::LLA2ACreateRequirement(int n_blocks, int n_slots, void* handle,
                                              void* req) {
  auto* h = static_cast<layout::ResourceHandle*>(handle);
  auto& node = fresh_node(req);
  node.buffer_size = static_cast<size_t>(n_blocks) * n_slots * 16;
  node.out_buffer_handle = &h->first;
  h->second = static_cast<uint32_t>(n_slots);
  return answer("LLA2ACreateRequirement", concat("blocks=", n_blocks, ", slots=", n_slots));
}

} // namespace nccl_core::testing
