#include "collectives/path_agreement.h"

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "nccl/api.h"
#include "nvlink/path_table.h"
#include "util/torch_errors.h"

namespace nccl_core {

namespace {

constexpr const char* kSettings =
    "fast_path_max_bytes, eager_fast_path_max_bytes, push_min_bytes, push_max_bytes, "
    "push_ctas, two_shot_min_bytes, one_way_max_bytes";

// The ranks whose digest differs from rank 0's ("1, 3"); empty where all agree.
std::string ranks_that_differ(Communicator& comm, const nvlink::GroupPaths& paths,
                              const char* what) {
  if (comm.nranks() == 1) {
    return {};
  }
  std::vector<size_t> digests = comm.all_gather_sizes(paths_digest(paths), what);
  std::string differ;
  for (size_t r = 1; r < digests.size(); ++r) {
    if (digests[r] != digests[0]) {
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  return differ;
}

}  // namespace

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
  std::string differ = ranks_that_differ(comm, paths, "ncclAllGather (fast-path settings)");
  if (!differ.empty()) {
    raise_value_error(std::string("nccl_core: the ranks' fast-path settings differ: rank(s) ") +
                      differ + " against rank 0 (the group options " + kSettings +
                      ", or their NCCL_CORE_* variables). Each rank chooses every call's path "
                      "from them alone, so they must be the same on every rank");
  }
}

void check_raw_paths_agree(Communicator& comm, const nvlink::GroupPaths& paths) {
  // Static: a raw call of a communicator that never gets an engine comes here every time.
  static const std::string kVerdict = "collectives.raw_paths_verdict";
  auto verdict = std::static_pointer_cast<const std::string>(comm.extension(kVerdict));
  if (!verdict) {
    std::string differ =
        ranks_that_differ(comm, paths, "ncclAllGather (raw fast-path settings)");
    auto made = std::make_shared<const std::string>(
        differ.empty() ? std::string()
                       : "the ranks' NCCL_CORE_FAST_PATH_MAX_BYTES / "
                         "NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES differ: rank(s) " +
                             differ +
                             " against rank 0. This communicator's raw collectives choose "
                             "their paths (nccl_core's NVLink kernels or NCCL) from them "
                             "alone, so they must be the same on every rank");
    verdict = std::static_pointer_cast<const std::string>(
        comm.extension(kVerdict, [&] { return std::const_pointer_cast<std::string>(made); }));
  }
  NCCL_CORE_REQUIRE(verdict->empty(), *verdict);
}

}  // namespace nccl_core
