// Private bindings for the tests of the failure checks' pure parts: the
// desync report's analysis and the cross-rank call check (csrc/failures), on
// data the tests make up, with no communicator.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "failures/call_check.h"
#include "failures/desync.h"
#include "failures/flight_recorder.h"
#include "testing/bind.h"

namespace nccl_core::testing {

namespace py = pybind11;

void bind_failure_checks(py::module_& m) {
  m.def(
      "_desync_analyse",
      [](int rank, const std::vector<std::string>& mine,
         const std::vector<std::optional<std::string>>& answers, uint64_t at) {
        std::vector<OpSummary> ops;
        for (const auto& line : mine) {
          OpSummary op;
          if (!OpSummary::parse(line, op)) {
            throw py::value_error("not an op line: " + line);
          }
          ops.push_back(op);
        }
        std::vector<DesyncReporter::Answer> peers(answers.size());
        for (size_t q = 0; q < answers.size(); ++q) {
          int64_t gen = 0;
          if (answers[q] && !DesyncReporter::parse_answer(*answers[q], gen, peers[q])) {
            throw py::value_error("not an answer: " + *answers[q]);
          }
        }
        return DesyncReporter::analyse(rank, ops, peers, at);
      },
      py::arg("rank"), py::arg("mine"), py::arg("answers"), py::arg("at") = 0,
      "Tests: the desync report for this rank's ops against the peers' answers "
      "(None: no answer).");
  m.def(
      "_call_check_compare",
      [](int rank, const std::string& mine, int peer, const std::string& theirs) {
        uint64_t count = 0, hash = 0;
        std::vector<OpSummary> a, b;
        if (!CallCheck::decode(mine, count, hash, a) || !CallCheck::decode(theirs, count, hash, b)) {
          throw py::value_error("not a call list (\"count hash\" first)");
        }
        return CallCheck::compare(rank, a, peer, b);
      },
      py::arg("rank"), py::arg("mine"), py::arg("peer"), py::arg("theirs"),
      "Tests: the call check's comparison of two ranks' call lists (its store format); "
      "\"\" where they agree.");
  m.def(
      "_call_check_pair",
      [](const std::vector<std::vector<std::tuple<std::string, std::string, int64_t, int64_t>>>& calls,
         int looks) {
        // Two ranks on one in-memory store: each records its calls, then both
        // look `looks` times; returns what each rank's check found.
        auto store = c10::make_intrusive<c10d::HashStore>();
        std::vector<std::unique_ptr<FlightRecorder>> recorders;
        std::vector<std::unique_ptr<CallCheck>> checks;
        int size = static_cast<int>(calls.size());
        for (int r = 0; r < size; ++r) {
          recorders.push_back(std::make_unique<FlightRecorder>(256));
          uint64_t seq = 0;
          for (const auto& [op, dtype, in, out] : calls[r]) {
            c10d::OpType type = c10d::OpType::UNKNOWN;
            // The enum's values run from 0 without gaps; how far depends on
            // the torch (opTypeToString refuses the first one past the end).
            for (int k = 0; k < static_cast<int>(c10d::OpType::UNKNOWN); ++k) {
              std::string name;
              try {
                name = c10d::opTypeToString(static_cast<c10d::OpType>(k));
              } catch (const c10::Error&) {
                break;
              }
              if (name == op) {
                type = static_cast<c10d::OpType>(k);
                break;
              }
            }
            if (type == c10d::OpType::UNKNOWN) {
              throw py::value_error("unknown op " + op);
            }
            recorders[r]->record(nullptr, ++seq, type,
                                 dtype == "-" ? c10::ScalarType::Undefined
                                              : c10::ScalarType::Float,
                                 in, out, nullptr, 0);
          }
          checks.push_back(std::make_unique<CallCheck>(store, "t", r, size, *recorders[r],
                                                       std::chrono::milliseconds(1)));
        }
        std::vector<std::string> found(size);
        for (int i = 0; i < looks; ++i) {
          for (int r = 0; r < size; ++r) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            std::string f = checks[r]->tick();
            if (!f.empty()) {
              found[r] = f;
            }
          }
        }
        return found;
      },
      py::arg("calls"), py::arg("looks") = 3,
      "Tests: the call check end to end on an in-memory store: calls[r] is rank r's list "
      "of (op, dtype ('-' or 'Float'), numel in, numel out); returns each rank's finding.");
}

} // namespace nccl_core::testing
