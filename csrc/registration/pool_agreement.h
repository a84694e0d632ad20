// What every rank must agree on before register_mem_pool(symm=True) makes
// its windows, one collective per segment.  Each check
// is an exchange every rank makes, so every rank reaches the same answer and
// raises the same error: no rank goes on into a window collective that its
// peers have left (they would wait until the timeout).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace nccl_core {

class Communicator;

namespace segments {

// Collective.  `sizes`: this rank's segments of the pool in registration
// order.  Raises NcclInvalid on every rank when some rank holds another
// number of segments, or segments of other sizes in that order (the k-th
// windows would pair up memory of different sizes).
void agree_on_segments(Communicator& comm, const std::vector<size_t>& sizes,
                       const std::string& pool);

// Collective.  Raises NcclInvalid on every rank when some rank saw one of
// its segments freed while the pool was being registered.
void agree_none_freed(Communicator& comm, bool freed_here, const std::string& pool);

}  // namespace segments
}  // namespace nccl_core
