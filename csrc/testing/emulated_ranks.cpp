#include "testing/emulated_ranks.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "nccl/api.h"
#include "nccl/types.h"
#include "nvlink/one_way.h"
#include "util/checked.h"
#include "util/concat.h"
#include "util/torch_errors.h"

namespace nccl_core::nvlink {

namespace {

// Words per rank in the reports memory: [done, fault, fault seq, unused].
constexpr size_t kReportWords = 4;
// The push staging's sizes stay far from wrapping below this (a test's GPU
// holds no more anyway).
constexpr size_t kMaxPushBytes = size_t(1) << 40;

at::Tensor zeroed_bytes(size_t bytes, int device) {
  return at::zeros({static_cast<int64_t>(bytes)},
                   at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
}

// Waits until every stream has drained or `deadline` passed; true when drained.
bool drained(const std::vector<c10::cuda::CUDAStream>& streams,
             std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    bool all = true;
    for (const auto& s : streams) {
      cudaError_t r = cudaStreamQuery(s.stream());
      if (r == cudaErrorNotReady) {
        all = false;
      } else {
        NCCL_CORE_CUDA_CHECK(r);
      }
    }
    if (all) {
      return true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

EmulatedRanks::EmulatedRanks(int nranks, size_t max_bytes, size_t push_max_bytes, int device,
                             int max_blocks, size_t one_way_max_bytes)
    : nranks_(nranks), device_(device) {
  if (nranks < 1 || nranks > kMaxRanks) {
    throw std::invalid_argument(concat("emulated ranks: nranks ", nranks, " is outside [1, ",
                                       kMaxRanks, "]"));
  }
  if (max_bytes == 0) {
    throw std::invalid_argument("emulated ranks: max_bytes must be positive");
  }
  if (max_blocks < 0) {
    throw std::invalid_argument(concat("emulated ranks: max_blocks ", max_blocks,
                                       " is negative"));
  }
  // The sizes, refused before anything is allocated where they would wrap.
  half_ = window_half_bytes(max_bytes);
  one_way_slot_ = one_way_slot_for(one_way_max_bytes, max_bytes);
  window_bytes_ = window_bytes(half_, one_way_slot_, nranks);
  const auto windows = checked::narrow<int64_t, raise_value_error>(
      checked::mul<raise_value_error>(nranks, window_bytes_, "emulated ranks: windows' bytes"),
      "emulated ranks: windows' bytes");
  if (push_max_bytes > kMaxPushBytes) {
    throw std::invalid_argument(concat("emulated ranks: push_max_bytes ", push_max_bytes,
                                       " is above ", kMaxPushBytes));
  }
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  // Every block of every rank resident at once, at one block a multiprocessor
  // (the wide kernels' registers allow no more).
  int sms = at::cuda::getDeviceProperties(device)->multiProcessorCount;
  int per_rank = sms / nranks;
  if (per_rank < 1) {
    throw std::invalid_argument(concat("emulated ranks: ", nranks, " ranks need at least ",
                                       nranks, " multiprocessors; this GPU has ", sms));
  }
  max_blocks_ = std::min(per_rank, kMaxBlocks);
  one_way_max_blocks_ = std::min(per_rank, kOneWayMaxBlocks);
  if (max_blocks > 0) {
    max_blocks_ = std::min(max_blocks_, max_blocks);
    one_way_max_blocks_ = std::min(one_way_max_blocks_, max_blocks);
  }
  max_push_blocks_ = per_rank < kPushMaxBlocks ? per_rank : kPushMaxBlocks;
  windows_ = zeroed_bytes(static_cast<size_t>(windows), device);
  epochs_ = at::zeros({nranks, 3}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA, device));
  stop_ = at::zeros({1}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA, device));
  if (push_max_bytes > 0 && nranks > 1) {
    push_capacity_ = push_staging_bytes(push_max_bytes, nranks);
    staging_ = zeroed_bytes(static_cast<size_t>(nranks) * (push_capacity_ + kPushCounterBytes),
                            device);
  }
  abort_ = std::make_unique<MappedHost>(sizeof(int));
  reports_ = std::make_unique<MappedHost>(sizeof(unsigned long long) * kReportWords * nranks);
  for (int r = 0; r < nranks; ++r) {
    streams_.push_back(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(device)));
  }
  // The zeros land before any rank's first kernel reads a flag.
  NCCL_CORE_CUDA_CHECK(cudaDeviceSynchronize());
}

EmulatedRanks::~EmulatedRanks() {
  // Kernels still queued use the buffers: let them end (a hung one leaves
  // at the abort flag) before the tensors go back to the allocator.
  try {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    if (!drained(streams_, deadline)) {
      *static_cast<volatile int*>(abort_->host()) = 1;
      drained(streams_, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    }
  } catch (...) {
  }
}

void EmulatedRanks::check_rank(int rank) const {
  if (rank < 0 || rank >= nranks_) {
    throw std::invalid_argument(concat("emulated ranks: rank ", rank, " is outside [0, ",
                                       nranks_, ")"));
  }
  check_usable();
}

void EmulatedRanks::follow_caller(int rank) {
  cudaEvent_t ready = nullptr;
  NCCL_CORE_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  cudaError_t recorded = cudaEventRecord(
      ready, c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream());
  cudaError_t waited =
      recorded == cudaSuccess ? cudaStreamWaitEvent(streams_[rank].stream(), ready, 0) : recorded;
  NCCL_CORE_CUDA_CHECK(cudaEventDestroy(ready));  // the wait holds what it needs
  NCCL_CORE_CUDA_CHECK(waited);
}

void EmulatedRanks::check_usable() const {
  if (broken_) {
    throw std::runtime_error("emulated ranks: aborted by an earlier timeout; make new ones");
  }
}

Shared EmulatedRanks::shared_for(int rank) const {
  Shared s{};
  char* base = static_cast<char*>(windows_.data_ptr());
  for (int r = 0; r < nranks_; ++r) {
    s.window[r] = base + static_cast<size_t>(r) * window_bytes_;
  }
  auto* reports = static_cast<unsigned long long*>(reports_->device()) + rank * kReportWords;
  s.epoch = reinterpret_cast<unsigned long long*>(epochs_.data_ptr<int64_t>()) + 3 * rank;
  s.done = reports;
  s.stop = reinterpret_cast<const unsigned long long*>(stop_.data_ptr<int64_t>());
  s.abort = static_cast<const volatile int*>(abort_->device());
  s.fault = reports + 1;
  s.half = half_;
  s.one_way_slot = one_way_slot_;
  s.nranks = nranks_;
  s.rank = rank;
  s.max_blocks = max_blocks_;
  s.one_way_max_blocks = one_way_max_blocks_;
  return s;
}

bool EmulatedRanks::reduce(int rank, const void* in, size_t in_count, void* out, size_t count,
                           size_t src_offset, ncclDataType_t type, int op,
                           size_t two_shot_min_bytes, uint64_t seq) {
  check_rank(rank);
  size_t staged = checked::bytes<raise_value_error>(in_count, types::element_size(type),
                                                    "staged bytes");
  if (staged > half_) {
    throw std::invalid_argument(concat("emulated ranks: ", in_count, " elements do not fit a ",
                                       half_, "-byte half"));
  }
  bool all_reduce = src_offset == 0 && in_count == count;
  CallTag tag{0, seq, call_signature(all_reduce ? 1 : 2, type, op, count, 0, seq)};
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
  follow_caller(rank);
  return launch_reduce(shared_for(rank), in, in_count, out, count, src_offset, type, op,
                       two_shot_min_bytes, tag, streams_[rank].stream());
}

void EmulatedRanks::copy(int rank, const void* in, size_t in_bytes, void* out, size_t bytes,
                         size_t src_offset, int first, int npeers, uint64_t seq) {
  check_rank(rank);
  if (in_bytes > half_ || src_offset > half_ || bytes > half_ - src_offset) {
    throw std::invalid_argument(concat("emulated ranks: a copy of ", bytes, " bytes at ",
                                       src_offset, " (staging ", in_bytes,
                                       ") does not fit a ", half_, "-byte half"));
  }
  if (first < 0 || npeers < 0 || first + npeers > nranks_) {
    throw std::invalid_argument(concat("emulated ranks: peers [", first, ", ", first + npeers,
                                       ") are outside [0, ", nranks_, ")"));
  }
  CallTag tag{0, seq, call_signature(7, 0, 0, bytes, first, seq)};
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
  follow_caller(rank);
  launch_copy(shared_for(rank), in, in_bytes, out, bytes, src_offset, first, npeers, tag,
              streams_[rank].stream());
}

void EmulatedRanks::push(int rank, void* data, size_t count, ncclDataType_t type, int op,
                         int blocks, uint64_t seq) {
  check_rank(rank);
  size_t bytes = checked::bytes<raise_value_error>(count, types::element_size(type), "push bytes");
  if (push_capacity_ == 0 || push_staging_bytes(bytes, nranks_) > push_capacity_) {
    throw std::invalid_argument(concat("emulated ranks: no push staging for ", bytes, " bytes"));
  }
  if (!push_covers(bytes, type, op)) {
    throw std::invalid_argument(concat("emulated ranks: the push does not cover ", bytes,
                                       " bytes of NCCL type ", static_cast<int>(type),
                                       " with op ", op));
  }
  if (blocks < 1 || blocks > max_push_blocks_) {
    throw std::invalid_argument(concat("emulated ranks: push blocks ", blocks,
                                       " are outside [1, ", max_push_blocks_, "]"));
  }
  PushShared s{};
  char* base = static_cast<char*>(staging_.data_ptr());
  const size_t stride = push_capacity_ + kPushCounterBytes;
  for (int r = 0; r < nranks_; ++r) {
    s.staging[r] = base + static_cast<size_t>(r) * stride;
  }
  auto* reports = static_cast<unsigned long long*>(reports_->device()) + rank * kReportWords;
  s.data = static_cast<char*>(data);
  s.data_align = push_alignment(data);
  s.calls = reinterpret_cast<unsigned long long*>(s.staging[rank] + push_capacity_);
  s.done = reports;
  s.stop = reinterpret_cast<const unsigned long long*>(stop_.data_ptr<int64_t>());
  s.fault = reports + 1;
  s.slot_bytes = push_slot_bytes(push_capacity_, nranks_);
  s.abort = static_cast<const volatile int*>(abort_->device());
  s.nranks = nranks_;
  s.rank = rank;
  CallTag tag{0, seq, call_signature(6, type, op, count, 0, seq)};
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
  follow_caller(rank);
  launch_push(s, count, type, op, blocks, tag, streams_[rank].stream());
}

void EmulatedRanks::synchronize(double timeout_s) {
  check_usable();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_s));
  if (drained(streams_, deadline)) {
    return;
  }
  broken_ = true;
  *static_cast<volatile int*>(abort_->host()) = 1;
  bool left = drained(streams_, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  throw std::runtime_error(concat("emulated ranks: the kernels did not finish in ", timeout_s,
                                  " s (ranks that never meet at a barrier); aborted",
                                  left ? "" : ", and they did not leave within 10 s more"));
}

std::vector<std::pair<uint64_t, uint64_t>> EmulatedRanks::faults() const {
  const volatile unsigned long long* words =
      static_cast<const volatile unsigned long long*>(reports_->host());
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (int r = 0; r < nranks_; ++r) {
    out.emplace_back(words[r * kReportWords + 1], words[r * kReportWords + 2]);
  }
  return out;
}

}  // namespace nccl_core::nvlink
