// Kernels of the fast path (engine.h): small collectives over a symmetric
// scratch window whose every copy this rank can load and store (NVLink).
//
// Each call is one kernel on every rank: copy this rank's input into its own
// copy of the window, cross one barrier of every block of every rank, then
// read (and reduce) what the call needs from the peers' copies.  Inputs go to
// one of two halves of the window, alternating per call, so one barrier is
// enough: a rank writes half h again only two calls later, after a barrier
// that every peer reached once done reading half h.  Larger all-reduces may
// take two shots (the path table says from which size): each rank reduces
// one chunk and stores it into every peer's copy, a second barrier, then
// every rank copies the chunks out of its own copy.
//
// The kernels use plain peer pointers (no ncclDevComm), so they run on any
// NCCL that gives window pointers.  The barrier polls the communicator's
// abort flag: an abort (watchdog timeout, a lost rank) ends a waiting kernel
// instead of leaving it spinning.
//
// Desync detection at no extra traffic: a barrier flag carries the call's
// signature (a 16-bit hash of op, type, size, root and sequence number) in
// its low bits beside the barrier count.  A block that finds a peer's flag
// at the same count with another signature records the mismatch in
// host-mapped memory (Shared::fault), and the call moves no data: ranks that
// called different collectives or sizes get an error (the watchdog reads the
// record) instead of each other's bytes.  At least one side of a mismatched
// pair sees it: neither can raise its next flag before it read the other's.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#ifdef __CUDACC__
#define NCCL_CORE_HOST_DEVICE __host__ __device__
#else
#define NCCL_CORE_HOST_DEVICE
#endif

namespace nccl_core::nvlink {

constexpr int kMaxRanks = 16;
// A call launches up to this many blocks (blocks_for in kernels.cu: the
// same number on every rank, from the call's size); the barrier counts them.
constexpr int kMaxBlocks = 32;
// Window layout: barrier flags first (one per rank and block), then two data
// halves.
constexpr size_t kFlagBytes = sizeof(unsigned long long) * kMaxRanks * kMaxBlocks;
// A flag is (barrier count << kSigBits) | signature.
constexpr int kSigBits = 16;
constexpr unsigned long long kSigMask = (1ull << kSigBits) - 1;

// What identifies one call on every rank: `ticket` (0: none) is stored in
// Shared::done once every block has left; `seq` and `sig` go into the fault
// record and the barrier flags.
struct CallTag {
  unsigned long long ticket;
  unsigned long long seq;
  unsigned long long sig;  // kSigBits wide
};

// The call's signature: equal on every rank that makes the same call.
inline unsigned long long call_signature(int kind, int type, int op, unsigned long long bytes,
                                         int root, unsigned long long seq) {
  unsigned long long h = 0x9e3779b97f4a7c15ull;
  for (unsigned long long v : {static_cast<unsigned long long>(kind),
                               static_cast<unsigned long long>(type),
                               static_cast<unsigned long long>(op), bytes,
                               static_cast<unsigned long long>(root), seq}) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return (h ^ (h >> 32) ^ (h >> 16)) & kSigMask;
}

// The fault record's first word: nonzero, the peer, both signatures.
NCCL_CORE_HOST_DEVICE inline unsigned long long pack_fault(int peer, unsigned long long peer_sig,
                                     unsigned long long my_sig) {
  return (1ull << 63) | (static_cast<unsigned long long>(peer) << 40) | (peer_sig << kSigBits) |
         my_sig;
}
#ifdef __CUDACC__
// Records the first mismatch any block of the group sees: `fault` is the
// progress record ([pack_fault(...), seq], progress.h); later ones keep it.
__device__ inline void record_fault(unsigned long long* fault, int peer, unsigned long long peer_sig,
                                    unsigned long long my_sig, unsigned long long seq) {
  if (atomicCAS(&fault[0], 0ull, pack_fault(peer, peer_sig, my_sig)) == 0ull) {
    fault[1] = seq;
  }
}
#endif
inline int fault_peer(unsigned long long f) { return static_cast<int>((f >> 40) & 0xffff); }
inline unsigned long long fault_peer_sig(unsigned long long f) { return (f >> kSigBits) & kSigMask; }
inline unsigned long long fault_my_sig(unsigned long long f) { return f & kSigMask; }

// Where one call's kernel finds everything (identical on every call of a
// group but the epoch, which lives in device memory so graph replays advance
// it too).
struct Shared {
  char* window[kMaxRanks];     // each rank's copy of the scratch window
  // [barriers crossed, calls made, blocks finished in this call] (device memory)
  unsigned long long* epoch;
  unsigned long long* done;    // the last finished ticket (host-mapped, progress.h)
  const unsigned long long* stop;  // nonzero: leave at once (device memory, progress.h)
  const volatile int* abort;   // the communicator's abort flag (host-mapped)
  // [mismatch, seq] (host-mapped, progress.h): the first mismatch a block saw,
  // packed by pack_fault(), and the sequence number of its call.
  unsigned long long* fault;
  size_t half;                 // bytes in each data half
  // Bytes of each slot of the one-way kernels' area, which follows the two
  // data halves (one_way.h); 0: no area, every call crosses barriers.
  size_t one_way_slot;
  int nranks;
  int rank;
  // The most blocks a call launches: kMaxBlocks, or the GPU's multiprocessor
  // count where that is smaller, so that every block of a call is resident
  // at once (the barrier waits for all of them).  NVLink peers are the same
  // model, so every rank caps alike.
  int max_blocks;
  // The same for the one-way kernels (one_way.h), which cross no barrier:
  // kOneWayMaxBlocks, or the multiprocessor count where that is smaller.
  int one_way_max_blocks;
};

// out[j] = op over ranks r of rank r's input[src_offset + j], j < count,
// after every rank has staged `in_count` elements of its input.
//   all_reduce:     in_count = count,          src_offset = 0
//   reduce_scatter: in_count = count * nranks, src_offset = rank * count
// op: ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg (floating types).
// An all_reduce of two_shot_min_bytes or more (0: never) takes two shots
// (every rank reduces one chunk and stores it into its peers' copies).
// False (nothing launched) for a type or op the kernels do not cover.
// The tag's ticket is stored in s.done once every block of the call has
// left, whether the call completed, was stopped by an abort, or found a
// mismatched peer.
bool launch_reduce(const Shared& s, const void* in, size_t in_count, void* out, size_t count,
                   size_t src_offset, ncclDataType_t type, int op, size_t two_shot_min_bytes,
                   const CallTag& tag, cudaStream_t stream);

// For peers p in [first, first + npeers): out[(p - first) * bytes + j] =
// rank p's staged input at byte src_offset + j, j < bytes, after every rank
// has staged `in_bytes` of its input (`in` may be null with in_bytes 0).
//   all_gather:  in_bytes = bytes,          first 0,    npeers nranks, src 0
//   all_to_all:  in_bytes = bytes * nranks, first 0,    npeers nranks, src rank * bytes
//   broadcast:   root stages (npeers 0; out of place: 1, first = root, to
//                copy it back out); others read first = root, npeers 1
void launch_copy(const Shared& s, const void* in, size_t in_bytes, void* out, size_t bytes,
                 size_t src_offset, int first, int npeers, const CallTag& tag, cudaStream_t stream);

}  // namespace nccl_core::nvlink
