"""Side-by-side benchmark of nccl_core against PyTorch's backend nccl.

    torchrun --nproc-per-node=N -m nccl_core_backend.bench [--help]

Both backends run over the same ranks in one job (a default group on
nccl_core and a ``new_group(backend="nccl")``), take turns in rounds, and are
timed per call with CUDA events; the table gives median times, the ratio
nccl_core / nccl (lower is better), bus bandwidth as nccl-tests defines it,
and whether every result matched its expected value.  ``--workloads`` times a
tensor-parallel decode step in a CUDA graph, a DDP step and an FSDP2 step
instead.  Modules: ``cli`` (arguments), ``job`` (groups, launch checks),
``sizes``, ``data`` (exact check data), ``collectives`` (ops, bus bandwidth),
``timing``, ``sweep``, ``tp_decode``, ``training``, ``compare`` (workload
tolerances), ``report`` (tables, JSON), ``plot`` (PNG), ``progress``.
"""
