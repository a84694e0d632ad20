#include "device/collectives.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl_device.h>

#include <algorithm>
#include <type_traits>

#include "comm/communicator.h"
#include "comm/device_scope.h"
#include "comm/resources.h"
#include "device/dev_comm.h"
#include "util/reduce.cuh"
#include "nccl/api.h"
#include "nccl/features.h"
#include "util/checked.h"

namespace nccl_core {

namespace device {

namespace {

constexpr int kMaxPeers = 16;
constexpr int kThreads = 512;
constexpr int kMaxBlocks = 32;

template <class T>
__device__ __forceinline__ uint4 load_pack(const T* p, size_t i, bool aligned) {
  if (aligned) {
    return reinterpret_cast<const uint4*>(p)[i];
  }
  Pack<T> r;
  for (int k = 0; k < int(16 / sizeof(T)); ++k) r.v[k] = p[i * (16 / sizeof(T)) + k];
  return r.raw;
}

template <class T>
__device__ __forceinline__ void store_pack(T* p, size_t i, uint4 v, bool aligned) {
  if (aligned) {
    reinterpret_cast<uint4*>(p)[i] = v;
    return;
  }
  Pack<T> r;
  r.raw = v;
  for (int k = 0; k < int(16 / sizeof(T)); ++k) p[i * (16 / sizeof(T)) + k] = r.v[k];
}

// Reduces `n` packs (Vec) or elements (!Vec) read from every peer's copy of
// the window at `offset`.  With `in`, this rank first copies its input into
// its own copy of the window.  Vec depends only on the call's arguments, so
// every rank's block b covers the same indices (block b reads what block b
// wrote on each peer after their barrier); the alignment of the local `in`
// and `out` only chooses wide or narrow local accesses.
template <class T, int Op, bool Vec>
__global__ void lsa_all_reduce(ncclDevComm comm, ncclWindow_t win, size_t offset, const T* in,
                               T* out, size_t n, typename Acc<T>::type avg_scale,
                               bool in_aligned, bool out_aligned) {
  using A = typename Acc<T>::type;
  ncclCoopCta cta;
  ncclLsaBarrierSession<ncclCoopCta> bar(cta, comm, ncclTeamTagLsa(), blockIdx.x);
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (in != nullptr) {
    T* mine = static_cast<T*>(ncclGetLsaPointer(win, offset, comm.lsaRank));
    for (size_t i = first; i < n; i += stride) {
      if constexpr (Vec) {
        reinterpret_cast<uint4*>(mine)[i] = load_pack(in, i, in_aligned);
      } else {
        mine[i] = in[i];
      }
    }
  }
  bar.sync(cta, cuda::memory_order_acq_rel);
  const int peers = comm.lsaSize;
  const T* src[kMaxPeers];
  for (int p = 0; p < peers; ++p) {
    src[p] = static_cast<const T*>(ncclGetLsaPointer(win, offset, p));
  }
  for (size_t i = first; i < n; i += stride) {
    if constexpr (Vec) {
      constexpr int V = 16 / sizeof(T);
      A acc[V];
      Pack<T> pk;
      pk.raw = reinterpret_cast<const uint4*>(src[0])[i];
      for (int k = 0; k < V; ++k) acc[k] = to_acc(pk.v[k]);
      for (int p = 1; p < peers; ++p) {
        pk.raw = reinterpret_cast<const uint4*>(src[p])[i];
        for (int k = 0; k < V; ++k) acc[k] = combine<Op>(acc[k], to_acc(pk.v[k]));
      }
      for (int k = 0; k < V; ++k) {
        pk.v[k] = from_acc<T>(Op == ncclAvg ? acc[k] * avg_scale : acc[k]);
      }
      store_pack(out, i, pk.raw, out_aligned);
    } else {
      A acc = to_acc(src[0][i]);
      for (int p = 1; p < peers; ++p) acc = combine<Op>(acc, to_acc(src[p][i]));
      out[i] = from_acc<T>(Op == ncclAvg ? acc * avg_scale : acc);
    }
  }
  bar.sync(cta, cuda::memory_order_acq_rel);
}

// Copies every peer's `n` packs (Vec: uint4, else bytes) into out[peer].
template <bool Vec>
__global__ void lsa_all_gather(ncclDevComm comm, ncclWindow_t win, size_t offset, void* out,
                               size_t n) {
  using U = typename std::conditional<Vec, uint4, unsigned char>::type;
  ncclCoopCta cta;
  ncclLsaBarrierSession<ncclCoopCta> bar(cta, comm, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(cta, cuda::memory_order_acq_rel);
  const int peers = comm.lsaSize;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int p = 0; p < peers; ++p) {
    const U* src = static_cast<const U*>(ncclGetLsaPointer(win, offset, p));
    U* dst = static_cast<U*>(out) + static_cast<size_t>(p) * n;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
      dst[i] = src[i];
    }
  }
  bar.sync(cta, cuda::memory_order_acq_rel);
}

const ncclDevComm& dev_comm_of(const DevComm& dc) {
  return *static_cast<const ncclDevComm*>(dc.ptr());
}

// Checks shared by both collectives; returns the number of blocks to launch.
int prepare(const DevComm& dc, const Window& win, size_t offset, size_t bytes, size_t work,
            const char* what) {
  NCCL_CORE_REQUIRE(device_kernels_match_loaded_nccl(), device_kernels_mismatch_message());
  const ncclDevComm& comm = dev_comm_of(dc);  // throws if closed
  NCCL_CORE_REQUIRE(win.is_valid(), "RegisteredWindowHandle has been closed and is no longer valid");
  NCCL_CORE_REQUIRE(dc.owner() != nullptr && dc.owner() == win.owner(),
                    what, ": the device communicator and the window belong to different "
                    "communicators");
  NCCL_CORE_REQUIRE(comm.lsaSize == comm.nRanks, what, " needs every rank reachable by "
                    "load/store; the LSA team has ", comm.lsaSize, " of ", comm.nRanks, " ranks");
  NCCL_CORE_REQUIRE(comm.lsaSize <= kMaxPeers, what, " supports up to ", kMaxPeers,
                    " ranks, got ", comm.lsaSize);
  // Every rank's copy is read: the smallest window bounds the access.
  NCCL_CORE_REQUIRE(offset <= win.min_size() && bytes <= win.min_size() - offset, what, ": ",
                    bytes, " bytes at offset ", offset, " do not fit in the window of ",
                    win.min_size(), " bytes",
                    win.min_size() < win.size() ? " (the smallest rank's)" : "");
  int barriers = dc.requirements().lsa_barrier_count;
  NCCL_CORE_REQUIRE(barriers >= 1, what, " needs a device communicator with "
                    "lsa_barrier_count >= 1 (one barrier per thread block)");
  size_t wanted = (work + kThreads * 4 - 1) / (kThreads * 4);
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>({wanted, size_t(barriers),
                                                                 size_t(kMaxBlocks)})));
}

