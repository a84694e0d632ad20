"""Scenarios of the Backend hooks torch >= 2.15 added, each in fresh
processes (test_torch215_hooks.py launches them at 2 and 3 ranks; one GPU runs
them as simulated hosts):

- ``gather_single``: ``dist.gather_single`` into one flat (or stacked) tensor
  on every root in turn, every dtype, fresh random data, every element equal
  to the ranks' inputs; async too; a root's wrong output refused by name.
- ``window``: ``dist._new_window`` over NCCL memory: every rank puts fresh
  random data into the next rank's window and signals it; the next rank waits
  for both signals and finds every element, the rest of its window untouched.
  ``get_attr``, ``map_remote_tensor``, bad puts refused (``ValueError`` /
  ``TypeError``), ``tensor_deregister``.
- ``abort_hook``: ``register_abort_hook`` hooks run once per abort: an
  explicit ``_abort_process_group``, a blocking wait's timeout, the watchdog's
  timeout (error handling 2); unregistered ones never.  torch's flight
  recorder, attached to every nccl_core group, dumps its trace (our
  all_reduce among it) through the same hooks at the first abort.
- ``reconfigure``: ``init_process_group(enable_reconfigure=True)``: no
  collective before ``dist._reconfigure``; bad calls refused alike on every
  rank (nothing used up); the first ranks form a group, then the last one
  joins (a set of handles, the backend's order), then it dies in the middle of
  an all_reduce: the survivors' pending work ends with ``DistBackendError``,
  they reconfigure (a list of handles) and go on with right results.  At 3
  ranks a work left pending by a healthy group ends with ``DistBackendError``
  too.

Prints ``OK <scenario> rank r``, or ``SKIP <scenario>: <why>`` where the
loaded NCCL cannot serve it on this host; raises otherwise.  The victim of
``reconfigure`` ends with exit code 17.
"""

from __future__ import annotations

import datetime
import glob
import os
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import simhosts  # noqa: E402

VICTIM_EXIT = 17
DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8, torch.uint8,
          torch.int32, torch.int64, torch.bool)


class Skipped(Exception):
    """The loaded NCCL cannot serve the scenario here (the message says why)."""


def data(rank: int, n: int, dtype: torch.dtype, salt: int) -> torch.Tensor:
    """Rank `rank`'s fresh random CPU data (any rank can rebuild it)."""
    g = torch.Generator().manual_seed(1_000_003 * salt + rank)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -(2 ** 31)), min(info.max, 2 ** 31 - 1), (n,), generator=g,
                         dtype=torch.int64).to(dtype)


def expect(exc, fn, *words):
    try:
        fn()
    except exc as e:
        text = str(e)
        missing = [w for w in words if w not in text]
        assert not missing, f"{exc.__name__} without {missing}: {text}"
        return e
    raise AssertionError(f"no {exc.__name__} ({words})")


def store_barrier(store, name: str, rank: int, world: int) -> None:
    """Every rank has reached `name` (through the store: nothing on NCCL)."""
    store.set(f"{name}/{rank}", "1")
    store.wait([f"{name}/{r}" for r in range(world)], datetime.timedelta(seconds=60))


def checked_sum(group, n: int, dtype: torch.dtype, salt: int, device) -> None:
    """all_reduce of fresh random data on `group`, every element against the
    float64 sum of every member's data (integers: their int64 sum, wrapped to
    the dtype as NCCL's integer sums wrap)."""
    me, size = group.rank(), group.size()
    x = data(me, n, dtype, salt).to(device)
    work = dist.all_reduce(x, group=group, async_op=True)
    work.wait()
    torch.cuda.synchronize(device)
    # A reconfigurable group's failure aborts at once: a result is only a
    # result if its work succeeded.
    assert work.is_success(), f"all_reduce of {n} {dtype} at {size} ranks failed: {work.exception()}"
    got = x.cpu()
    parts = [data(r, n, dtype, salt) for r in range(size)]
    if dtype.is_floating_point:
        want = sum(p.double() for p in parts)
        tol = torch.finfo(dtype).eps * size * (want.abs().max().item() + 1)
        err = (got.double() - want).abs().max().item()
        assert err <= tol, f"all_reduce of {n} {dtype} at {size} ranks: max error {err} > {tol}"
    else:
        want = sum(p.to(torch.int64) for p in parts).to(dtype)
        wrong = (got != want).sum().item()
        assert wrong == 0, f"all_reduce of {n} {dtype} at {size} ranks: {wrong} elements wrong"


