"""Raw Communicator operations (nccl.core style) against float64 references."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import (
    FLOATS, check, env_paths, expect_raises, fail, make, poison, reduce_ref, sanity, wide,
)
from tests.gpu.registry import case

# Raw ops use NCCL's types as they are: bool is plain uint8 arithmetic there.
RAW_DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
    torch.int32, torch.int64, torch.uint32, torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2,
]
RAW_OPS = {"SUM": nc.SUM, "PRODUCT": nc.PROD, "MAX": nc.MAX, "MIN": nc.MIN, "AVG": nc.AVG}


def _streams(ctx):
    """The stream forms a raw op accepts, cycled through the cases, and the
    side stream they name."""
    s = torch.cuda.Stream(device=ctx.device)
    return [None, s, s.cuda_stream, torch.cuda.current_stream(ctx.device)], s


def _sync(stream):
    if stream is None or isinstance(stream, int):
        torch.cuda.synchronize()
    else:
        stream.synchronize()


@case()
def communicator_properties(ctx):
    comm = nc.get_communicator()
    if comm.rank != ctx.rank or comm.nranks != ctx.world:
        fail(f"rank/nranks {comm.rank}/{comm.nranks}, expected {ctx.rank}/{ctx.world}")
    if comm.device != ctx.device:
        fail(f"device {comm.device}, expected {ctx.device}")
    if not comm.is_valid or comm.ptr == 0:
        fail("communicator not valid")
    if nc.get_communicator().ptr != comm.ptr:
        fail("get_communicator returned a different communicator the second time")
    if comm.get_async_error() != nc.Result.Success or not isinstance(comm.get_async_error(), nc.Result):
        fail(f"get_async_error: {comm.get_async_error()!r}")
    if not isinstance(comm.get_last_error(), str):
        fail("get_last_error is not a str")
    sub = dist.new_group([0, 1])
    if ctx.rank < 2:
        sc = nc.get_communicator(sub)
        if sc.nranks != 2 or sc.rank != ctx.rank or sc.ptr == comm.ptr:
            fail(f"subgroup communicator: nranks={sc.nranks} rank={sc.rank}")
    gloo = dist.new_group(backend="gloo")
    expect_raises(nc.NcclInvalid, lambda: nc.get_communicator(gloo), "nccl_core")
    if nc.get_error_string(nc.Result.InvalidArgument) != nc.get_error_string(4):
        fail("get_error_string differs for Result and int")
    if "invalid argument" not in nc.get_error_string(nc.Result.InvalidArgument).lower():
        fail(f"get_error_string(InvalidArgument) = {nc.get_error_string(4)!r}")


@case(min_world=1)
def raw_allreduce_every_dtype_and_op(ctx):
    comm = nc.get_communicator()
    streams, side = _streams(ctx)
    k = 0
    for di, dtype in enumerate(RAW_DTYPES):
        for oi, (name, op) in enumerate(RAW_OPS.items()):
            base = "PRODUCT" if name == "PRODUCT" else "SUM"
            inputs = [make(ctx, r, dtype, op=base, salt=di * 7 + oi) for r in range(ctx.world)]
            send = inputs[ctx.rank].to(ctx.device)
            recv = poison(send.shape, dtype, ctx.device)
            stream = streams[k % len(streams)]
            k += 1
            side.wait_stream(torch.cuda.current_stream(ctx.device))  # inputs are ready
            comm.allreduce(send, recv, op, stream=stream)
            _sync(stream)
            check(recv, reduce_ref(inputs, name, dtype), dtype, name, ctx.world, "raw allreduce")
            # In place, and through reduce(root=None).
            comm.reduce(send, send, op)
            torch.cuda.synchronize()
            check(send, reduce_ref(inputs, name, dtype), dtype, name, ctx.world, "raw reduce(root=None)")
    # torch.distributed.ReduceOp is accepted too.
    t = torch.full((5,), ctx.rank + 1.0, device=ctx.device)
    comm.allreduce(t, t, dist.ReduceOp.MAX)
    torch.cuda.synchronize()
    if not torch.all(t == ctx.world):
        fail(f"allreduce with dist.ReduceOp.MAX gave {t.tolist()}")


@case(min_world=1)
def raw_reduce_broadcast_every_root(ctx):
    comm = nc.get_communicator()
    for root in range(ctx.world):
        for dtype in (torch.float32, torch.int64, torch.bfloat16):
            inputs = [make(ctx, r, dtype, salt=root) for r in range(ctx.world)]
            send = inputs[ctx.rank].to(ctx.device)
            recv = poison(send.shape, dtype, ctx.device) if ctx.rank == root else None
            comm.reduce(send, recv, nc.SUM, root)
            torch.cuda.synchronize()
            if ctx.rank == root:
                check(recv, reduce_ref(inputs, "SUM", dtype), dtype, "SUM", ctx.world, f"raw reduce root={root}")
            out = poison(send.shape, dtype, ctx.device)
            comm.broadcast(send if ctx.rank == root else None, out, root)
            torch.cuda.synchronize()
            check(out, wide(inputs[root]), dtype, "SUM", ctx.world, f"raw broadcast root={root}")


@case(min_world=1)
def raw_gathers_scatter_alltoall(ctx):
    comm = nc.get_communicator()
    w, n = ctx.world, 129
    for dtype in (torch.float32, torch.float16, torch.int32, torch.uint8, torch.float8_e5m2):
        inputs = [make(ctx, r, dtype, n * w, salt=3) for r in range(w)]
        mine = inputs[ctx.rank].to(ctx.device)
        # allgather of the first block
        out = poison((w * n,), dtype, ctx.device)
        comm.allgather(mine[:n], out)
        torch.cuda.synchronize()
        check(out, torch.cat([wide(x[:n]) for x in inputs]), dtype, "SUM", w, "raw allgather")
        # reduce_scatter: every op
        for name, op in RAW_OPS.items():
            if name == "PRODUCT" and dtype != torch.float32:
                continue
            out = poison((n,), dtype, ctx.device)
            comm.reduce_scatter(mine, out, op)
            torch.cuda.synchronize()
            ref = reduce_ref(inputs, name, dtype)[ctx.rank * n:(ctx.rank + 1) * n]
            check(out, ref, dtype, name, w, "raw reduce_scatter")
        # alltoall: block j of rank i goes to rank j, lands at block i
        out = poison((w * n,), dtype, ctx.device)
        comm.alltoall(mine, out)
        torch.cuda.synchronize()
        ref = torch.cat([wide(inputs[i][ctx.rank * n:(ctx.rank + 1) * n]) for i in range(w)])
        check(out, ref, dtype, "SUM", w, "raw alltoall")
        for root in range(w):
            got = poison((w * n,), dtype, ctx.device) if ctx.rank == root else None
            comm.gather(mine[:n], got, root)
            torch.cuda.synchronize()
            if ctx.rank == root:
                check(got, torch.cat([wide(x[:n]) for x in inputs]), dtype, "SUM", w, f"raw gather root={root}")
            out = poison((n,), dtype, ctx.device)
            comm.scatter(mine if ctx.rank == root else None, out, root)
            torch.cuda.synchronize()
            check(out, wide(inputs[root][ctx.rank * n:(ctx.rank + 1) * n]), dtype, "SUM", w,
                  f"raw scatter root={root}")


@case(min_world=1)
def raw_send_recv_and_groups(ctx):
    comm = nc.get_communicator()
    w = ctx.world
    nxt, prv = (ctx.rank + 1) % w, (ctx.rank - 1) % w
    for dtype in (torch.float64, torch.int8, torch.bfloat16):
        inputs = [make(ctx, r, dtype, salt=11) for r in range(w)]
        send = inputs[ctx.rank].to(ctx.device)
        got = poison(send.shape, dtype, ctx.device)
        with nc.group():
            comm.send(send, nxt)
            comm.recv(got, prv)
        torch.cuda.synchronize()
        check(got, wide(inputs[prv]), dtype, "SUM", w, "raw send/recv ring")
    # Nested group_start/group_end and several collectives fused in one group.
    a = torch.full((64,), float(ctx.rank), device=ctx.device)
    b = torch.full((64,), 1.0, device=ctx.device)
    nc.group_start()
    nc.group_start()
    comm.allreduce(a, a, nc.SUM)
    nc.group_end()
    comm.allreduce(b, b, nc.SUM)
    nc.group_end()
    torch.cuda.synchronize()
    if not (torch.all(a == sum(range(w))) and torch.all(b == w)):
        fail(f"grouped allreduces gave {a[0].item()} and {b[0].item()}")
    expect_raises(nc.NcclInvalid, nc.group_end, "group_start")
    # Everyone -> rank 0, one group per receiver (fan-in).
    if ctx.rank == 0:
        bufs = [poison((33,), torch.float32, ctx.device) for _ in range(w)]
        with nc.group():
            for r in range(1, w):
                comm.recv(bufs[r], r)
        torch.cuda.synchronize()
        for r in range(1, w):
            if not torch.all(bufs[r] == r):
                fail(f"fan-in from {r}: {bufs[r][:4].tolist()}")
    else:
        comm.send(torch.full((33,), float(ctx.rank), device=ctx.device), 0)
        torch.cuda.synchronize()


@case(min_world=1)
def raw_ops_on_cupy_arrays(ctx):
    try:
        import cupy
    except ImportError:
        from tests.gpu.registry import Skip

        raise Skip("CuPy is not installed")
    comm = nc.get_communicator()
    with cupy.cuda.Device(ctx.device.index):
        x = nc.cupy.empty((3, 50), dtype=cupy.float32)
        x[...] = ctx.rank + 1
        y = cupy.zeros((3, 50), dtype=cupy.float32)
        s = cupy.cuda.Stream(non_blocking=True)
        cupy.cuda.get_current_stream().synchronize()
        comm.allreduce(x, y, nc.SUM, stream=s)
        s.synchronize()
        if not bool((y == sum(range(1, ctx.world + 1))).all()):
            fail(f"cupy allreduce: {y[0, :4]}")
        ptr, count, dt, dev = nc.cupy.resolve_array(x)
        if (ptr, count, dt, dev) != (x.data.ptr, 150, nc.NcclDataType.FLOAT32, ctx.device.index):
            fail(f"resolve_array gave {(ptr, count, dt, dev)}")
        if not nc._C._is_vmm(ptr):
            fail("cupy.empty memory is not NCCL (VMM) memory")
        f = nc.cupy.empty(6, dtype="int32", order="F")
        if f.shape != (6,) or f.dtype != cupy.int32:
            fail(f"cupy.empty(6): {f.shape} {f.dtype}")
        fo = nc.cupy.empty((4, 3), dtype=cupy.float64, order="F")
        if not fo.flags.f_contiguous:
            fail("cupy.empty(order='F') is not Fortran-ordered")
        expect_raises(nc.NcclInvalid, lambda: nc.cupy.empty(4, order="X"), "order")
        expect_raises(nc.NcclInvalid, lambda: nc.cupy.resolve_array(cupy.zeros(4, dtype=cupy.int16)), "int16")
        expect_raises(nc.NcclInvalid, lambda: nc.cupy.resolve_array([1, 2]), "cupy.ndarray")


@case(min_world=1)
def raw_ops_call_forms(ctx):
    """The raw operations are vectorcall methods (csrc/python/fastcall.h):
    arguments by position or by keyword, their defaults, every stream form,
    the signature inspect reads, and a Python def's TypeErrors for a call of
    the wrong shape."""
    import inspect

    comm = nc.get_communicator()
    sig = str(inspect.signature(nc.Communicator.allreduce))
    if sig != "(self, /, sendbuf, recvbuf, op, *, stream=None, config=None)":
        fail(f"inspect.signature(Communicator.allreduce) = {sig}")
    sig = str(inspect.signature(nc.Communicator.put_signal))
    if "peer_window_offset=0" not in sig or not sig.endswith("*, stream=None)"):
        fail(f"inspect.signature(Communicator.put_signal) = {sig}")
    if "ncclAllReduce" not in (nc.Communicator.allreduce.__doc__ or ""):
        fail("Communicator.allreduce has no docstring")
    dtype = torch.float32
    inputs = [make(ctx, r, dtype, n=4097, salt=900) for r in range(ctx.world)]
    send = inputs[ctx.rank].to(ctx.device)
    ref = reduce_ref(inputs, "SUM", dtype)
    s = torch.cuda.Stream(device=ctx.device)
    ext = torch.cuda.ExternalStream(s.cuda_stream, device=ctx.device)
    forms = {
        "all by keyword": lambda out: comm.allreduce(sendbuf=send, recvbuf=out, op=nc.SUM),
        "torch stream": lambda out: comm.allreduce(send, recvbuf=out, op=nc.SUM, stream=s),
        "external stream": lambda out: comm.allreduce(send, out, nc.SUM, stream=ext),
        "int stream": lambda out: comm.allreduce(send, out, nc.SUM, stream=s.cuda_stream),
        "reduce, root None by position": lambda out: comm.reduce(send, out, nc.SUM, None, stream=s),
        "reduce, root by keyword": lambda out: comm.reduce(send, out, op=nc.SUM, root=None),
    }
    for name, call in forms.items():
        out = poison(send.shape, dtype, ctx.device)
        s.wait_stream(torch.cuda.current_stream(ctx.device))
        call(out)
        torch.cuda.synchronize()
        check(out, ref, dtype, "SUM", ctx.world, f"raw allreduce, {name}")
    out = poison(send.shape, dtype, ctx.device)
    comm.broadcast(sendbuf=send if ctx.rank == 0 else None, recvbuf=out, root=0)
    torch.cuda.synchronize()
    check(out, wide(inputs[0]), dtype, "SUM", ctx.world, "raw broadcast, all by keyword")

    x = torch.ones(16, device=ctx.device)
    T = TypeError  # noqa: N806
    expect_raises(T, lambda: comm.allreduce(x, x), "missing required argument 'op'")
    expect_raises(T, lambda: comm.allreduce(x, x, nc.SUM, None), "at most 3 positional")
    expect_raises(T, lambda: comm.allreduce(x, x, nc.SUM, strem=None), "keyword argument 'strem'")
    expect_raises(T, lambda: comm.allreduce(x, x, nc.SUM, op=nc.SUM), "multiple values for argument 'op'")
    expect_raises(T, lambda: comm.broadcast(x, x), "'root'")
    expect_raises(T, lambda: comm.signal(), "'peer'")
    expect_raises(nc.NcclInvalid, lambda: comm.send(x, "1"), "peer must be an int")
    expect_raises(nc.NcclInvalid, lambda: comm.broadcast(x, x, 2**40), "outside")
    # C++ errors keep their Python types (pybind11's translators).
    expect_raises(nc.NcclInvalid, lambda: comm.allreduce(x, x.double(), nc.SUM), "Dtype mismatch")
    if torch.cuda.device_count() > 1:
        other = torch.cuda.Stream(device=(ctx.device.index + 1) % torch.cuda.device_count())
        expect_raises(nc.NcclInvalid, lambda: comm.allreduce(x, x, nc.SUM, stream=other),
                      "stream is on device")


@case()
def raw_ops_bad_input(ctx):
    comm = nc.get_communicator()
    d = ctx.device
    other = torch.device("cuda", (d.index + 1) % torch.cuda.device_count())
    x = torch.ones(16, device=d)
    y = torch.ones(16, device=d)
    bad = [
        ("cpu tensor", lambda: comm.allreduce(torch.ones(16), y, nc.SUM), "CUDA tensor"),
        ("wrong device", lambda: comm.allreduce(torch.ones(16, device=other), y, nc.SUM), "device"),
        ("dtype mismatch", lambda: comm.allreduce(x, y.double(), nc.SUM), "Dtype mismatch"),
        ("recv too small", lambda: comm.allreduce(x, y[:8], nc.SUM), "count"),
        ("non-contiguous", lambda: comm.allreduce(torch.ones(16, 2, device=d)[:, 0], y, nc.SUM), "contiguous"),
        ("int16", lambda: comm.allreduce(x.short(), y.short(), nc.SUM), "int16"),
        ("complex", lambda: comm.allreduce(x.cfloat(), y.cfloat(), nc.SUM), "complex"),
        ("bad op", lambda: comm.allreduce(x, y, 9), "reduction operator"),
        ("bool op", lambda: comm.allreduce(x, y, True), "op"),
        ("root range", lambda: comm.broadcast(x, y, ctx.world), "root"),
        ("negative root", lambda: comm.reduce(x, y, nc.SUM, -1), "root"),
        ("peer range", lambda: comm.send(x, ctx.world + 3), "peer"),
        ("allgather small", lambda: comm.allgather(x, y), "count"),
        ("reduce_scatter split", lambda: comm.reduce_scatter(torch.ones(ctx.world * 2 + 1, device=d), y, nc.SUM), "block"),
        ("scatter size", lambda: comm.scatter(x, torch.ones(3, device=d), 0) if ctx.rank == 0 else
            comm.scatter(None, y, ctx.world + 1), "root" if ctx.rank else "exactly"),
        ("list buffer", lambda: comm.allreduce([1.0], y, nc.SUM), "DLPack"),
        ("root recv missing", lambda: comm.reduce(x, None, nc.SUM, ctx.rank), "recvbuf"),
    ]
    if torch.cuda.device_count() < 2:
        bad = [row for row in bad if row[0] != "wrong device"]  # one GPU: no other
    for name, fn, match in bad:
        e = expect_raises(nc.NcclInvalid, fn, match)
        if e is not None and not isinstance(e, ValueError):
            fail(f"{name}: NcclInvalid should also be a ValueError")
    expect_raises(TypeError, lambda: comm.allreduce(x, y, nc.SUM, stream=True), "bool")
    expect_raises(TypeError, lambda: comm.allreduce(x, y, nc.SUM, stream="s"), "stream")
    sanity(ctx)


@case(nvlink=True, min_world=1)
def raw_allreduce_fast_path(ctx):
    """Small raw allreduces run as one nccl_core kernel (nvlink/raw.h): every
    dtype and op it covers against a float64 reference, in and out of place,
    on several streams and under graph capture; larger calls, calls inside a
    group, and types or ops it does not cover go to NCCL."""
    comm = nc.get_communicator()
    streams, side = _streams(ctx)
    seen = [comm._fast_path_calls()]
    # The default group's paths, per mode (at one rank captured calls take none).
    limits = env_paths(ctx.world)
    eager_max = limits["eager_fast_max_bytes"]["all_reduce"]
    captured_max = limits["fast_max_bytes"]["all_reduce"]

    def expect(n: int, what: str) -> None:
        seen[0] += n
        if comm._fast_path_calls() != seen[0]:
            fail(f"{what}: {comm._fast_path_calls()} raw fast-path calls, expected {seen[0]}")

    k = 0
    for di, dtype in enumerate(RAW_DTYPES):
        for oi, (name, op) in enumerate(RAW_OPS.items()):
            base = "PRODUCT" if name == "PRODUCT" else "SUM"
            covered = dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                torch.int8, torch.uint8, torch.int32, torch.int64)
            # AVG over one rank is its SUM: every type then.
            covered = covered and (name != "AVG" or dtype in FLOATS or ctx.world == 1)
            for n in (1, 7, 4097):
                inputs = [make(ctx, r, dtype, n=n, op=base, salt=100 + di * 7 + oi)
                          for r in range(ctx.world)]
                send = inputs[ctx.rank].to(ctx.device)
                recv = poison(send.shape, dtype, ctx.device)
                stream = streams[k % len(streams)]
                k += 1
                side.wait_stream(torch.cuda.current_stream(ctx.device))
                comm.allreduce(send, recv, op, stream=stream)
                _sync(stream)
                ref = reduce_ref(inputs, name, dtype)
                check(recv, ref, dtype, name, ctx.world, f"raw fast allreduce n={n}")
                covered = covered and n * send.element_size() <= eager_max
                expect(int(covered), f"{dtype} {name} n={n}")
                comm.allreduce(send, send, op)  # in place
                torch.cuda.synchronize()
                check(send, ref, dtype, name, ctx.world, f"raw fast allreduce in place n={n}")
                expect(int(covered), f"{dtype} {name} n={n} in place")
    # Above 256 KiB, and inside a group: NCCL.
    inputs = [make(ctx, r, torch.float32, n=70000, salt=300) for r in range(ctx.world)]
    t = inputs[ctx.rank].to(ctx.device)
    comm.allreduce(t, t, nc.SUM)
    torch.cuda.synchronize()
    check(t, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
          "raw allreduce of 280 KB")
    expect(0, "280 KB")
    a = torch.full((64,), float(ctx.rank), device=ctx.device)
    with nc.group():
        comm.allreduce(a, a, nc.SUM)
    torch.cuda.synchronize()
    if not torch.all(a == sum(range(ctx.world))):
        fail(f"grouped raw allreduce gave {a[0].item()}")
    expect(0, "inside a group")
    # Captured, then replayed with new inputs.
    x = torch.empty(1000, device=ctx.device)
    y = torch.empty(1000, device=ctx.device)
    z = torch.empty(1000, device=ctx.device)
    s = torch.cuda.Stream(device=ctx.device)
    s.wait_stream(torch.cuda.current_stream(ctx.device))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        comm.allreduce(x, y, nc.SUM, stream=s)
        comm.allreduce(z, z, nc.MAX, stream=s)  # in place, on data that differs by rank
    expect(2 if 4000 <= captured_max else 0, "captured")
    for rep in range(3):
        ins = [make(ctx, r, torch.float32, n=1000, salt=400 + rep) for r in range(ctx.world)]
        maxes = [make(ctx, r, torch.float32, n=1000, op="MAX", salt=450 + rep)
                 for r in range(ctx.world)]
        x.copy_(ins[ctx.rank])
        z.copy_(maxes[ctx.rank])
        graph.replay()
        torch.cuda.synchronize()
        check(y, reduce_ref(ins, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
              f"replayed raw allreduce {rep}")
        check(z, reduce_ref(maxes, "MAX", torch.float32), torch.float32, "MAX", ctx.world,
              f"replayed raw in-place MAX {rep}")
    expect(0, "replays")
    del graph


@case(nvlink=True, min_world=1)
def raw_and_dist_calls_share_one_engine(ctx):
    """A group's dist.all_reduce and raw Communicator.allreduce calls on its
    communicator go through one fast-path engine (nvlink/shared_engine.h):
    interleaved on two streams with no host sync, every result matches the
    float64 reference, and the group's and the communicator's counters are
    the same count (two engines would count apart)."""
    w, r, d, n = ctx.world, ctx.rank, ctx.device, 1000
    opts = nc.Options()
    opts.fast_path_max_bytes = 64 << 10
    opts.push_max_bytes = 0
    g = dist.new_group(list(range(w)), backend="nccl_core", pg_options=opts)
    dist.all_reduce(torch.ones(1, device=d), group=g)  # the communicator exists from here
    comm, be = nc.get_communicator(g), g._get_backend(d)
    base = be._fast_path_calls()
    if comm._fast_path_calls() != base:
        fail(f"counters apart before the calls: raw {comm._fast_path_calls()}, group {base}")
    side = torch.cuda.Stream(device=d)
    # The raw API holds no tensor (as nccl.core's): a raw call's input on the
    # side stream stays alive here until the sync, or the next iteration's
    # input, allocated on the current stream, could take its memory before
    # the side stream's kernel has read it.
    outs, refs, inputs_kept = [], [], []
    for i in range(60):
        inputs = [make(ctx, q, torch.float32, n=n, salt=i) for q in range(w)]
        x = inputs[r].to(d)
        torch.cuda.current_stream(d).synchronize()  # x is ready on every stream
        if i % 2 == 0:
            with torch.cuda.stream(side):
                dist.all_reduce(x, group=g)
            outs.append(x)
        else:
            y = torch.empty_like(x)
            comm.allreduce(x, y, nc.SUM, stream=side if i % 4 == 1 else None)
            outs.append(y)
            inputs_kept.append(x)
        refs.append(reduce_ref(inputs, "SUM", torch.float32))
    torch.cuda.synchronize(d)
    for i, (o, ref) in enumerate(zip(outs, refs)):
        check(o, ref, torch.float32, "SUM", w, f"call {i} ({'dist' if i % 2 == 0 else 'raw'})")
    if be._fast_path_calls() - base != 60 or comm._fast_path_calls() - base != 60:
        fail(f"fast-path calls: group {be._fast_path_calls() - base}, raw "
             f"{comm._fast_path_calls() - base}, expected 60 on one engine")
    dist.destroy_process_group(g)
    sanity(ctx)
