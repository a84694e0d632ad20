#include "failures/call_check.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace nccl_core {

namespace {

// Calls per published list: enough to name the call that differs when the
// hashes disagree (ranks a period apart differ by a few calls in lockstep).
constexpr size_t kCallsPerList = 64;

bool agree(const OpSummary& a, const OpSummary& b) {
  if (a.op != b.op || a.dtype != b.dtype) {
    return false;
  }
  return !a.sized || (a.numel_in == b.numel_in && a.numel_out == b.numel_out);
}

}  // namespace

CallCheck::CallCheck(c10::intrusive_ptr<c10d::Store> store, std::string tag, int rank, int size,
                     const FlightRecorder& recorder, std::chrono::milliseconds every)
    : store_(std::move(store)),
      prefix_("nccl_core/calls/" + tag + "/"),
      rank_(rank),
      size_(size),
      recorder_(recorder),
      every_(every) {}

std::string CallCheck::encode(uint64_t count, uint64_t hash, const std::vector<OpSummary>& ops) {
  std::string text = std::to_string(count) + " " + std::to_string(hash) + "\n";
  for (const auto& op : ops) {
    // "coll seq OP DTYPE IN OUT"
    text += std::to_string(op.coll) + " " + std::to_string(op.seq) + " " + op.op + " " + op.dtype +
            " " + std::to_string(op.numel_in) + " " + std::to_string(op.numel_out) + "\n";
  }
  return text;
}

bool CallCheck::decode(const std::string& text, uint64_t& count, uint64_t& hash,
                       std::vector<OpSummary>& ops) {
  ops.clear();
  size_t start = 0;
  bool head = true;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    auto w = split_words(text.substr(start, end - start));
    start = end + 1;
    if (head) {
      // The hash is unsigned 64-bit: strtoull, whole word.
      if (w.size() != 2 || w[1].empty() || w[1][0] == '-') {
        return false;
      }
      long long c = 0;
      char* stop = nullptr;
      errno = 0;
      unsigned long long h = std::strtoull(w[1].c_str(), &stop, 10);
      if (!parse_int(w[0], c) || c < 0 || errno != 0 || stop != w[1].c_str() + w[1].size()) {
        return false;
      }
      count = static_cast<uint64_t>(c);
      hash = h;
      head = false;
      continue;
    }
    long long coll = 0, seq = 0, in = 0, n_out = 0;
    if (w.size() != 6 || !parse_int(w[0], coll) || coll <= 0 || !parse_int(w[1], seq) ||
        seq <= 0 || !parse_int(w[4], in) || !parse_int(w[5], n_out)) {
      continue;  // not a call line: ignored, never trusted
    }
    OpSummary op;
    op.coll = static_cast<uint64_t>(coll);
    op.seq = static_cast<uint64_t>(seq);
    op.op = w[2];
    op.sized = same_size_on_every_rank(op.op);
    op.dtype = w[3];
    op.numel_in = in;
    op.numel_out = n_out;
    ops.push_back(std::move(op));
  }
  return !head;
}

std::string CallCheck::compare(int rank, const std::vector<OpSummary>& mine, int peer,
                               const std::vector<OpSummary>& theirs) {
  std::string me = "rank " + std::to_string(rank);
  std::string them = "rank " + std::to_string(peer);
  for (const auto& t : theirs) {
    auto m = std::find_if(mine.begin(), mine.end(),
                          [&](const OpSummary& o) { return o.coll == t.coll; });
    if (m == mine.end() || agree(*m, t)) {
      continue;
    }
    std::string headline =
        m->op == t.op ? them + " passed different sizes or dtypes to " + t.op
                      : them + " called " + t.op + " where " + me + " called " + m->op;
    return "nccl_core: desync found by the call check: " + headline + " (the group's collective #" +
           std::to_string(t.coll) + "; " + me + "'s seq " + std::to_string(m->seq) + ", " + them +
           "'s seq " + std::to_string(t.seq) + "): " + them + " called " + t.describe() + ", " +
           me + " called " + m->describe() +
           "; NCCL does not compare calls across ranks, so any output of this call and later "
           "ones on the group may be wrong";
  }
  return "";
}

std::string CallCheck::tick() {
  if (every_.count() <= 0 || size_ < 2 || reported_) {
    return "";
  }
  auto now = std::chrono::steady_clock::now();
  if (now < next_) {
    return "";
  }
  next_ = now + every_;
  try {
    uint64_t count = recorder_.collectives();
    if (count == compared_at_ && pending_count_ == 0) {
      return "";  // compared at this rank's latest call, none since: idle
    }
    std::vector<OpSummary> mine;
    for (auto& op : recorder_.snapshot()) {
      if (op.coll != 0) {
        mine.push_back(std::move(op));
      }
    }
    if (mine.size() > kCallsPerList) {
      mine.erase(mine.begin(), mine.end() - kCallsPerList);
    }
    uint64_t hash = 0;
    if (count > published_ && recorder_.signature_hash(count, hash)) {
      std::string text = encode(count, hash, mine);
      store_->set(prefix_ + "sig/" + std::to_string(rank_),
                  std::vector<uint8_t>(text.begin(), text.end()));
      published_ = count;
    }
    int peer = (rank_ + 1) % size_;
    std::string key = prefix_ + "sig/" + std::to_string(peer);
    if (store_->check({key})) {
      auto bytes = store_->get(key);
      uint64_t theirs_count = 0, theirs_hash = 0;
      std::vector<OpSummary> theirs;
      if (decode(std::string(bytes.begin(), bytes.end()), theirs_count, theirs_hash, theirs) &&
          theirs_count > 0) {
        pending_count_ = theirs_count;
        pending_hash_ = theirs_hash;
        pending_calls_ = std::move(theirs);
      }
    }
    // Compared once this rank has made as many calls (a neighbour ahead is
    // kept until then); a count no longer remembered is let go.
    uint64_t at = pending_count_;
    uint64_t ours = 0;
    if (at == 0 || at > count) {
      return "";
    }
    pending_count_ = 0;
    compared_at_ = at;
    if (!recorder_.signature_hash(at, ours) || ours == pending_hash_) {
      return "";
    }
    std::string found = compare(rank_, mine, peer, pending_calls_);
    if (found.empty()) {
      found = "nccl_core: desync found by the call check: rank " + std::to_string(peer) +
              "'s collectives differ from rank " + std::to_string(rank_) +
              "'s at or before the group's collective #" + std::to_string(at) +
              " (the calls that differ are older than both ranks' last " +
              std::to_string(kCallsPerList) + "); NCCL does not compare calls across ranks, so "
              "outputs on the group may be wrong";
    }
    reported_ = true;
    return found;
  } catch (...) {
    return "";  // the store is gone (the job is ending): nothing to compare
  }
}

}  // namespace nccl_core
