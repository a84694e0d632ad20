"""Every GPU case module; importing this package registers them all."""

from tests.gpu.cases import (  # noqa: F401
    collectives,
    gathers,
    p2p,
    groups,
    work,
    errors,
    raw_ops,
    resources,
    memory,
    rma,
    reliability,
    device,
    fast,
    symmetric,
    push,
    bad_input,
    torch_tools,
    mem_pools,
    native_rma,
    native_queries,
)
