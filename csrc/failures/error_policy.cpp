#include "failures/error_policy.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace nccl_core {

const char* ErrorPolicy::outcome() const {
  switch (mode) {
    case kNone:
      return "; communicator kept for recovery (TORCH_NCCL_ASYNC_ERROR_HANDLING=0: "
             "dist.shrink_group with SHRINK_ABORT)";
    case kTearDown:
      return "; ending the process, which releases the communicator "
             "(TORCH_NCCL_ASYNC_ERROR_HANDLING=1; no abort first: it would let the stuck "
             "kernel go and the program read its unreduced output)";
    case kCleanUpOnly:
      return "; communicator aborted as this error is raised (TORCH_NCCL_ASYNC_ERROR_HANDLING=2)";
    case kReconfigure:
      return "; communicator aborted, the group waits for dist._reconfigure() "
             "(enable_reconfigure=True)";
    default:
      return "; ending the process (TORCH_NCCL_ASYNC_ERROR_HANDLING=3)";
  }
}

namespace {
std::atomic<bool> g_tearing_down{false};
}  // namespace

void begin_tear_down() { g_tearing_down.store(true); }

void block_if_tearing_down() {
  while (g_tearing_down.load()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

namespace {
double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void log_report(const std::string& report) {
  std::fprintf(stderr, "[nccl_core] %s\n", report.c_str());
  std::fflush(stderr);
}

void tear_down(const std::string& report) {
  begin_tear_down();
  // One write per line, flushed, before the signal: the report must survive.
  std::fprintf(stderr, "[nccl_core] %s\n", report.c_str());
  std::fprintf(stderr, "[nccl_core] ending the process at %.3f\n", unix_seconds());
  std::fprintf(stderr,
               "[nccl_core] to keep the process and handle the error in the program, set "
               "TORCH_NCCL_ASYNC_ERROR_HANDLING=2 (abort the communicator) or 0 (keep it)\n");
  std::fflush(stderr);
  std::abort();
}

}  // namespace nccl_core
