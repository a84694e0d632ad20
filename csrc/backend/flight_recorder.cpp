#include "backend/flight_recorder.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "backend/work.h"
#include "fast/progress.h"

namespace nccl_core {

std::string OpSummary::line() const {
  return "seq " + std::to_string(seq) + " " + op + " " + dtype + " " + std::to_string(numel_in) +
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
  // seq N OP DTYPE IN>OUT done|pending
  auto w = split_words(line);
  if (w.size() != 6 || w[0] != "seq") {
    return false;
  }
  auto gt = w[4].find('>');
  long long seq = 0, in = 0, outn = 0;
  if (gt == std::string::npos || !parse_int(w[1], seq) || seq < 0 ||
      !parse_int(w[4].substr(0, gt), in) || !parse_int(w[4].substr(gt + 1), outn)) {
    return false;
  }
  out.seq = static_cast<uint64_t>(seq);
  out.op = w[2];
  out.dtype = w[3];
  out.numel_in = in;
  out.numel_out = outn;
  out.done = w[5] == "done";
  return true;
}

std::string OpSummary::describe() const {
  return op + " (" + dtype + ", " + std::to_string(numel_in) + " elements in, " +
         std::to_string(numel_out) + " out)";
}

FlightRecorder::FlightRecorder(size_t capacity) : entries_(capacity) {}

void FlightRecorder::record(const c10::intrusive_ptr<Work>& work, uint64_t seq, c10d::OpType op,
                            c10::ScalarType dtype, int64_t numel_in, int64_t numel_out,
                            const std::shared_ptr<fast::Progress>& progress, uint64_t ticket) {
  if (entries_.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = entries_[seq % entries_.size()];
  e.seq = seq;
  e.op = op;
  e.dtype = dtype;
  e.numel_in = numel_in;
  e.numel_out = numel_out;
  e.work = c10::weak_intrusive_ptr<Work>(work);
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
  auto work = e.work.lock();
  if (!work) {
    return true;  // retired by the watchdog, which drops only finished works
  }
  return work->isCompleted();
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
