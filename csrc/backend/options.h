// Options of a nccl_core process group (what `pg_options=` carries).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <optional>

#include "failures/group_failures.h"
#include "comm/communicator.h"

namespace nccl_core {

struct GroupOptions : c10d::Backend::Options {
  explicit GroupOptions(
      std::chrono::milliseconds timeout = kBackendDefaultTimeout)
      : c10d::Backend::Options("nccl_core", timeout) {}

  // Overrides Backend::Options::clone where torch has it (2.12+), so splits
  // get an independent copy of the concrete type.
  c10::intrusive_ptr<c10d::Backend::Options> clone() const {
    return c10::make_intrusive<GroupOptions>(*this);
  }

  // init_process_group(enable_reconfigure=True) (torch >= 2.15): the
  // communicator is made by reconfigure(), never by a first collective.
  bool reconfigurable() const {
#if NCCL_CORE_TORCH >= 215
    return enable_reconfigure;
#else
    return false;
#endif
  }

  bool is_high_priority_stream = false;
  // wait() blocks the CPU until the op completes (or times out).
  bool blocking_wait = false;
  // Period of the watchdog that retires work and detects timeouts.
  std::chrono::milliseconds watchdog_interval{100};
  // Ops each rank keeps for the desync report (flight_recorder.h); 0 = no
  // recorder and no report.
  size_t trace_buffer_size = 256;
  // How long a timed-out rank waits for the others' answers (desync.h):
  // short, so that the error ends the job within timeout + 5 s.
  std::chrono::milliseconds desync_report_wait{2500};
  // How often the watchdog compares this rank's collectives with its ring
  // neighbour's through the store (call_check.h); 0 = never.
  std::chrono::milliseconds call_check_interval{1000};
  // Policies 0 and 2: an error that no program thread raised within this
  // long ends the process (error_policy.h); 0 = never.
  std::chrono::milliseconds unraised_error_grace{2000};
  // A watchdog that makes no sweep for this long ends the process
  // (heartbeat.h); 0 = off.
  std::chrono::milliseconds heartbeat_timeout{480 * 1000};
  // On a timeout or NCCL async error: TORCH_NCCL_ASYNC_ERROR_HANDLING's
  // values (error_policy.h); 3, ending the process, by default.
  int error_handling = ErrorPolicy::kSkipCleanUp;
  // The policy the watchdog applies.  With blocking wait the waiting call
  // reports a timeout itself, so the process is never ended for it (as in
  // backend nccl, where blocking wait turns async error handling off).
  ErrorPolicy policy() const {
    if (reconfigurable()) {
      return ErrorPolicy{ErrorPolicy::kReconfigure};
    }
    ErrorPolicy p{error_handling};
    if (blocking_wait && p.tears_down()) {
      p.mode = ErrorPolicy::kCleanUpOnly;
    }
    return p;
  }
  // Which calls run as our NVLink kernels instead of NCCL: unset, the path
  // table decides per world size, operation and size (nvlink/path_table.h,
  // from measurement); set, the value holds for every operation.
  // fast_path_max_bytes: all_reduce, reduce_scatter_tensor,
  // all_gather_into_tensor, broadcast and all_to_all_single calls whose input
  // is at most this many bytes run as one kernel of ours on a symmetric
  // scratch window (nvlink/engine.h); 0 = off; scratch costs twice the largest.
  std::optional<size_t> fast_path_max_bytes;
  // The same for eager calls alone, where fast_path_max_bytes is unset (the
  // table sends small eager calls to NCCL: an eager call of ours costs more
  // host time than NCCL's, path_table.h).  For programs bound by one call's
  // latency rather than by back-to-back calls.
  std::optional<size_t> eager_fast_path_max_bytes;
  // all_reduce calls of push_min_bytes..push_max_bytes (whole 16-byte packs,
  // any memory) run as one kernel of ours that pushes through NVLink into
  // the peers' staging windows (nvlink/push.h); 0 = off.  Staging costs
  // 2 (nranks - 1) / nranks of the largest such call (in powers of two from
  // 1 MiB, at most push_max_bytes), allocated at the first one.  Its wrong
  // results under GPU contention (slots cut per call, nvlink/push.h)
  // are fixed; tests/gpu/ddp_optim_in_backward.py and the GPU case
  // push_calls_of_different_sizes_keep_their_results guard them.
  std::optional<size_t> push_min_bytes;
  std::optional<size_t> push_max_bytes;
  // Blocks (SMs) a push all_reduce runs on, at most (1..128).
  int push_ctas = 32;
  // Fast-path all_reduces from this many bytes on take two shots (each rank
  // reduces one chunk and stores it into its peers' copies); 0 = never;
  // unset: the path table's.
  std::optional<size_t> two_shot_min_bytes;
  // Fast-path calls that send each peer at most this many bytes take the
  // one-way kernels (nvlink/one_way.h: stores with flags, no barrier);
  // 0 = never; unset: the path table's.
  std::optional<size_t> one_way_max_bytes;
  // TORCH_NCCL_ENABLE_TIMING: ops are timed for work._get_duration() and the
  // completion hooks (op_timing.h).
  bool enable_timing = false;
  // TORCH_NCCL_NAN_CHECK: what ops send is scanned for NaN on the GPU, and
  // one found is raised as the group's error (nan_watch.h).
  bool nan_check = false;
  // NCCL_CORE_NAN_CHECK=strict: the check waits for its result and refuses
  // the op before it sends (nan_watch.h, check_for_nan); implies nan_check.
  bool nan_check_strict = false;
  // Every caching-allocator segment on the group's device is registered with
  // its communicator (ncclCommRegister), existing ones at creation and new
  // ones as the allocator makes them, and deregistered before they are freed:
  // torch's TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK
  // (backend/segment_registry.h).
  bool register_allocator_segments = false;
  CommConfig config;
};

} // namespace nccl_core
