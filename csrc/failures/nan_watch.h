// The NaN check (TORCH_NCCL_NAN_CHECK / NCCL_CORE_NAN_CHECK / Options.nan_check)
// without a host round trip, its default mode.
//
// Before an op's NCCL calls, a kernel on the op's stream scans what the op
// sends (nan_kernel.h); one that finds a NaN records the op's sequence number
// and the first NaN's index in host-mapped memory.  The host never waits for
// the scan: the op runs (its output holds the NaN, as it would without the
// check), and the error reaches the program as a DistBackendError naming the
// op, its sequence number and the element, through the group's error
// handling (error_policy.h) like any collective error:
//   - the watchdog looks every sweep, and hands the report to the policy
//     (policies 1 and 3 end the process, as backend nccl's device trap does;
//     0 and 2 fail the group, and the error must be raised in time).  The
//     communicator is never aborted for it: it is healthy, and peers may
//     still be inside the op;
//   - the group's next call raises it;
//   - Work.wait() raises it once the scan ran (always under blocking wait,
//     which waits for the op, hence for the scan before it).
// Integer, bool and 4-bit data hold no NaN and are not read.  Strict mode
// (nan_check_strict; check_for_nan below) keeps the refusal before anything
// is sent.
#pragma once

#include <ATen/core/Tensor.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "failures/nan_kernel.h"
#include "memory/mapped_host.h"

namespace nccl_core {

class GroupInfo;

class NanWatch {
 public:
  // Takes the found report (watchdog.h's report(): the group's error policy).
  using Handler = std::function<void(const std::string&)>;

  NanWatch();  // on the current device
  NanWatch(const NanWatch&) = delete;
  NanWatch& operator=(const NanWatch&) = delete;

  // Enqueues the scans of what op `seq` (`op`: its name) sends, on `stream`.
  void scan(const std::vector<at::Tensor>& tensors, const char* op, uint64_t seq,
            cudaStream_t stream);
  // One load of host memory: a scan found a NaN.
  bool found() const {
    return static_cast<const volatile NanReport*>(report_)->seq != kNanNone;
  }
  // The first caller after a scan found a NaN hands its report to the
  // handler; returns whether one was found.  Later callers return once that
  // hand-over finished.
  bool handle_if_found();
  // handle_if_found(), then raises the report as a DistBackendError in this
  // thread (marking the group's error raised); nothing if none was found.
  void raise_if_found(GroupInfo* group);
  // The watchdog's look: handle_if_found() unless a program thread is inside
  // a call of the group (it raises the report itself on its way out, at
  // Work.wait(); a call blocked on peers, as NCCL's connection set-up is, must
  // not start the unraised-error clock).
  bool watchdog_look() { return in_calls_.load() == 0 && handle_if_found(); }
  // While a program thread is inside one of the group's calls.
  class InCall {
   public:
    explicit InCall(NanWatch& w) : w_(w) { w_.in_calls_.fetch_add(1); }
    ~InCall() { w_.in_calls_.fetch_sub(1); }
    InCall(const InCall&) = delete;
    InCall& operator=(const InCall&) = delete;

   private:
    NanWatch& w_;
  };
  void set_handler(Handler handler);
  // The report of the NaN found ("" while none).
  std::string message() const;

 private:
  struct Note {  // what op `seq` sent, for the report
    uint64_t seq = 0;
    const char* op = nullptr;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    int64_t numel = 0;
    size_t inputs = 0;
  };

  MappedHost mapped_;
  NanReport* report_ = nullptr;  // host view
  NanReport* device_ = nullptr;  // the GPU's view
  int blocks_limit_ = 1;
  mutable std::mutex mutex_;     // notes_, handler_, handled_
  std::array<Note, NanReport::kSlots> notes_{};
  Handler handler_;
  bool handled_ = false;
  std::atomic<int> in_calls_{0};
};

// The strict NaN check (NCCL_CORE_NAN_CHECK=strict, Options.nan_check_strict):
// the data an op sends is checked for NaN before NCCL sees it, on the op's
// stream.  The default check (nan_watch.h) never waits on the host; this
// one does, so that it can refuse the op.
//
// Outside CUDA graph capture the check waits for its result and refuses the
// op with a ValueError naming the op, its sequence number and the first NaN's
// index: nothing is sent, and this rank's peers then time out in the op as
// with any rank that skips a collective.  During capture the host cannot wait:
// a device-side assert fires on replay instead (as backend nccl's trap does),
// which ends the process.  Integer and bool data cannot hold NaN and are not
// read.  The cost is a reduction kernel and a host wait per op.
// Runs on the current stream.  `capturing`: the stream is being captured.
void check_for_nan(const std::vector<at::Tensor>& tensors, const char* op, uint64_t seq,
                   bool capturing);

}  // namespace nccl_core
