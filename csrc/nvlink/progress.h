// How far the fast path's kernels have run, as they report it: the last
// block of each call launched outside graph capture stores the call's ticket
// in host-mapped memory, on every way out (done, or stopped by an abort).
//   - A plain call on the caller's stream needs no end event, and the
//     watchdog sees a stalled one without it (Backend::launch).
//   - Before NCCL's abort unmaps the scratch window, stop_kernels() makes
//     every launched kernel leave and waits for their reports: a kernel still
//     queued then must not write into unmapped memory.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "memory/mapped_host.h"

namespace nccl_core::nvlink {

class Progress {
 public:
  Progress();  // on the current device (the engine's)
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Where kernels store the ticket of the call they finish.
  unsigned long long* device_word() const { return device_; }
  // Where kernels record a peer whose call did not match theirs (kernels.h:
  // [pack_fault(...), seq]); fault() reads it: 0 while none.
  unsigned long long* fault_words() const { return device_ + 2; }
  unsigned long long fault() const { return host_[2]; }
  unsigned long long fault_seq() const { return host_[3]; }
  // The word kernels read first (nonzero: leave at once), zeroed on `stream`
  // at the first request (the engine's set-up, never under graph capture).
  const unsigned long long* stop_word(int device, cudaStream_t stream);

  // The ticket the next call gets, and its commit once launched; a tracked
  // call's Work relies on the report (only the thread that issues the
  // group's calls calls these).
  uint64_t next() const { return issued_.load(std::memory_order_relaxed) + 1; }
  void commit(uint64_t ticket, bool tracked) {
    issued_.store(ticket, std::memory_order_release);
    if (tracked) {
      tracked_.store(ticket, std::memory_order_release);
    }
  }
  // The last ticket finished on the GPU.
  uint64_t done() const { return *host_; }
  // Every launched kernel has left.
  bool idle() const { return done() >= issued_.load(std::memory_order_acquire); }
  // A tracked call has not reported yet.
  bool tracked_pending() const { return done() < tracked_.load(std::memory_order_acquire); }

  // After the communicator's abort flag is up (running kernels leave at their
  // next poll of it): raises the stop word for kernels not started yet, then
  // waits until every launched kernel has left, at most `limit` (a kernel
  // queued behind a hung NCCL kernel starts only after NCCL's abort; it then
  // reads the stop word and leaves without touching the window).
  void stop_kernels(std::chrono::milliseconds limit) noexcept;
  // Before the windows close on a live communicator: waits until every
  // launched kernel has left, at most `limit` (a kernel waiting for a rank
  // that never comes ends only with an abort).
  void wait_idle(std::chrono::milliseconds limit) const noexcept;

 private:
  int device_index_ = -1;
  MappedHost mapped_;
  volatile unsigned long long* host_ = nullptr;  // [done, 1 (the stop value), fault, its seq]
  unsigned long long* device_ = nullptr;         // host_[0], as the GPU sees it
  at::Tensor stop_;                              // one word of device memory
  std::atomic<uint64_t> issued_{0};
  std::atomic<uint64_t> tracked_{0};
};

}  // namespace nccl_core::nvlink
