// Who is in a reconfigured group (torch >= 2.15's dist._reconfigure): each
// process's handle, which the program exchanges out of band, and the rank
// each member takes.  Pure logic, no NCCL: every rank computes the same
// answer from the same handles.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

namespace nccl_core::membership {

// A fresh handle for this process: "nccl_core:<host>:<pid>:<16 hex digits>".
std::string new_handle();

// The members in rank order: a list as given (its position is the rank), a
// set sorted (the backend's choice, the same on every rank).  ValueError
// for an empty list, a duplicate, or a string that is no nccl_core handle.
std::vector<std::string> ranked(
    const std::variant<std::unordered_set<std::string>, std::vector<std::string>>& handles);

// `mine`'s rank among `members`; ValueError naming it when it is not one.
int rank_of(const std::vector<std::string>& members, const std::string& mine);

// The members of `next` that are members of `now` too, `mine` aside: those
// that leave the current communicator together with this process.
std::vector<std::string> staying(const std::vector<std::string>& next,
                                 const std::vector<std::string>& now, const std::string& mine);

// A group's reconfigure record: this process's handle, the uuids used so far,
// the members of its communicator (in rank order; none before the first).
struct Generations {
  const std::string handle = new_handle();
  std::unordered_set<int64_t> used_uuids;
  std::vector<std::string> members;
};

}  // namespace nccl_core::membership
