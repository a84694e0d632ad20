// Bindings of what a Communicator reports about itself: its properties
// (NCCLCommProperties and the accessors of single fields) and its teams
// (NCCLTeam, the team queries and the mapping of a team's ranks).
#include <pybind11/pybind11.h>

#include "comm/communicator.h"
#include "device/properties.h"
#include "device/teams.h"
#include "nccl/api.h"
#include "nccl/features.h"
#include "python/bind.h"
#include "python/convert.h"
#include "util/checked.h"

namespace py = pybind11;

namespace nccl_core::python {

namespace {

using CommPtr = std::shared_ptr<Communicator>;

py::object constant(const char* type, int value) {
  return py::module_::import("nccl_core_backend.constants").attr(type)(value);
}

py::object properties_object(const CommProperties& p) {
  py::dict f;
  f["rank"] = p.rank;
  f["n_ranks"] = p.nranks;
  f["cuda_dev"] = p.cuda_dev;
  f["nvml_dev"] = p.nvml_dev;
  f["device_api_support"] = p.device_api_support;
  f["multimem_support"] = p.multimem_support;
  f["gin_type"] = constant("NcclGinType", p.gin_type);
  py::object none = py::none();
  f["n_lsa_teams"] = p.has_2_29_7 ? py::int_(p.n_lsa_teams) : none;
  f["host_rma_support"] = p.has_2_29_7 ? py::bool_(p.host_rma_support) : none;
  f["railed_gin_type"] = p.has_2_29_7 ? constant("NcclGinType", p.railed_gin_type) : none;
  f["comm_hash"] = p.has_2_31 ? py::int_(p.comm_hash) : none;
  f["gin_min_stride"] = p.has_2_31 ? py::int_(p.gin_min_stride) : none;
  f["gin_connection_type"] =
      p.has_2_31 ? constant("NcclGinConnectionType", p.gin_connection_type) : none;
  if (p.has_2_31) {
    py::list types;
    for (int t : p.available_gin_types) {
      types.append(constant("NcclGinType", t));
    }
    f["available_gin_types"] = py::module_::import("builtins").attr("frozenset")(types);
  } else {
    f["available_gin_types"] = none;
  }
  f["dev_comm_runtime_version_size"] = p.has_2_31 ? py::int_(p.dev_comm_runtime_version_size)
                                                  : none;
  f["cft_support"] = p.has_2_32 ? py::bool_(p.cft_support) : none;
  f["cft_multicast_support"] = p.has_2_32 ? py::bool_(p.cft_multicast_support) : none;
  f["cft_counted_support"] = p.has_2_32 ? py::bool_(p.cft_counted_support) : none;
  return py::module_::import("nccl_core_backend.properties").attr("NCCLCommProperties")(**f);
}

// A field of 2.29.7 on its own: NcclUnsupported naming 2.29.7 before.
CommProperties properties_229_7(Communicator& c, const char* what) {
  return comm_properties(c, features::kRailedGinType, what);
}

py::object team_object(const Team& t) {
  return py::module_::import("nccl_core_backend.team").attr("NCCLTeam")(t.nranks, t.rank,
                                                                         t.stride);
}

Team team_from(py::handle team) {
  py::object cls = py::module_::import("nccl_core_backend.team").attr("NCCLTeam");
  NCCL_CORE_REQUIRE(py::isinstance(team, cls),
                    "team must be an NCCLTeam (from team_world, team_lsa, team_rail or "
                    "team_cft), got ", py::str(py::type::of(team)).cast<std::string>());
  Team t;
  t.nranks = checked::narrow<int>(as_int(team.attr("n_ranks"), "team.n_ranks"), "team.n_ranks");
  t.rank = checked::narrow<int>(as_int(team.attr("rank"), "team.rank"), "team.rank");
  t.stride = checked::narrow<int>(as_int(team.attr("stride"), "team.stride"), "team.stride");
  return t;
}

} // namespace

void bind_properties(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<Communicator, CommPtr>>(m.attr("Communicator"));
  cls.def_property_readonly(
         "properties", [](Communicator& c) { return properties_object(comm_properties(c)); },
         "NCCLCommProperties: every field ncclCommQueryProperties reports (NCCL >= 2.29.2; "
         "fields of later releases are None on older ones).")
      .def_property_readonly(
          "cuda_dev", [](Communicator& c) { return comm_properties(c).cuda_dev; },
          "CUDA device of the communicator, as NCCL reports it (NCCL >= 2.29.2).")
      .def_property_readonly(
          "nvml_dev", [](Communicator& c) { return comm_properties(c).nvml_dev; },
          "NVML index of the communicator's GPU (NCCL >= 2.29.2).")
      .def_property_readonly(
          "device_api_support",
          [](Communicator& c) { return comm_properties(c).device_api_support; },
          "Whether device communicators can be created here (NCCL >= 2.29.2).")
      .def_property_readonly(
          "multimem_support", [](Communicator& c) { return comm_properties(c).multimem_support; },
          "Whether the LSA team can use NVLink multicast (NCCL >= 2.29.2).")
      .def_property_readonly(
          "gin_type",
          [](Communicator& c) { return constant("NcclGinType", gin_type(c, false)); },
          "NcclGinType reaching every rank (NCCL >= 2.29.2).")
      .def_property_readonly(
          "railed_gin_type",
          [](Communicator& c) { return constant("NcclGinType", gin_type(c, true)); },
          "NcclGinType reaching the ranks of this rail (NCCL >= 2.29.7).")
      .def_property_readonly(
          "n_lsa_teams",
          [](Communicator& c) { return properties_229_7(c, "Communicator.n_lsa_teams").n_lsa_teams; },
          "Number of LSA teams (NCCL >= 2.29.7).")
      .def_property_readonly(
          "host_rma_support",
          [](Communicator& c) {
            return properties_229_7(c, "Communicator.host_rma_support").host_rma_support;
          },
          "Whether NCCL's host-side one-sided calls work here (NCCL >= 2.29.7).")
      .def_property_readonly(
          "team_world", [](Communicator& c) { return team_object(team_of(c, TeamKind::World)); },
          "NCCLTeam of every rank (ncclTeamWorld).")
      .def_property_readonly(
          "team_lsa", [](Communicator& c) { return team_object(team_of(c, TeamKind::Lsa)); },
          "NCCLTeam of the ranks this one reaches by load/store (ncclTeamLsa).")
      .def_property_readonly(
          "team_rail", [](Communicator& c) { return team_object(team_of(c, TeamKind::Rail)); },
          "NCCLTeam of one rank of each LSA team, this one among them (ncclTeamRail).")
      .def(
          "team_cft",
          [](Communicator& c, py::handle mode) {
            int md = checked::narrow<int>(as_int(mode, "mode"), "mode");
            return team_object(cft_team(c, md));
          },
          py::arg("mode") = 0, "NCCLTeam of the CFT unicast group in `mode`'s layout "
          "(NcclCftTeamMode; ncclTeamCft, NCCL >= 2.31.2).")
      .def_property_readonly(
          "team_cft_multimem",
          [](Communicator& c) { return team_object(team_of(c, TeamKind::CftMultimem)); },
          "NCCLTeam of the CFT multicast group (ncclTeamCftMultimem, NCCL >= 2.31.2).")
      .def(
          "team_rank_to_world",
          [](Communicator& c, py::handle team, py::handle team_rank) {
            return team_rank_to_world(c, team_from(team), as_int(team_rank, "team_rank"));
          },
          py::arg("team"), py::arg("team_rank"),
          "This communicator's rank of `team`'s rank `team_rank` (ncclTeamRankToWorld).")
      .def(
          "team_rank_to_lsa",
          [](Communicator& c, py::handle team, py::handle team_rank) {
            return team_rank_to_lsa(c, team_from(team), as_int(team_rank, "team_rank"));
          },
          py::arg("team"), py::arg("team_rank"),
          "The LSA team's rank of `team`'s rank `team_rank` (ncclTeamRankToLsa).");
}

} // namespace nccl_core::python
