#include "nvlink/engine.h"

#include <ATen/cuda/CUDAContext.h>

#include <algorithm>

#include "comm/communicator.h"
#include "comm/resources.h"
#include "nvlink/launcher.h"
#include "nvlink/one_way.h"
#include "memory/allocator.h"
#include "nccl/api.h"
#include "nccl/types.h"
#include "util/host_profile.h"

namespace nccl_core::nvlink {

namespace {

bool floating(ncclDataType_t t) {
  return t == ncclFloat32 || t == ncclFloat64 || t == ncclFloat16 || t == ncclBfloat16;
}

// What the reduce kernel covers (kernels.cu: visit_type / visit_op).
bool reducible(ncclDataType_t t, ncclRedOp_t op) {
  switch (t) {
    case ncclFloat32: case ncclFloat64: case ncclFloat16: case ncclBfloat16:
    case ncclInt8: case ncclUint8: case ncclInt32: case ncclInt64:
      break;
    default:
      return false;
  }
  return op == ncclSum || op == ncclProd || op == ncclMax || op == ncclMin ||
         (op == ncclAvg && floating(t));
}

}  // namespace

bool Engine::whole_group_reachable(Communicator& comm) {
  // lsa_spans_all() is cached by the communicator: an atomic load per call.
  // One rank qualifies too: its kernel crosses barriers with itself.
  return comm.nranks() <= kMaxRanks && comm.lsa_spans_all();
}

void Engine::set_up(Communicator& comm, cudaStream_t stream) {
  auto self = comm.shared_from_this();
  size_t half = window_half_bytes(max_bytes_);
  size_t one_way_slot = one_way_slot_for(paths_.one_way_max_bytes, max_bytes_);
  size_t bytes = window_bytes(half, one_way_slot, comm.nranks());
  scratch_ = memory::empty({checked::narrow<int64_t, raise_value_error>(bytes, "fast-path window")},
                           at::kByte, comm.device(), false);
  // Peers write our barrier flags as soon as they run their first kernel,
  // which may be before ours: the zeros must land before we register.  Not
  // on the caller's stream, which may hold another group's stuck kernel.
  memory::zero_fresh(scratch_.data_ptr(), bytes);
  epoch_ = at::zeros({3}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA, comm.device()));
  window_ = Window::create(self, scratch_.data_ptr(), bytes, 0, scratch_.storage());
  if (!window_) {
    disabled_ = true;  // no windows on this system: the same on every rank
    return;
  }
  Shared s{};
  for (int r = 0; r < comm.nranks(); ++r) {
    auto p = window_->peer_pointer(r, 0);
    if (!p) {
      disabled_ = true;  // reachability is symmetric: every rank sees a gap
      window_->close();
      return;
    }
    s.window[r] = static_cast<char*>(*p);
  }
  s.epoch = reinterpret_cast<unsigned long long*>(epoch_.data_ptr<int64_t>());
  s.done = progress_->device_word();
  s.stop = progress_->stop_word(comm.device(), stream);
  s.abort = comm.abort_flag();
  s.fault = progress_->fault_words();
  s.half = half;
  s.one_way_slot = one_way_slot;
  s.nranks = comm.nranks();
  s.rank = comm.rank();
  int multiprocessors = at::cuda::getDeviceProperties(comm.device())->multiProcessorCount;
  s.max_blocks = std::min(multiprocessors, kMaxBlocks);
  s.one_way_max_blocks = std::min(multiprocessors, kOneWayMaxBlocks);
  shared_ = s;
}

bool Engine::is_set_up() const {
  return !disabled_ && window_ && window_->is_valid();
}

void Engine::observe(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  NCCL_CORE_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  capturing_ = status != cudaStreamCaptureStatusNone;
}

bool Engine::ready(Communicator& comm, Coll op, size_t staged, cudaStream_t stream) {
  // Each mode keeps its own limit: an eager limit above the captured one
  // (an option or NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES) holds for eager calls.
  if (disabled_ || staged == 0 || staged > std::max(paths_.fast_max(op), paths_.eager_fast_max(op)) ||
      !whole_group_reachable(comm)) {
    return false;
  }
  observe(stream);
  // Closed with the communicator's resources (on every rank, like any
  // collective resource call): set up again here, at the same call everywhere.
  // Set up at the first call of a captured call's size even where eager
  // calls of that size go to NCCL: a capture cannot set up, and the calls
  // before a capture (its warm-up) are eager.
  if (!window_ || !window_->is_valid()) {
    if (capturing_) {
      return false;  // every rank captures the same calls: all go to NCCL
    }
    set_up(comm, stream);
  }
  if (disabled_ || staged > (capturing_ ? paths_.fast_max(op) : paths_.eager_fast_max(op))) {
    return false;
  }
  start_call(comm, stream);
  return true;
}

