#include "failures/desync.h"

#include <algorithm>
#include <thread>

namespace nccl_core {

namespace {

// Answers carry this many of the latest ops: ranks that desync differ by a
// few calls, and the answer stays one small store value.
constexpr size_t kOpsPerAnswer = 16;
// How often a rank looks for requests: one store round trip per group per
// period on every rank, so not more often; the asking rank waits longer.
constexpr std::chrono::milliseconds kLookEvery{1000};

std::string to_text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> to_bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

}  // namespace

DesyncReporter::DesyncReporter(c10::intrusive_ptr<c10d::Store> store, std::string tag, int rank,
                               int size, const FlightRecorder& recorder,
                               std::chrono::milliseconds wait)
    : store_(std::move(store)),
      prefix_("nccl_core/desync/" + tag + "/"),
      rank_(rank),
      size_(size),
      recorder_(recorder),
      wait_(wait) {}

std::string DesyncReporter::key(int rank) const {
  return prefix_ + "state/" + std::to_string(rank);
}

void DesyncReporter::publish(const char* status, int64_t generation) {
  auto ops = recorder_.snapshot();
  size_t first = ops.size() > kOpsPerAnswer ? ops.size() - kOpsPerAnswer : 0;
  std::string text = "gen " + std::to_string(generation) + " status " + status + "\n";
  for (size_t i = first; i < ops.size(); ++i) {
    text += ops[i].line() + "\n";
  }
  store_->set(key(rank_), to_bytes(text));
}

void DesyncReporter::tick() {
  auto now = std::chrono::steady_clock::now();
  if (now < next_look_) {
    return;
  }
  next_look_ = now + kLookEvery;
  try {
    int64_t asked = store_->add(prefix_ + "requests", 0);
    if (asked > answered_) {
      publish("running", asked);
      answered_ = asked;
    }
  } catch (...) {
    // The store is gone (the job is ending): nobody is left to ask.
  }
}

void DesyncReporter::publish_final() noexcept {
  try {
    publish("shutdown", INT64_MAX);
  } catch (...) {
  }
}

bool DesyncReporter::parse_answer(const std::string& text, int64_t& generation, Answer& out) {
  // "gen G status S\n" then one OpSummary line each
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  auto head = split_words(lines[0]);
  long long gen = 0;
  if (head.size() != 4 || head[0] != "gen" || !parse_int(head[1], gen) || head[2] != "status") {
    return false;
  }
  generation = gen;
  out.status = head[3];
  for (size_t i = 1; i < lines.size(); ++i) {
    OpSummary op;
    if (OpSummary::parse(lines[i], op)) {
      out.ops.push_back(op);
    }
  }
  out.present = true;
  return true;
}

std::string DesyncReporter::explain(uint64_t at) {
  auto mine = recorder_.snapshot();
  int64_t generation = store_->add(prefix_ + "requests", 1);
  publish("stuck", generation);
  answered_ = std::max(answered_, generation);
  std::vector<Answer> peers(size_);
  int missing = size_ - 1;
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + wait_;
  while (missing > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int q = 0; q < size_; ++q) {
      if (q == rank_ || peers[q].present || !store_->check({key(q)})) {
        continue;
      }
      Answer a;
      int64_t gen = 0;
      if (parse_answer(to_text(store_->get(key(q))), gen, a) &&
          (gen >= generation || a.status == "shutdown")) {
        peers[q] = std::move(a);
        --missing;
      }
    }
    if (missing > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return analyse(rank_, mine, peers, at) + " (answers gathered in " + std::to_string(waited.count()) +
         " ms through the store)";
}

std::string DesyncReporter::analyse(int rank, const std::vector<OpSummary>& mine,
                                    const std::vector<Answer>& peers, uint64_t at) {
  // The call in question: `at`, else the first unfinished op (else the last).
  const OpSummary* stuck = nullptr;
  for (const auto& op : mine) {
    if (at != 0 ? op.seq == at : !op.done) {
      stuck = &op;
      break;
    }
  }
  if (stuck == nullptr && !mine.empty()) {
    stuck = &mine.back();
  }
  if (stuck == nullptr) {
    return "desync report: this rank has no operation on record";
  }
  std::string me = "rank " + std::to_string(rank);
  // Collectives are matched by the group's collective count, the same on
  // every rank whatever send/recv each made; send/recv by seq.
  const bool by_collective = stuck->coll != 0;
  auto number = [&](const OpSummary& op) { return by_collective ? op.coll : op.seq; };
  auto label = [&](uint64_t n) { return (by_collective ? "collective " : "seq ") + std::to_string(n); };
  const std::string at_label = label(number(*stuck));
  std::vector<std::string> findings;
  std::string headline;
  for (size_t q = 0; q < peers.size(); ++q) {
    if (static_cast<int>(q) == rank) {
      continue;
    }
    const Answer& a = peers[q];
    std::string them = "rank " + std::to_string(q);
    if (!a.present) {
      findings.push_back(them + " did not answer (dead, or hung outside its watchdog)");
      continue;
    }
    const OpSummary* same = nullptr;
    const OpSummary* latest = nullptr;
    for (const auto& op : a.ops) {
      if (number(op) == 0) {
        continue;  // a send/recv, where collectives are compared
      }
      if (latest == nullptr || number(op) > number(*latest)) {
        latest = &op;
      }
      if (number(op) == number(*stuck)) {
        same = &op;
      }
    }
    const uint64_t last = latest != nullptr ? number(*latest) : 0;
    std::string gone = a.status == "shutdown" ? "; it has destroyed its group" : "";
    if (same != nullptr && !same->same_call(*stuck)) {
      std::string f = them + " called " + same->describe() + " at " + at_label + " where " + me +
                      " called " + stuck->describe();
      findings.push_back(f);
      if (headline.empty()) {
        headline = them + " called " + same->op + " where " + me + " called " + stuck->op + " (" +
                   at_label + ")";
        if (same->op == stuck->op) {
          headline = them + " passed different sizes or dtypes to " + stuck->op + " (" + at_label + ")";
        }
      }
    } else if (same != nullptr) {
      findings.push_back(them + (same->done ? " finished " : " is also waiting in ") + at_label + gone);
    } else if (last < number(*stuck)) {
      std::string f = them + " never called " + at_label + ": its last call was " +
                      (latest == nullptr ? std::string("none")
                                         : label(last) + " " + latest->describe()) +
                      gone;
      findings.push_back(f);
      if (headline.empty()) {
        headline = them + " is behind: it never called " + at_label + " (" + stuck->op + ")" + gone;
      }
    } else {
      findings.push_back(them + " is past " + at_label + " (its last call: " + label(last) + ")" + gone);
    }
  }
  std::string out = "desync report: " +
                    (headline.empty() ? std::string("no rank called a different op") : headline) +
                    ". " + me + (stuck->done ? " made" : " waits in") + " seq " +
                    std::to_string(stuck->seq) + (by_collective ? " (" + at_label + ")" : "") + " " +
                    stuck->describe();
  for (const auto& f : findings) {
    out += "; " + f;
  }
  return out;
}

}  // namespace nccl_core
