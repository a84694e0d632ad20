// The fast path's one-way kernels: small collectives without a barrier.
//
// The barrier kernels (kernels.h) stage the input into this rank's own
// window, cross a barrier with every peer, then load what they need from
// the peers' windows: a flag's trip over NVLink and then a load's round
// trip.  A one-way kernel stores instead: every rank writes what each peer
// needs straight into that peer's window, each 8 data bytes in a 16-byte
// line that carries the call's index twice as a flag beside them (each
// 8-byte half of a line lands whole), and each peer polls its own memory
// until every line it needs carries the call's flags.  One NVLink trip a
// call, no round trip; the lines cost twice the bytes, so only small calls
// take them (the path table's one_way_max_bytes).
//
// Where the lines go: an area of the window of its own, after the barrier
// kernels' two halves, which user data never enters (a staged tensor whose
// words equal a call's index could otherwise pass for its flags).  The area
// has two halves, alternating per call like the data halves; each holds one
// slot per sending rank: a header line, then the data lines.
//
// Why no barrier is needed before a slot is written again: rank r writes
// its slot in peer p's half h at call k + 2 only after its kernel of call
// k + 1 has seen p's header of k + 1 (every rank sends every peer a header
// each call, data or not), which p wrote after its kernel of call k, the
// last one to read half h, had ended.  Calls of the barrier kernels between
// keep the same order (each waits for every peer's block).
//
// The header carries the call's signature (kernels.h): a block that finds
// a peer's header of this call with another signature records the mismatch
// and writes nothing, so ranks that made different calls get an error, not
// each other's bytes (a peer that made a call of the barrier kernels
// instead never sends its header: both wait until the watchdog aborts, as
// when one rank's call goes to NCCL).  A flag counts the calls of its half,
// plus one, modulo 2^32: a line passes for fresh only if it was last written
// exactly 2^32 calls of its half earlier.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>

#include "nvlink/kernels.h"
#include "util/checked.h"
#include "util/torch_errors.h"

namespace nccl_core::nvlink {

// Data bytes in one 16-byte line.
constexpr size_t kOneWayLineData = 8;
// The most blocks a one-way call launches (Shared::one_way_max_blocks).
constexpr int kOneWayMaxBlocks = 128;

// Bytes of one slot for calls that send up to `max_bytes` to each peer: a
// header line, then a line for every 8 data bytes (checked, since the size
// comes from a group's option: ValueError where it would wrap).
inline size_t one_way_slot_bytes(size_t max_bytes) {
  size_t lines = checked::add<raise_value_error>(max_bytes, kOneWayLineData - 1,
                                                 "one_way_max_bytes") /
                 kOneWayLineData;
  return checked::mul<raise_value_error>(
      checked::add<raise_value_error>(lines, 1, "one-way slot lines"), 16, "one-way slot bytes");
}

// A group's slot (0: no area): for its one_way_max_bytes, capped at the
// largest call it stages (`max_bytes`), since no call sends a peer more.
inline size_t one_way_slot_for(size_t one_way_max_bytes, size_t max_bytes) {
  size_t most = one_way_max_bytes < max_bytes ? one_way_max_bytes : max_bytes;
  return most > 0 ? one_way_slot_bytes(most) : 0;
}

// Bytes of the whole area for `nranks` ranks (two halves of nranks slots).
inline size_t one_way_area_bytes(size_t slot_bytes, int nranks) {
  return checked::mul<raise_value_error>(
      checked::mul<raise_value_error>(2, static_cast<size_t>(nranks), "one-way slots"),
      slot_bytes, "one-way area bytes");
}

// The fast path's window for calls staging up to `max_bytes`: barrier flags,
// two data halves (16-byte aligned so that wide loads apply), then the
// one-way area.  Checked: max_bytes is a group's option.
inline size_t window_half_bytes(size_t max_bytes) {
  return checked::add<raise_value_error>(max_bytes, 15, "fast_path_max_bytes") / 16 * 16;
}
inline size_t window_bytes(size_t half, size_t slot_bytes, int nranks) {
  return checked::add<raise_value_error>(
      checked::add<raise_value_error>(
          kFlagBytes, checked::mul<raise_value_error>(2, half, "fast-path window halves"),
          "fast-path window bytes"),
      one_way_area_bytes(slot_bytes, nranks), "fast-path window bytes");
}

// Whether a call that sends `bytes` to each peer takes the one-way kernels:
// the group has the area and the slot holds them.  Depends on the group and
// the call's arguments only, so every rank decides alike.
inline bool one_way_covers(const Shared& s, size_t bytes) {
  return s.one_way_slot > 16 && bytes <= (s.one_way_slot / 16 - 1) * kOneWayLineData;
}

// out[j] = op over ranks q of rank q's input[q_offset + j], j < count, where
// q_offset is q * stride for the chunk rank q sends this rank (all_reduce:
// stride 0; reduce_scatter: the chunk for rank p starts at p * count, stride
// = count).  False (nothing launched) for a type or op not covered.
bool launch_one_way_reduce(const Shared& s, const void* in, void* out, size_t count,
                           size_t stride, ncclDataType_t type, int op, const CallTag& tag,
                           cudaStream_t stream);

// If `send`, this rank's `in` (`bytes`) goes to every peer; then for q in
// [first, first + npeers): out[(q - first) * bytes + j] = rank q's input[j]
// (this rank's own from `in`, skipped where that is already the place).
//   all_gather: every rank sends, first 0, npeers nranks
//   broadcast:  the root sends (npeers 0 in place, else 1 with first =
//               root); the others send nothing, first = root, npeers 1
void launch_one_way_copy(const Shared& s, const void* in, void* out, size_t bytes, bool send,
                         int first, int npeers, const CallTag& tag, cudaStream_t stream);

}  // namespace nccl_core::nvlink
