#include "device/teams.h"

#include "comm/communicator.h"
#include "nccl/api.h"
#include "nccl/features.h"
#include "nccl/seam.h"

namespace nccl_core {

namespace {

int team_rank_checked(const Communicator& comm, const Team& team, long long team_rank,
                      const char* what) {
  NCCL_CORE_REQUIRE(team.nranks >= 1 && team.rank >= 0 && team.rank < team.nranks &&
                        team.stride >= 1,
                    what, ": team (n_ranks=", team.nranks, ", rank=", team.rank,
                    ", stride=", team.stride,
                    ") is no team: it needs n_ranks >= 1, 0 <= rank < n_ranks and stride >= 1");
  NCCL_CORE_REQUIRE(team_rank >= 0 && team_rank < team.nranks, what, ": team_rank ", team_rank,
                    " is outside the team of ", team.nranks, " ranks");
  long long world = comm.rank() + (team_rank - team.rank) * static_cast<long long>(team.stride);
  NCCL_CORE_REQUIRE(world >= 0 && world < comm.nranks(), what, ": the team (n_ranks=",
                    team.nranks, ", rank=", team.rank, ", stride=", team.stride,
                    ") puts team rank ", team_rank, " at world rank ", world,
                    ", outside the communicator of ", comm.nranks(),
                    " ranks: it is not a team of rank ", comm.rank());
  return static_cast<int>(team_rank);
}

} // namespace

Team team_of(Communicator& comm, TeamKind kind) {
  Team t;
  ncclComm_t c = nullptr;
  switch (kind) {
    case TeamKind::World:
      nccl().require("ncclTeamWorld", "Communicator.team_world", features::kTeams.native_since);
      c = comm.get();
      NCCL_CORE_CHECK(c, nccl().TeamWorld(c, &t.nranks, &t.rank, &t.stride));
      break;
    case TeamKind::Lsa:
      nccl().require("ncclTeamLsa", "Communicator.team_lsa", features::kTeams.native_since);
      c = comm.get();
      NCCL_CORE_CHECK(c, nccl().TeamLsa(c, &t.nranks, &t.rank, &t.stride));
      break;
    case TeamKind::Rail:
      nccl().require("ncclTeamRail", "Communicator.team_rail", features::kTeams.native_since);
      c = comm.get();
      NCCL_CORE_CHECK(c, nccl().TeamRail(c, &t.nranks, &t.rank, &t.stride));
      break;
    case TeamKind::CftMultimem:
      nccl().require("ncclTeamCftMultimem", "Communicator.team_cft_multimem",
                     features::kCftTeams.native_since);
      c = comm.get();
      NCCL_CORE_CHECK(c, nccl().TeamCftMultimem(c, &t.nranks, &t.rank, &t.stride));
      break;
  }
  return t;
}

Team cft_team(Communicator& comm, int mode) {
  NCCL_CORE_REQUIRE(mode >= 0 && mode <= 2, "Invalid NcclCftTeamMode: ", mode,
                    " (FLAT 0, HIER_MULTIMEM 1, HIER_LSA 2)");
  nccl().require("ncclTeamCft", "Communicator.team_cft", features::kCftTeams.native_since);
  Team t;
  ncclComm_t c = comm.get();
  NCCL_CORE_CHECK(c, nccl().TeamCft(c, mode, &t.nranks, &t.rank, &t.stride));
  return t;
}

int team_rank_to_world(Communicator& comm, const Team& team, long long team_rank) {
  int r = team_rank_checked(comm, team, team_rank, "team_rank_to_world");
  nccl().require("ncclTeamRankToWorld", "Communicator.team_rank_to_world",
                 features::kTeams.native_since);
  const int t[3] = {team.nranks, team.rank, team.stride};
  int out = -1;
  ncclComm_t c = comm.get();
  NCCL_CORE_CHECK(c, nccl().TeamRankToWorld(c, t, r, &out));
  return out;
}

int team_rank_to_lsa(Communicator& comm, const Team& team, long long team_rank) {
  int r = team_rank_checked(comm, team, team_rank, "team_rank_to_lsa");
  nccl().require("ncclTeamRankToLsa", "Communicator.team_rank_to_lsa",
                 features::kTeams.native_since);
  const int t[3] = {team.nranks, team.rank, team.stride};
  int out = -1;
  ncclComm_t c = comm.get();
  NCCL_CORE_CHECK(c, nccl().TeamRankToLsa(c, t, r, &out));
  return out;
}

} // namespace nccl_core
