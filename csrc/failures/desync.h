// The desync report: on a timeout, what every rank of the group was doing,
// gathered through the group's store, in one message ("rank 1 called
// ALLGATHER where rank 0 called BROADCAST (collective 5)", "rank 1 never
// called collective 200: its last call was collective 199", "rank 2 did not
// answer").  Collectives are matched by the group's collective count, which
// send/recv (different on each rank) leave alone; send/recv by seq.
//
// Protocol, over keys of the group's (prefixed) store, under
// nccl_core/desync/<tag>/:
//   requests   a counter; a rank that timed out adds 1
//   state/<r>  rank r's answer: the generation (counter value) it answers,
//              its status, its last ops
// Every rank's watchdog reads the counter every second (tick) and
// answers a new request with its flight recorder's contents; a rank that
// destroys its group leaves a final answer.  The asking rank waits a bounded
// time, so a dead rank cannot hang the report.
#pragma once

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "failures/flight_recorder.h"

namespace nccl_core {

class DesyncReporter {
 public:
  // `tag` keeps the keys of groups that share a store apart (a shrunk group
  // and its parent); the same on every rank of the group.
  DesyncReporter(c10::intrusive_ptr<c10d::Store> store, std::string tag, int rank, int size,
                 const FlightRecorder& recorder, std::chrono::milliseconds wait);

  // From the watchdog's sweep: answers a new request, looking every second at
  // most.  Never throws (a store that is gone makes no answer).
  void tick();
  // After a timeout or mismatch here: asks, waits up to the bound, explains
  // the call at sequence number `at` (0: the first this rank waits in).
  std::string explain(uint64_t at = 0);
  // destroy_process_group / shutdown: the final answer.
  void publish_final() noexcept;

  // The explanation for `mine` (this rank's ops) against each peer's answer
  // (empty: none came).  Exposed for tests.
  struct Answer {
    bool present = false;
    std::string status;  // running, stuck, shutdown
    std::vector<OpSummary> ops;
  };
  static std::string analyse(int rank, const std::vector<OpSummary>& mine,
                             const std::vector<Answer>& peers, uint64_t at = 0);
  static bool parse_answer(const std::string& text, int64_t& generation, Answer& out);

 private:
  void publish(const char* status, int64_t generation);
  std::string key(int rank) const;

  c10::intrusive_ptr<c10d::Store> store_;
  const std::string prefix_;
  const int rank_;
  const int size_;
  const FlightRecorder& recorder_;
  const std::chrono::milliseconds wait_;
  int64_t answered_ = 0;
  std::chrono::steady_clock::time_point next_look_{};
};

}  // namespace nccl_core
