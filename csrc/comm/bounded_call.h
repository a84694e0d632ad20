// Bounds NCCL host calls that can wait on peers.
//
// On a blocking communicator, a call such as the first collective (which
// sets up connections), a window registration or a split returns only when
// the peers take part.  A missing peer would hang the caller forever.  A
// BoundedCall scope registers the call with one process-wide monitor thread;
// if it is still running when the communicator's timeout expires, the
// monitor aborts the communicator (NCCL then returns from the call with an
// error) and the scope reports which call timed out.  Non-blocking
// communicators need none of this (their waits poll with a deadline), so
// the scope costs nothing there.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace nccl_core {

// What a BoundedCall bounds: the communicator the monitor aborts when the call
// outlives its timeout (Communicator implements it).  Kept this small so
// that this file needs nothing of the communicator's.
class Abortable {
 public:
  virtual ~Abortable() = default;
  virtual void abort() noexcept = 0;
};

class BoundedCall {
 public:
  // Bounds the call `what` on `target` by `timeout` where `blocking` (a
  // non-blocking communicator polls with its own deadline: no monitor).
  // Communicator::bounded() fills these in.
  BoundedCall(std::weak_ptr<Abortable> target, bool blocking, std::chrono::milliseconds timeout,
           const char* what);
  ~BoundedCall();
  BoundedCall(const BoundedCall&) = delete;
  BoundedCall& operator=(const BoundedCall&) = delete;

  // True if the monitor aborted the communicator while this call ran.
  bool expired() const;
  // Throws NcclError naming the call if it expired; otherwise nothing.
  void rethrow_if_expired() const;

 private:
  size_t slot_ = 0;
  bool registered_ = false;
  const char* what_;
  long long timeout_ms_ = 0;
};

} // namespace nccl_core
