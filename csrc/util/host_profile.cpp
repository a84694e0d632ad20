#include "util/host_profile.h"

#include <array>

namespace nccl_core::host_profile {

std::atomic<bool> g_enabled{false};

namespace {

struct Counter {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> ns{0};
};

std::array<Counter, kPhases> g_counters;

constexpr const char* kNames[kPhases] = {"setup",  "work",  "guard", "enqueue",
                                            "epilogue", "record", "watch", "wait",
                                            "(enqueue: fast-path checks)",
                                            "(enqueue: kernel launch)",
                                            "(enqueue: ordering event)",
                                            "raw: arguments", "raw: checks and guards",
                                            "raw: engine call",
                                            "raw: the operation"};

}  // namespace

void set_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

void add(Phase phase, uint64_t ns) {
  g_counters[phase].calls.fetch_add(1, std::memory_order_relaxed);
  g_counters[phase].ns.fetch_add(ns, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::pair<uint64_t, double>>> snapshot(bool reset) {
  std::vector<std::pair<std::string, std::pair<uint64_t, double>>> out;
  for (int p = 0; p < kPhases; ++p) {
    uint64_t calls = reset ? g_counters[p].calls.exchange(0) : g_counters[p].calls.load();
    uint64_t ns = reset ? g_counters[p].ns.exchange(0) : g_counters[p].ns.load();
    out.emplace_back(kNames[p], std::make_pair(calls, calls ? ns / 1e3 / calls : 0.0));
  }
  return out;
}

}  // namespace nccl_core::host_profile
