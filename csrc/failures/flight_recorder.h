// The flight recorder of a group: its last N operations (sequence number,
// op, dtype, sizes, whether the GPU finished them), kept so that a timeout
// can say what each rank was doing (desync.h) instead of only "timed out".
//
// record() runs on the caller's thread for every operation (a short critical
// section, no allocation once the ring is full of entries); the watchdog
// reads.  An entry's state is found when read: an op tracked by its kernel's
// ticket is done once that ticket is reported; otherwise its OpState answers
// (op_state.h).  An entry holds that state, never the Work: what the program
// dropped is not kept alive by the ring.
#pragma once

#include <c10/core/ScalarType.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "op/op_kind.h"
#include "op/op_state.h"

namespace nccl_core {

namespace nvlink {
class Progress;
}

// One operation as the report shows it.
struct OpSummary {
  uint64_t seq = 0;
  // The group's collective count at this op (0 for send/recv, whose order
  // differs between ranks legitimately): what call_check.h compares.
  uint64_t coll = 0;
  // Its sizes are the same on every rank (all_reduce, broadcast, reduce, the
  // tensor forms of all_gather and reduce_scatter).
  bool sized = false;
  std::string op;      // c10d's name: ALLREDUCE, ALLGATHER, ...
  std::string dtype;   // "Float", ...; "-" for none
  int64_t numel_in = 0;
  int64_t numel_out = 0;
  bool done = false;
  // "seq 5 coll 4 ALLREDUCE Float 1024>1024 done"; parse() reads it back.
  std::string line() const;
  static bool parse(const std::string& line, OpSummary& out);
  // "ALLREDUCE (Float, 1024 in, 1024 out)"
  std::string describe() const;
  bool same_call(const OpSummary& o) const {
    return op == o.op && dtype == o.dtype && numel_in == o.numel_in && numel_out == o.numel_out;
  }
};

bool same_size_on_every_rank(c10d::OpType op);
bool same_size_on_every_rank(const std::string& op_name);  // c10d's name

// Whitespace-separated words of `text`, and a whole-word base-10 integer
// (the answers travel as text through the store; no iostreams).
std::vector<std::string> split_words(const std::string& text);
bool parse_int(const std::string& text, long long& out);

class FlightRecorder {
 public:
  // `capacity` 0 records nothing.
  explicit FlightRecorder(size_t capacity);

  // One op as launch() enqueued it: its state (shared by a coalescing
  // block's ops), and the ticket its fast-path kernel reports (0: none).
  void record(const std::shared_ptr<OpState>& state, uint64_t seq, c10d::OpType op,
              c10::ScalarType dtype, int64_t numel_in, int64_t numel_out,
              const std::shared_ptr<nvlink::Progress>& progress, uint64_t ticket);
  // The recorded ops, oldest first, with their state now.
  std::vector<OpSummary> snapshot() const;
  // The collectives recorded so far, and a hash of all their signatures up
  // to and including collective `coll` (call_check.h); false where `coll`
  // is in the future or too far in the past to be remembered.
  uint64_t collectives() const;
  bool signature_hash(uint64_t coll, uint64_t& out) const;
  size_t capacity() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t seq = 0;  // 0: empty
    uint64_t coll = 0;
    c10d::OpType op = c10d::OpType::UNKNOWN;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    int64_t numel_in = 0;
    int64_t numel_out = 0;
    std::shared_ptr<OpState> state;
    std::shared_ptr<nvlink::Progress> progress;
    uint64_t ticket = 0;
  };
  bool done(const Entry& e) const;

  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  uint64_t collectives_ = 0;  // recorded so far
  uint64_t hash_ = 0;         // of every collective's signature so far
  std::vector<uint64_t> hashes_;  // hash_ after collective c at c % size
};

}  // namespace nccl_core
