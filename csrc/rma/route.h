// Which implementation carries a communicator's one-sided operations.
//
//   auto   (default): peers this GPU can load from and store to (the LSA
//          team, NVLink) go through nccl_core's kernels (kernels.cu); the
//          others through NCCL's ncclPutSignal / ncclSignal / ncclWaitSignal
//          (2.29.2+).
//   native: every peer through NCCL's calls, NVLink peers too (NCCL serves
//          those with its copy-engine path), so a single host exercises
//          NCCL's own implementation.  Needs NCCL 2.29.2.
//
// Why the route belongs to the communicator, never to a window or a rank:
// signals are counted per (sender, receiver) pair, not per window.  Our
// kernels add 1 to the receiver's counter for the sender in nccl_core's
// signal area; NCCL writes a sequence number into a signal buffer of its own.
// wait_signal(peer, op_count) names neither a window nor a route, and
// signal() has no window at all, so the receiver can only find a sender's
// signals if both agree, for every pair, on where they land.  A route per
// window would split one pair's signals over two counters that no wait could
// add up; a route that differed between ranks would make a receiver poll the
// counter its sender never writes (a hang).  Hence:
//   - the route is a function of the loaded NCCL, the requested option and
//     the group only (LSA membership is symmetric: p is in my LSA team iff I
//     am in p's), never of per-rank state;
//   - the option is agreed collectively when the communicator's RMA state is
//     created (its first register_window): every rank contributes its
//     request, whether its NCCL has the calls and NCCL's hostRmaSupport, and
//     every rank takes the same decision from the gathered values (the same
//     error on every rank when they differ), so no rank can diverge;
//   - it stays fixed while that state lives (until close_all_resources, which
//     waits for the device first, so no signal is in flight when a new
//     agreement may pick another route).  NCCL's own counters live as long as
//     the communicator and advance in step on both sides of a pair, so a
//     later return to the native route finds them consistent.
// The agreement is also where NCCL's own one-sided state gets set up when
// NCCL's calls will carry some peer (signals.cpp: set_up_nccl), since NCCL
// does that collectively at a rank's first one-sided call.
#pragma once

#include <memory>
#include <string>

namespace nccl_core {
class Communicator;
}

namespace nccl_core::rma {

enum class Route { Auto = 0, Native = 1 };

const char* route_name(Route r);

// "auto" / "native" (any case, surrounding blanks ignored); NcclInvalid
// naming `what` otherwise.
Route parse_route(const std::string& text, const char* what);

// The route this rank asks for: the communicator's setting if one was made,
// else NCCL_CORE_RMA_ROUTE, else auto.  NcclInvalid for a bad variable.
Route requested_route(const Communicator& comm);

// Communicator.rma_route = ...: remembered until the route is agreed.
// NcclUnsupported for native where the loaded NCCL lacks the calls.
void request_route(const Communicator& comm, Route r);

struct Agreement {
  Route route;
  // Every rank's NCCL has the one-sided calls and none reported
  // hostRmaSupport = false (unknown before 2.29.7): NCCL's one-sided state
  // may be set up now, at a point every rank reaches.
  bool nccl_calls_usable;
};

// Collective (every rank at the same point): gathers every rank's request and
// capabilities and returns the route all of them take, or throws the same
// error on every rank (NcclInvalid: ranks disagree or a bad variable;
// NcclUnsupported: native without NCCL 2.29.2 or NCCL's hostRmaSupport;
// NcclError: ncclCommQueryProperties failed on some rank).
Agreement agree_route(const std::shared_ptr<Communicator>& comm);

} // namespace nccl_core::rma
