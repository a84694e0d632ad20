// How far the fast path's tracked calls have run, as their kernels report it:
// the last kernel block of a tracked call stores the call's ticket in
// host-mapped memory.  A plain call on the caller's stream then needs no end
// event, and the watchdog sees a stalled call without one (Backend::launch).
#pragma once

#include <atomic>
#include <cstdint>

namespace nccl_core::fast {

class Progress {
 public:
  Progress();  // on the current device
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Where kernels store the ticket of the call they finish.
  unsigned long long* device_word() const { return device_; }
  // The ticket the next tracked call gets, and its commit once launched
  // (only the thread that issues the group's calls calls these).
  uint64_t next() const { return issued_.load(std::memory_order_relaxed) + 1; }
  void commit(uint64_t ticket) { issued_.store(ticket, std::memory_order_release); }
  // Tickets handed out, and the last one finished on the GPU.
  uint64_t issued() const { return issued_.load(std::memory_order_acquire); }
  uint64_t done() const { return *host_; }
  bool idle() const { return done() >= issued(); }

 private:
  volatile unsigned long long* host_ = nullptr;
  unsigned long long* device_ = nullptr;
  std::atomic<uint64_t> issued_{0};
};

}  // namespace nccl_core::fast