# --- gather_single -----------------------------------------------------------

def gather_single(rank: int, world: int, device: torch.device) -> None:
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device)
    salt = 0
    for dtype in DTYPES:
        for n in (1, 1031):
            for root in range(world):
                salt += 1
                x = data(rank, n, dtype, salt).to(device)
                stacked = salt % 2 == 0  # a [world, n] output is the same memory
                out = None
                if rank == root:
                    shape = (world, n) if stacked else (world * n,)
                    out = torch.zeros(shape, dtype=dtype, device=device)
                work = dist.gather_single(x, out, dst=root, async_op=salt % 3 == 0)
                if work is not None:
                    work.wait()
                if rank == root:
                    want = torch.cat([data(r, n, dtype, salt) for r in range(world)])
                    got = out.reshape(-1).cpu()
                    assert torch.equal(got, want), (
                        f"gather_single {dtype} n={n} root={root}: "
                        f"{(got != want).sum().item()} of {want.numel()} elements wrong")
    # The root's output is checked before anything is enqueued; the other
    # ranks' placeholders are not read, so they go on to the matching call.
    x = data(rank, 16, torch.float32, 99).to(device)
    if rank == 0:
        short = torch.zeros(world * 16 - 1, device=device)
        expect(ValueError, lambda: dist.gather_single(x, short, dst=0), "gather_single", "elements")
        strided = torch.zeros(world * 32, device=device)[::2]
        expect(ValueError, lambda: dist.gather_single(x, strided, dst=0), "contiguous")
        out = torch.zeros(world * 16, device=device)
        dist.gather_single(x, out, dst=0)
        want = torch.cat([data(r, 16, torch.float32, 99) for r in range(world)])
        assert torch.equal(out.cpu(), want), "gather_single after refused calls"
    else:
        dist.gather_single(x, None, dst=0)
    dist.destroy_process_group()


# --- window ------------------------------------------------------------------

def window(rank: int, world: int, device: torch.device) -> None:
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device)
    pg = dist.group.WORLD
    assert pg.supports_window
    n, poison = 4099, -7.0
    dst = nc.torch.empty(world * n, dtype=torch.float32, device=device)
    dst.fill_(poison)
    src = nc.torch.empty(n, dtype=torch.float32, device=device)
    mine = data(rank, n, torch.float32, 7)
    src.copy_(mine)
    torch.cuda.synchronize()
    to, frm = (rank + 1) % world, (rank - 1) % world
    try:
        win = dist._new_window(dst)
        src_win = dist._new_window(src)  # NCCL's put reads from a window
        win.put(src, to, rank * n, False).wait()
    except Exception as e:
        # Between simulated hosts the peers are network peers: NCCL's own
        # one-sided calls serve them, where NCCL can (2.29.2+, host RMA).
        refusals = ("2.29.2", "hostRmaSupport", "ncclPutSignal", "cannot register windows")
        if world > 1 and simhosts.active() and any(r in str(e) for r in refusals):
            raise Skipped(f"one-sided calls between simulated hosts: {type(e).__name__}: {e}") from None
        raise
    win.signal(to, True).wait()
    win.wait_signal(frm, False).wait()  # the put's signal
    win.wait_signal(frm, True).wait()   # the explicit one
    torch.cuda.synchronize()
    got = dst.cpu()
    want = torch.full((world * n,), poison)
    want[frm * n:(frm + 1) * n] = data(frm, n, torch.float32, 7)
    bad = (got != want).nonzero()
    assert bad.numel() == 0, (f"window after rank {frm}'s put: {bad.numel()} of {got.numel()} "
                              f"elements wrong, first at {bad[0].item()}")
    assert win.get_attr(rank).access_type == torch._C._distributed_c10d.WindowAccessType.UNIFIED
    local = win.map_remote_tensor(rank)
    assert local.data_ptr() == dst.data_ptr() and local.numel() == dst.numel()
    if world > 1 and simhosts.active():
        assert win.get_attr(to).access_type == torch._C._distributed_c10d.WindowAccessType.SEPARATE
        expect(ValueError, lambda: win.map_remote_tensor(to), "load/store")
    # Bad puts are refused on the calling rank before anything is enqueued.
    expect(TypeError, lambda: win.put(src.double(), to, 0, False), "window of")
    expect(ValueError, lambda: win.put(src, to, (world - 1) * n + 1, False), "do not fit")
    expect(ValueError, lambda: win.put(src, to, -1, False), ">= 0")
    expect(ValueError, lambda: win.put(src, world, 0, False), "dst_rank")
    expect(ValueError, lambda: win.signal(-1, False), "peer_rank")
    win.tensor_deregister()
    expect(ValueError, lambda: win.put(src, to, 0, False), "registered tensor")
    src_win.tensor_deregister()
    dist.destroy_process_group()


