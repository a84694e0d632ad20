// The call check: did every rank of the group call the same collectives?
//
// NCCL does not compare calls across ranks.  A mismatch it cannot complete
// hangs until the timeout (and the desync report, desync.h, names it); one
// it happens to complete (a broadcast against an all_gather over sockets, an
// all_reduce of 1,024 elements against one of 2,048) corrupts outputs in
// silence.  So the flight recorder keeps a running hash of every collective's
// signature (send and recv excluded: their order differs between ranks
// legitimately; op and dtype, and the sizes of the ops whose sizes are the
// same on every rank), and each rank's watchdog publishes its latest count
// and hash, with its latest calls, through the group's store, at most once a
// period.  Each rank compares its ring neighbour's (rank + 1) hash with its
// own at the same count: if every neighbour pair agrees, all ranks agree.  A
// difference names the first call that differs where both lists hold it.
//
// Keys, under nccl_core/calls/<tag>/: sig/<r>, rank r's "count hash" line and
// latest calls.
#pragma once

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "failures/flight_recorder.h"

namespace nccl_core {

class CallCheck {
 public:
  // `every`: the period (0: never checks).
  CallCheck(c10::intrusive_ptr<c10d::Store> store, std::string tag, int rank, int size,
            const FlightRecorder& recorder, std::chrono::milliseconds every);

  // From the watchdog's sweep: publishes and compares at most once a period.
  // Returns the mismatch found ("" if none); reports one mismatch only.
  // Never throws (a store that is gone checks nothing).
  std::string tick();

  // Exposed for tests: the text that travels ("count hash" then one call
  // per line), and the comparison of two ranks' calls.
  static std::string encode(uint64_t count, uint64_t hash, const std::vector<OpSummary>& ops);
  static bool decode(const std::string& text, uint64_t& count, uint64_t& hash,
                     std::vector<OpSummary>& ops);
  static std::string compare(int rank, const std::vector<OpSummary>& mine, int peer,
                             const std::vector<OpSummary>& theirs);

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  const std::string prefix_;
  const int rank_;
  const int size_;
  const FlightRecorder& recorder_;
  const std::chrono::milliseconds every_;
  std::chrono::steady_clock::time_point next_{};
  uint64_t published_ = 0;  // newest collective count published
  // The count of the last comparison: at this rank's latest call, and no
  // neighbour ahead, there is nothing to look at until the next call.
  uint64_t compared_at_ = 0;
  bool reported_ = false;
  // The neighbour's count and hash when it was ahead of this rank.
  uint64_t pending_count_ = 0;
  uint64_t pending_hash_ = 0;
  std::vector<OpSummary> pending_calls_;
};

}  // namespace nccl_core