void Engine::start_call(Communicator& comm, cudaStream_t stream) {
  device_ = comm.device();
  follow(stream);
  calls_.fetch_add(1, std::memory_order_relaxed);
  // Replays of a captured kernel would report a stale ticket: none for them.
  ticket_ = armed_ && !capturing_ ? progress_->next() : 0;
}

bool Engine::push_ready(Communicator& comm, size_t bytes, cudaStream_t stream) {
  if (push_disabled_ || !whole_group_reachable(comm)) {
    return false;
  }
  // Staging for the largest call so far, in powers of two up to the limit,
  // so that a program's few sizes cost a few re-creations at most.
  size_t want = push_staging_bytes(bytes, comm.nranks());
  observe(stream);
  if (push_staging_.holds(want)) {
    return true;
  }
  if (capturing_) {
    return false;  // every rank captures the same calls: all go to NCCL
  }
  size_t size = size_t(1) << 20;
  while (size < bytes) {
    size *= 2;
  }
  size_t capacity = push_staging_bytes(size < push_.max_bytes ? size : push_.max_bytes,
                                       comm.nranks());
  capacity = capacity < want ? want : capacity;
  if (push_shared_.calls != nullptr) {
    // Earlier pushes launched outside capture may still use it: they run in
    // call order (and wait on peers: bounded).  A graph's replays are not
    // ours to wait for: a staging a graph captured is kept instead.
    follow(stream);
    comm.wait_stream(stream, "the push all-reduce's earlier calls (staging regrowth)");
  }
  auto made = push_staging_.make(comm, capacity, push_captured_);
  push_captured_ = false;
  push_shared_ = PushShared{};
  if (made != PushStaging::Outcome::kReady) {
    // The same answer on every rank: this call and every later one go to NCCL.
    push_disabled_ = true;
    return false;
  }
  PushShared s = push_staging_.shared();
  s.done = progress_->device_word();
  s.stop = progress_->stop_word(comm.device(), stream);
  s.fault = progress_->fault_words();
  s.abort = comm.abort_flag();
  s.nranks = comm.nranks();
  s.rank = comm.rank();
  push_shared_ = s;
  return true;
}

CallTag Engine::tag(int kind, int type, int op, size_t size, int root) const {
  // A call without numbers from its caller (the raw API, a capture) counts
  // its own: every rank makes the same calls.  The signature takes the
  // collective count, equal on every rank that made the same collectives
  // whatever send/recv each made; the report takes the caller's seq.
  uint64_t own = calls_.load(std::memory_order_relaxed);
  uint64_t seq = seq_ != 0 ? seq_ : own;
  uint64_t collective = collective_ != 0 ? collective_ : own;
  return CallTag{ticket_, seq, call_signature(kind, type, op, size, root, collective)};
}

uint64_t Engine::take_ticket() {
  uint64_t t = armed_ && track_ ? last_ticket_ : 0;
  armed_ = false;
  ticket_ = 0;
  last_ticket_ = 0;
  seq_ = 0;
  collective_ = 0;
  return t;
}

bool Engine::settle(bool launched) {
  if (launched) {
    mark_launched(last_stream_);
  }
  if (launched && ticket_ != 0) {
    progress_->commit(ticket_, track_);  // from here its report is awaited
    last_ticket_ = ticket_;
  }
  ticket_ = 0;
  return launched;
}

void Engine::follow(cudaStream_t stream) {
  last_stream_ = stream;
  // A capture cannot wait on work outside it (nor the reverse): a graph's
  // calls are ordered within the graph, and its replays by the replay stream.
  if (!recorded_ || stream == recorded_stream_ || capturing_) {
    return;
  }
  if (recorded_ticket_ == 0) {
    switch_event_.block(stream);
  } else if (progress_->done() < recorded_ticket_) {
    wait_at_least(stream, progress_->device_word(), recorded_ticket_);
  }
}