bool aligned16(size_t v) { return v % 16 == 0; }

template <class T, int Op>
void launch_reduce(const ncclDevComm& comm, ncclWindow_t w, size_t offset, const void* in,
                   void* out, size_t count, int blocks, cudaStream_t stream) {
  using A = typename Acc<T>::type;
  A scale = static_cast<A>(1.0 / comm.nRanks);
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  bool in_al = aligned16(reinterpret_cast<uintptr_t>(in));
  bool out_al = aligned16(reinterpret_cast<uintptr_t>(out));
  // Wide accesses to the window: decided by the arguments alone (see above).
  if (aligned16(offset) && aligned16(count * sizeof(T))) {
    lsa_all_reduce<T, Op, true><<<blocks, kThreads, 0, stream>>>(
        comm, w, offset, src, dst, count * sizeof(T) / 16, scale, in_al, out_al);
  } else {
    lsa_all_reduce<T, Op, false><<<blocks, kThreads, 0, stream>>>(
        comm, w, offset, src, dst, count, scale, in_al, out_al);
  }
  NCCL_CORE_CUDA_CHECK(cudaGetLastError());
}

} // namespace

int built_nccl_version() { return NCCL_VERSION_CODE; }

void all_reduce(const DevComm& dc, const Window& win, size_t offset, const void* in, void* out,
                size_t count, ncclDataType_t type, int op, cudaStream_t stream) {
  size_t elem = type == ncclFloat64 || type == ncclInt64 || type == ncclUint64 ? 8
                : type == ncclFloat16 || type == ncclBfloat16                   ? 2
                : type == ncclInt8 || type == ncclUint8                         ? 1
                                                                                : 4;
  int blocks = prepare(dc, win, offset, checked::bytes(count, elem, "device all_reduce bytes"),
                       count, "device all_reduce");
  if (count == 0) {
    return;
  }
  DeviceScope on_device(dc.owner()->device());  // `stream` may be a default stream (0)
  const ncclDevComm& comm = dev_comm_of(dc);
  ncclWindow_t w = win.handle();
  bool op_ok = true;
  bool type_ok = visit_type(type, [&](auto tt) {
    using T = typename decltype(tt)::type;
    op_ok = visit_op<T>(op, [&](auto ot) {
      launch_reduce<T, decltype(ot)::value>(comm, w, offset, in, out, count, blocks, stream);
    });
  });
  NCCL_CORE_REQUIRE(type_ok, "device all_reduce: unsupported dtype (NCCL type ", int(type),
                    "); use float32/64, float16, bfloat16, int8/32/64 or uint8");
  NCCL_CORE_REQUIRE(op_ok, "device all_reduce: reduction operator ", op,
                    " is not supported for this dtype (SUM, PROD, MAX, MIN; AVG for "
                    "floating types)");
}

void all_gather(const DevComm& dc, const Window& win, size_t offset, void* out, size_t bytes,
                cudaStream_t stream) {
  int blocks = prepare(dc, win, offset, bytes, bytes / 16 + 1, "device all_gather");
  if (bytes == 0) {
    return;
  }
  DeviceScope on_device(dc.owner()->device());  // `stream` may be a default stream (0)
  const ncclDevComm& comm = dev_comm_of(dc);
  if (aligned16(offset) && aligned16(bytes) && aligned16(reinterpret_cast<uintptr_t>(out))) {
    lsa_all_gather<true><<<blocks, kThreads, 0, stream>>>(comm, win.handle(), offset, out,
                                                          bytes / 16);
  } else {
    lsa_all_gather<false><<<blocks, kThreads, 0, stream>>>(comm, win.handle(), offset, out,
                                                           bytes);
  }
  NCCL_CORE_CUDA_CHECK(cudaGetLastError());
}

} // namespace device

bool device_kernels_match_loaded_nccl() {
  return features::status(features::kDeviceCollectives, api::loaded_version()) ==
         features::Status::NcclCore;
}

std::string device_kernels_mismatch_message() {
  return concat("the device kernels of nccl_core were compiled against NCCL ",
                api::version_string(device::built_nccl_version()),
                " headers, whose ncclDevComm layout differs from the loaded NCCL ",
                api::version_string(api::loaded_version()),
                "; rebuild nccl_core against the NCCL you load");
}

} // namespace nccl_core