# --- abort hooks ---------------------------------------------------------------

def abort_hook(rank: int, world: int, device: torch.device) -> None:
    torch.cuda.set_device(device)
    # torch's flight recorder dumps through its abort hook, once per process.
    fr_prefix = os.path.join(os.environ["NCCL_CORE_TEST_FR_DIR"], f"r{rank}_")
    os.environ["TORCH_FR_DUMP_TEMP_FILE"] = fr_prefix
    short = datetime.timedelta(seconds=5)
    dist.init_process_group("nccl_core", device_id=device, timeout=short)
    store = dist.distributed_c10d._get_default_store()
    pg = dist.group.WORLD
    assert pg.supports_abort_hooks
    calls: list[str] = []

    def hook(name):
        return lambda: calls.append(name)

    # 1. An explicit abort runs the group's hooks once, before it tears down.
    g2 = dist.new_group(list(range(world)))
    g2.register_abort_hook(1, hook("g2"))
    g2.register_abort_hook(2, hook("g2 gone"))
    g2.unregister_abort_hook(2)
    expect(ValueError, lambda: g2.unregister_abort_hook(2), "no abort hook")
    checked_sum(g2, 1031, torch.float32, 1, device)
    # Every rank's collective has ended before any rank aborts: on a socket
    # transport an abort drops the sends still on the wire to a peer.
    store_barrier(store, "abort_hook/g2", rank, world)
    dist.distributed_c10d._abort_process_group(g2)
    assert calls == ["g2"], calls
    dumps = glob.glob(fr_prefix + "*")
    assert dumps, f"no flight-recorder dump at {fr_prefix}* after the abort"
    with open(dumps[0], "rb") as f:
        assert b"nccl_core:all_reduce" in f.read(), f"{dumps[0]} holds no nccl_core all_reduce"

    # 2. A blocking wait that times out aborts: the hooks run first, once.
    opts = nc.Options()
    opts.blocking_wait = True
    g3 = dist.new_group(list(range(world)), pg_options=opts, timeout=short)
    g3.register_abort_hook(3, hook("g3"))
    checked_sum(g3, 7, torch.float32, 2, device)
    if rank == 0:
        expect(dist.DistBackendError, lambda: dist.all_reduce(torch.ones(8, device=device), group=g3),
               "timeout")
        assert calls == ["g2", "g3"], calls
        store.set("abort_hook/g3", "1")
    else:
        store.wait(["abort_hook/g3"], datetime.timedelta(seconds=60))

    # 3. The watchdog's timeout (error handling 2: abort as it is raised).
    pg.register_abort_hook(4, hook("world"))
    checked_sum(pg, 99, torch.float32, 3, device)
    if rank == 0:
        work = dist.all_reduce(torch.ones(8, device=device), async_op=True)
        deadline = time.time() + 60
        while not work.is_completed() and time.time() < deadline:
            time.sleep(0.05)
        # Raising the error aborts the communicator, after the hooks ran.
        expect(dist.DistBackendError, work.wait, "timeout")
        assert calls == ["g2", "g3", "world"], calls
        store.set("abort_hook/world", "1")
    else:
        store.wait(["abort_hook/world"], datetime.timedelta(seconds=90))
    try:
        dist.destroy_process_group()
    except dist.DistBackendError:
        assert rank == 0  # the group's error, raised again at its end
    expected = ["g2", "g3", "world"] if rank == 0 else ["g2"]
    assert calls == expected, f"hooks ran {calls}, expected each once: {expected}"


