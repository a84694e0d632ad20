// Where a group's communicator comes from when it is first made, other than
// a fresh ncclCommInitRankConfig: a split of a parent group's (new_group,
// split_group) or a grow of a smaller group's (nc.grow_group, splits.cpp).
// The source is let go once the communicator exists, so a child group does
// not keep its parent alive.
#pragma once
#include <c10/util/intrusive_ptr.h>
#include <chrono>
#include <memory>
#include <optional>
#include <nccl.h>

namespace nccl_core {

class Backend;
class Communicator;
struct CommConfig;

// ncclCommGrow's side of one rank: the smaller group's communicator on its
// members (null on a new rank), and the unique id its rank 0 took for the grow.
struct GrowSource {
  std::shared_ptr<Communicator> parent;
  ncclUniqueId id;
};

// The grown communicator of `rank` of `size` on `device` (splits.cpp): a
// member grows its own, rank 0 with the id; a new rank joins from none.
std::shared_ptr<Communicator> grown_communicator(const GrowSource& source, int rank, int size,
                                                 int device, const CommConfig& config,
                                                 std::chrono::milliseconds timeout);

struct CommSource {
  c10::intrusive_ptr<Backend> split_parent;  // null: not a split
  int split_color = -1;
  std::optional<GrowSource> grow;
};

}  // namespace nccl_core
