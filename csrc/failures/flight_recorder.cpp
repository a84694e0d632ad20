#include "failures/flight_recorder.h"

#include <algorithm>
#include <iterator>
#include <cerrno>
#include <cstdlib>

#include "op/op_state.h"
#include "nvlink/progress.h"

namespace nccl_core {

std::string OpSummary::line() const {
  return "seq " + std::to_string(seq) + " coll " + std::to_string(coll) + " " + op + " " + dtype +
         " " + std::to_string(numel_in) +
         ">" + std::to_string(numel_out) + (done ? " done" : " pending");
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) {
      ++i;
    }
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != '\r') {
      ++i;
    }
    if (i > start) {
      words.push_back(text.substr(start, i - start));
    }
  }
  return words;
}

bool parse_int(const std::string& text, long long& out) {
  if (text.empty()) {
    return false;
  }
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end == text.c_str() + text.size();
}

bool OpSummary::parse(const std::string& line, OpSummary& out) {
  // seq N coll C OP DTYPE IN>OUT done|pending
  auto w = split_words(line);
  if (w.size() != 8 || w[0] != "seq" || w[2] != "coll") {
    return false;
  }
  auto gt = w[6].find('>');
  long long seq = 0, coll = 0, in = 0, outn = 0;
  if (gt == std::string::npos || !parse_int(w[1], seq) || seq < 0 || !parse_int(w[3], coll) ||
      coll < 0 || !parse_int(w[6].substr(0, gt), in) || !parse_int(w[6].substr(gt + 1), outn)) {
    return false;
  }
  out.seq = static_cast<uint64_t>(seq);
  out.coll = static_cast<uint64_t>(coll);
  out.op = w[4];
  out.dtype = w[5];
  out.numel_in = in;
  out.numel_out = outn;
  out.done = w[7] == "done";
  return true;
}

std::string OpSummary::describe() const {
  return op + " (" + dtype + ", " + std::to_string(numel_in) + " elements in, " +
         std::to_string(numel_out) + " out)";
}

namespace {
// Collectives whose running signature hash is remembered: more than one rank
// can enqueue ahead of another between two looks of the call check.
constexpr size_t kHashesKept = 4096;

// What must be equal on every rank: the op and dtype, and the sizes of the
// ops whose sizes are the same everywhere (call_check.h).
uint64_t signature(c10d::OpType op, c10::ScalarType dtype, int64_t in, int64_t out) {
  bool sized = same_size_on_every_rank(op);
  uint64_t h = (static_cast<uint64_t>(op) << 8) ^ static_cast<uint64_t>(dtype);
  if (sized) {
    h ^= static_cast<uint64_t>(in) * 0x9E3779B97F4A7C15ULL ^
         static_cast<uint64_t>(out) * 0xC2B2AE3D27D4EB4FULL;
  }
  return h;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h * 0xFF51AFD7ED558CCDULL;
}
}  // namespace

namespace {
constexpr c10d::OpType kSizedOps[] = {
    c10d::OpType::ALLREDUCE,       c10d::OpType::BROADCAST,
    c10d::OpType::REDUCE,          c10d::OpType::_ALLGATHER_BASE,
    c10d::OpType::_REDUCE_SCATTER_BASE, c10d::OpType::ALLREDUCE_COALESCED};
}  // namespace

bool same_size_on_every_rank(c10d::OpType op) {
  return std::find(std::begin(kSizedOps), std::end(kSizedOps), op) != std::end(kSizedOps);
}

bool same_size_on_every_rank(const std::string& op_name) {
  return std::any_of(std::begin(kSizedOps), std::end(kSizedOps),
                     [&](c10d::OpType op) { return c10d::opTypeToString(op) == op_name; });
}

FlightRecorder::FlightRecorder(size_t capacity)
    : entries_(capacity), hashes_(capacity > 0 ? kHashesKept : 0) {}

uint64_t FlightRecorder::collectives() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return collectives_;
}

bool FlightRecorder::signature_hash(uint64_t coll, uint64_t& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hashes_.empty() || coll == 0 || coll > collectives_ || collectives_ - coll >= hashes_.size()) {
    return false;
  }
  out = hashes_[coll % hashes_.size()];
  return true;
}

void FlightRecorder::record(const std::shared_ptr<OpState>& state, uint64_t seq, c10d::OpType op,
                            c10::ScalarType dtype, int64_t numel_in, int64_t numel_out,
                            const std::shared_ptr<nvlink::Progress>& progress, uint64_t ticket) {
  if (entries_.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = entries_[seq % entries_.size()];
  e.seq = seq;
  const bool p2p = is_point_to_point(op);
  e.coll = p2p ? 0 : ++collectives_;
  if (!p2p) {
    hash_ = mix(hash_, signature(op, dtype, numel_in, numel_out));
    hashes_[collectives_ % hashes_.size()] = hash_;
  }
  e.op = op;
  e.dtype = dtype;
  e.numel_in = numel_in;
  e.numel_out = numel_out;
  e.state = state;
  if (ticket != 0) {
    e.progress = progress;
  } else {
    e.progress.reset();
  }
  e.ticket = ticket;
}

bool FlightRecorder::done(const Entry& e) const {
  if (e.ticket != 0 && e.progress) {
    return e.progress->done() >= e.ticket;
  }
  if (!e.state) {
    return true;
  }
  // A captured op runs at each replay, not now: not pending.
  return e.state->captured || e.state->completed();
}

std::vector<OpSummary> FlightRecorder::snapshot() const {
  std::vector<OpSummary> out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& e : entries_) {
    if (e.seq == 0) {
      continue;
    }
    OpSummary s;
    s.seq = e.seq;
    s.coll = e.coll;
    s.sized = same_size_on_every_rank(e.op);
    s.op = c10d::opTypeToString(e.op);
    s.dtype = e.dtype == c10::ScalarType::Undefined ? "-" : c10::toString(e.dtype);
    s.numel_in = e.numel_in;
    s.numel_out = e.numel_out;
    s.done = done(e);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const OpSummary& a, const OpSummary& b) { return a.seq < b.seq; });
  return out;
}

}  // namespace nccl_core