void Engine::mark_launched(cudaStream_t stream) {
  if (capturing_) {
    return;
  }
  // Marked at every launch rather than at the next switch: by then the last
  // stream may have been destroyed (a CuPy stream, a user's stream).  The
  // ticket costs nothing more; an event record costs ~0.8 µs per call.
  if (ticket_ != 0 && can_wait_on_values(device_)) {
    recorded_ticket_ = ticket_;
  } else {
    switch_event_.record(stream);
    recorded_ticket_ = 0;
  }
  recorded_ = true;
  recorded_stream_ = stream;
}

bool Engine::all_reduce(Communicator& comm, const void* in, void* out, size_t count,
                        ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
  host_profile::Timer prof;
  if (!reducible(type, op) ||
      !ready(comm, Coll::kAllReduce, count * types::element_size(type), stream)) {
    return false;
  }
  prof.mark(host_profile::kReady);
  bool ok = launch_reduce(shared_, in, count, out, count, 0, type, op, paths_.two_shot_min_bytes,
                          tag(1, type, op, count, 0), stream);
  prof.mark(host_profile::kLaunch);
  settle(ok);
  prof.mark(host_profile::kMark);
  return ok;
}

bool Engine::all_reduce_pushed(Communicator& comm, const void* in, void* out, size_t count,
                               ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
  size_t bytes = count * types::element_size(type);
  // Arguments and group only (push.h): every rank decides alike.
  if (!push_.covers(bytes) || !push_covers(bytes, type, op) || !push_ready(comm, bytes, stream)) {
    return false;
  }
  // The staging is set up above for captured calls' sizes even where eager
  // calls of that size go to NCCL: a capture cannot set up, and the calls
  // before a capture (its warm-up) are eager.
  if (!push_.covers(bytes, capturing_)) {
    return false;
  }
  start_call(comm, stream);
  if (in != out) {
    NCCL_CORE_CUDA_CHECK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream));
  }
  push_calls_.fetch_add(1, std::memory_order_relaxed);
  push_captured_ = push_captured_ || capturing_;
  push_shared_.data = static_cast<char*>(out);
  push_shared_.data_align = push_alignment(out);
  launch_push(push_shared_, count, type, op, push_.ctas, tag(6, type, op, count, 0), stream);
  return settle(true);
}

bool Engine::reduce_scatter(Communicator& comm, const void* in, void* out, size_t count,
                            ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
  size_t n = static_cast<size_t>(comm.nranks());
  if (!reducible(type, op) ||
      !ready(comm, Coll::kReduceScatter, n * count * types::element_size(type), stream)) {
    return false;
  }
  return settle(launch_reduce(shared_, in, n * count, out, count, comm.rank() * count, type, op,
                              0, tag(2, type, op, count, 0), stream));
}

bool Engine::all_gather(Communicator& comm, const void* in, void* out, size_t bytes,
                        cudaStream_t stream) {
  if (!ready(comm, Coll::kAllGather, bytes, stream)) {
    return false;
  }
  launch_copy(shared_, in, bytes, out, bytes, 0, 0, comm.nranks(), tag(3, 0, 0, bytes, 0), stream);
  return settle(true);
}

bool Engine::all_to_all(Communicator& comm, const void* in, void* out, size_t bytes,
                        cudaStream_t stream) {
  size_t n = static_cast<size_t>(comm.nranks());
  if (!ready(comm, Coll::kAllToAll, n * bytes, stream)) {
    return false;
  }
  launch_copy(shared_, in, n * bytes, out, bytes, comm.rank() * bytes, 0, comm.nranks(),
              tag(4, 0, 0, bytes, 0), stream);
  return settle(true);
}

bool Engine::broadcast(Communicator& comm, const void* in, void* out, size_t bytes, int root,
                       cudaStream_t stream) {
  if (!ready(comm, Coll::kBroadcast, bytes, stream)) {
    return false;
  }
  if (comm.rank() == root) {
    // The root stages its input; out of place, it also copies it back out of
    // its own copy of the window.
    launch_copy(shared_, in, bytes, out, bytes, 0, root, in == out ? 0 : 1,
                tag(5, 0, 0, bytes, root), stream);
  } else {
    launch_copy(shared_, nullptr, 0, out, bytes, 0, root, 1, tag(5, 0, 0, bytes, root), stream);
  }
  return settle(true);
}

}  // namespace nccl_core::nvlink