# --- reconfigure -------------------------------------------------------------

def reconfigure(rank: int, world: int, device: torch.device) -> None:
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device, timeout=datetime.timedelta(seconds=30),
                            enable_reconfigure=True)
    store = dist.distributed_c10d._get_default_store()
    pg = dist.group.WORLD
    assert pg.supports_reconfigure
    expect(dist.DistBackendError, lambda: dist.all_reduce(torch.ones(4, device=device)), "_reconfigure")
    mine = dist._get_reconfigure_handle()
    assert mine.startswith("nccl_core:"), mine
    store.set(f"reconfigure/handle/{rank}", mine)
    handles = [store.get(f"reconfigure/handle/{r}").decode() for r in range(world)]
    victim = world - 1
    first = handles[:victim]
    others = [h for h in handles if h != mine]
    # Refused alike on every rank, before anything collective; no uuid is used up.
    expect(ValueError, lambda: dist._reconfigure(1, []), "empty")
    expect(ValueError, lambda: dist._reconfigure(1, ["nccl2:0:1"]), "not an nccl_core handle")
    expect(ValueError, lambda: dist._reconfigure(1, [mine, mine]), "twice")
    if others:
        expect(ValueError, lambda: dist._reconfigure(1, others), "not among")
    expect(ValueError, lambda: dist._reconfigure(1, handles, hints={"x": "y"}), "unknown hint")
    expect(ValueError, lambda: dist._reconfigure(1, handles, timeout=datetime.timedelta(0)), "positive")

    # Generation 1: every rank but the victim, by position.
    if rank != victim:
        dist._reconfigure(1, first).wait()
        assert (pg.rank(), pg.size()) == (rank, victim), (pg.rank(), pg.size())
        for k, (n, dtype) in enumerate(((1031, torch.float32), (4 << 20, torch.bfloat16), (77, torch.int64))):
            checked_sum(pg, n, dtype, 10 + k, device)
        expect(ValueError, lambda: dist._reconfigure(1, first), "uuid 1")
        pending = None
        if world >= 3 and rank == 0:
            # A work no peer joins, pending when the group is reconfigured.
            pending = dist.all_reduce(torch.ones(16, device=device), async_op=True)
    # Generation 2: the victim joins; a set lets the backend order the members.
    dist._reconfigure(2, set(handles)).wait()
    order = sorted(handles)
    assert (pg.rank(), pg.size()) == (order.index(mine), world), (pg.rank(), pg.size())
    if rank != victim and world >= 3 and rank == 0:
        expect(dist.DistBackendError, pending.wait, "reconfigured")
    for k, (n, dtype) in enumerate(((1031, torch.float32), (3 << 20, torch.float16), (5, torch.int32))):
        checked_sum(pg, n, dtype, 20 + k, device)
    dist.barrier()
    if rank == victim:
        os._exit(VICTIM_EXIT)  # in the middle of training: its peers are in an all_reduce with it
    x = data(pg.rank(), 1 << 16, torch.float32, 30).to(device)
    work = dist.all_reduce(x, async_op=True)
    deadline = time.time() + 120
    while not work.is_completed() and time.time() < deadline:
        time.sleep(0.05)
    expect(dist.DistBackendError, work.wait, "")
    # Generation 3: the survivors, by position, go on with right results.
    dist._reconfigure(3, first).wait()
    assert (pg.rank(), pg.size()) == (rank, victim), (pg.rank(), pg.size())
    for k, (n, dtype) in enumerate(((1031, torch.float32), (2 << 20, torch.float64), (9, torch.uint8))):
        checked_sum(pg, n, dtype, 40 + k, device)
    dist.destroy_process_group()


SCENARIOS = {"gather_single": gather_single, "window": window, "abort_hook": abort_hook,
             "reconfigure": reconfigure}


def main() -> int:
    scenario = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = simhosts.local_device()
    try:
        SCENARIOS[scenario](rank, world, device)
    except Skipped as e:
        print(f"SKIP {scenario}: {e}", flush=True)
        return 0
    print(f"OK {scenario} rank {rank}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
