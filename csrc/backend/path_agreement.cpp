#include "backend/path_agreement.h"

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "nvlink/path_table.h"
#include "util/torch_errors.h"

namespace nccl_core {

uint64_t paths_digest(const nvlink::GroupPaths& paths) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, over each setting's 8 bytes
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    }
  };
  for (size_t v : paths.fast_max_bytes) mix(v);
  for (size_t v : paths.eager_fast_max_bytes) mix(v);
  mix(paths.push.min_bytes);
  mix(paths.push.eager_min_bytes);
  mix(paths.push.max_bytes);
  mix(static_cast<uint64_t>(paths.push.ctas));
  mix(paths.two_shot_min_bytes);
  mix(paths.one_way_max_bytes);
  return h;
}

void check_paths_agree(Communicator& comm, const nvlink::GroupPaths& paths) {
  if (comm.nranks() == 1) {
    return;
  }
  std::vector<size_t> digests =
      comm.all_gather_sizes(paths_digest(paths), "ncclAllGather (fast-path settings)");
  std::string differ;
  for (size_t r = 1; r < digests.size(); ++r) {
    if (digests[r] != digests[0]) {
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  if (!differ.empty()) {
    raise_value_error(
        "nccl_core: the ranks' fast-path settings differ: rank(s) " + differ +
        " against rank 0 (the group options fast_path_max_bytes, eager_fast_path_max_bytes, "
        "push_min_bytes, push_max_bytes, push_ctas, two_shot_min_bytes, one_way_max_bytes, or "
        "their NCCL_CORE_* variables). Each rank chooses every call's path from them alone, "
        "so they must be the same on every rank");
  }
}

}  // namespace nccl_core
