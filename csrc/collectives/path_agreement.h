// Every rank of a communicator chooses each call's path (our kernels or
// NCCL's) from the call's arguments and the communicator's paths alone
// (nvlink/path_table.h), with no word exchanged per call, so the paths must
// be the same on every rank.  They come from each rank's own options and
// NCCL_CORE_* variables, which nothing else makes equal: a rank with other
// paths would take NCCL where its peers take our kernel, and all would wait
// until the timeout.  Checked once per communicator, by both surfaces:
// where a group adopts its communicator, and at the first raw collective of
// a communicator no group gave an engine (nvlink/raw.h).
#pragma once

#include <cstdint>

namespace nccl_core {

class Communicator;
namespace nvlink {
struct GroupPaths;
}

// A digest of every setting in `paths` that chooses a call's path or a
// kernel's protocol (the push's CTA count).
uint64_t paths_digest(const nvlink::GroupPaths& paths);

// One all-gather of the digest; a ValueError on every rank, naming the ranks
// whose paths differ from rank 0's, where they are not all the same.
void check_paths_agree(Communicator& comm, const nvlink::GroupPaths& paths);

// The same for the raw API's paths of `comm` (the table with the process's
// NCCL_CORE_*FAST_PATH_MAX_BYTES): all-gathered at the first call only, the
// verdict kept with the communicator; NcclInvalid at that call and every
// later one where the ranks differ.  Every rank calls it at the same raw
// collective (outside a group and a capture, where no engine exists yet).
void check_raw_paths_agree(Communicator& comm, const nvlink::GroupPaths& paths);

}  // namespace nccl_core
