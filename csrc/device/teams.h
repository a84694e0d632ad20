// Teams of a communicator, as NCCL's device API names them: the world, the
// LSA team (ranks that reach each other's memory by load/store), the rail
// team (one rank of each LSA team), and the CFT teams.  NCCL answers through
// its host-side queries (ncclTeamWorld, ncclTeamLsa, ncclTeamRail,
// ncclTeamRankToWorld, ncclTeamRankToLsa: 2.28.3; ncclTeamCft,
// ncclTeamCftMultimem: 2.31.2).  A team is anchored at the calling rank:
// team rank r is world rank `rank + (r - team.rank) * team.stride`, which is
// how a team handed back is checked before NCCL maps it.
#pragma once

namespace nccl_core {

class Communicator;

struct Team {
  int nranks = 0, rank = 0, stride = 0;
};

enum class TeamKind { World, Lsa, Rail, CftMultimem };

// NcclUnsupported naming the call and its release where NCCL lacks it.
Team team_of(Communicator& comm, TeamKind kind);
// ncclCftTeamMode_t: 0 flat, 1 hierarchical over multimem, 2 over LSA.
Team cft_team(Communicator& comm, int mode);

// NcclInvalid for a team that is not one of this rank's (its fields out of
// range, or team_rank mapping outside the communicator) and for a team_rank
// outside the team.
int team_rank_to_world(Communicator& comm, const Team& team, long long team_rank);
int team_rank_to_lsa(Communicator& comm, const Team& team, long long team_rank);

} // namespace nccl_core
