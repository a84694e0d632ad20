"""Per-call collective configs (``ncclCollConfig_t``, NCCL 2.31.2+).

:class:`NCCLCollConfig` tunes one collective: pass it as ``config=`` to any
collective of :class:`~nccl_core_backend.Communicator`, or give it to a
group's ``dist.*`` collectives for a block with :func:`coll_config`.  Every
rank must pass the same config (NCCL checks it only locally).  A configured
call is always NCCL's, never nccl_core's own NVLink kernels.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from nccl_core_backend.constants import CTAPolicy
from nccl_core_backend.errors import NcclInvalid

__all__ = ["NCCLCollConfig", "VendorOption", "coll_config"]

_VALUE_FIELDS = ("int_value", "str_value", "raw_value")


def _type_name(value: object) -> str:
    return type(value).__name__


def _optional_int(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise NcclInvalid(f"{name} must be an int or None, got {_type_name(value)}")
    return int(value)


@dataclass(frozen=True)
class VendorOption:
    """One vendor-specific option of an :class:`NCCLCollConfig` (``ncclConfigExt_t``).

    NCCL itself ignores every option; a vendor's NCCL reads those with its
    ``vendor_id`` (non-zero, below 2**24).  Exactly one of ``int_value``,
    ``str_value`` and ``raw_value`` is set.
    """

    vendor_id: int
    """The vendor's identifier."""
    option_id: int
    """The option, among the vendor's."""
    int_value: int | None = None
    """An integer value (``val.i``)."""
    str_value: str | None = None
    """A string value (``val.s``, UTF-8)."""
    raw_value: int | None = None
    """Any other value as a pointer-sized integer (``val.raw``); an address
    must stay valid for the call."""

    def __post_init__(self) -> None:
        given = [name for name in _VALUE_FIELDS if getattr(self, name) is not None]
        if len(given) != 1:
            raise NcclInvalid(
                "VendorOption requires exactly one of int_value, str_value, raw_value "
                f"to be set, got {given or 'none'}"
            )
        for name in ("vendor_id", "option_id"):
            _optional_int(getattr(self, name), f"VendorOption.{name}")
        if self.int_value is not None:
            _optional_int(self.int_value, "VendorOption.int_value")
        if self.str_value is not None and not isinstance(self.str_value, str):
            raise NcclInvalid(f"VendorOption.str_value must be a str, got {_type_name(self.str_value)}")
        if self.raw_value is not None:
            _optional_int(self.raw_value, "VendorOption.raw_value")

    def _lower(self) -> tuple[int, int, int, Any]:
        if self.int_value is not None:
            return (self.vendor_id, self.option_id, 0, self.int_value)
        if self.str_value is not None:
            return (self.vendor_id, self.option_id, 1, self.str_value)
        return (self.vendor_id, self.option_id, 2, self.raw_value)


def _check_vendor_options(options: object) -> tuple[VendorOption, ...]:
    if isinstance(options, (VendorOption, str, bytes)) or not isinstance(options, Sequence):
        raise NcclInvalid(
            f"vendor_options must be a sequence of VendorOption, got {_type_name(options)}"
        )
    seen: set[tuple[int, int]] = set()
    for option in options:
        if not isinstance(option, VendorOption):
            raise NcclInvalid(
                f"vendor_options must contain VendorOption instances, got {_type_name(option)}"
            )
        key = (option.vendor_id, option.option_id)
        if key in seen:
            raise NcclInvalid(
                f"Duplicate vendor option key (vendor_id={option.vendor_id}, "
                f"option_id={option.option_id}); keys must be unique"
            )
        seen.add(key)
    return tuple(options)


def _event_handle(event: object) -> int:
    """The ``cudaEvent_t`` of a launch completion event, 0 for None."""
    if event is None:
        return 0
    if isinstance(event, bool):
        raise NcclInvalid("launch_completion_event must be an event or an int handle, got bool")
    if isinstance(event, int):
        handle = event
    elif hasattr(event, "cuda_event"):  # torch.cuda.Event: made at its first record()
        handle = int(event.cuda_event)
        if handle == 0:
            raise NcclInvalid(
                "launch_completion_event: this torch.cuda.Event has no CUDA event yet "
                "(torch makes it at the first record()); record it once first"
            )
    elif hasattr(event, "handle"):  # cuda.core Event
        handle = int(event.handle)
    else:
        raise NcclInvalid(
            "launch_completion_event must be a torch.cuda.Event, a cuda.core Event or a "
            f"nonzero int cudaEvent_t handle, got {_type_name(event)}"
        )
    if handle == 0:
        raise NcclInvalid("launch_completion_event has a null handle")
    return handle


@dataclass(kw_only=True)
class NCCLCollConfig:
    """The per-call config of one collective (``ncclCollConfig_t``, NCCL 2.31.2+).

    A field left ``None`` is NCCL's choice (or the communicator's config).
    The same config must be given on every rank.
    """

    min_ctas: int | None = None
    """Lower bound on the call's channels/CTAs (``NCCL_MIN_CTAS`` wins)."""
    max_ctas: int | None = None
    """Upper bound on the call's channels/CTAs, at most the communicator's
    ``max_ctas`` (``NCCL_MAX_CTAS`` wins)."""
    nvls_ctas: int | None = None
    """Channel cap of the NVLS pool (``NCCL_NVLS_NCHANNELS`` wins)."""
    cga_cluster_size: int | None = None
    """Thread-block cluster size, 0-8 on Hopper and later; the same for every
    call of one group (``NCCL_CGA_CLUSTER_SIZE`` wins)."""
    alg_selection: str | None = None
    """Which algorithms the call may use, e.g. ``"ring"``, ``"tree,ring"``,
    ``"^nvls"``; unset or empty: NCCL's choice."""
    force_alg_selection: bool | None = None
    """Whether an alg_selection NCCL cannot satisfy is an error (NCCL's
    default, True) rather than a fall back to its own choice."""
    cta_policy: CTAPolicy | int | None = None
    """The call's :class:`CTAPolicy` (``NCCL_CTA_POLICY`` wins)."""
    user_profiler_tag: int | None = None
    """A value NCCL hands to profiler plugins with this call's events (0 if
    unset; values with the top bit set are NCCL's)."""
    launch_completion_event: Any = None
    """An event NCCL records once the call's kernel has launched (NCCL
    2.32.3+): a torch.cuda.Event recorded once before, a cuda.core Event, or
    an int handle, made without timing.  Every rank passes one or none; at
    most one per communicator in a group."""
    vendor_options: Sequence[VendorOption] = ()
    """Options for a vendor's NCCL; ``(vendor_id, option_id)`` unique."""

    def __post_init__(self) -> None:
        self._lower()

    def _lower(self) -> tuple[Any, ...]:
        """The fields as plain values for the extension, checked now (the
        dataclass is mutable, so at each use too)."""
        ints = [
            _optional_int(getattr(self, name), name)
            for name in ("min_ctas", "max_ctas", "nvls_ctas", "cga_cluster_size")
        ]
        policy = self.cta_policy
        if isinstance(policy, enum.Enum) and not isinstance(policy, int):
            raise NcclInvalid(f"cta_policy must be a CTAPolicy or an int, got {_type_name(policy)}")
        policy = _optional_int(policy, "cta_policy")
        alg = self.alg_selection
        if alg is not None and not isinstance(alg, str):
            raise NcclInvalid(f"alg_selection must be a str or None, got {_type_name(alg)}")
        force = self.force_alg_selection
        if force is not None and not isinstance(force, bool):
            raise NcclInvalid(f"force_alg_selection must be a bool or None, got {_type_name(force)}")
        tag = _optional_int(self.user_profiler_tag, "user_profiler_tag")
        if tag is not None and not 0 <= tag < 1 << 64:
            raise NcclInvalid(f"user_profiler_tag {tag} is outside [0, 2**64)")
        options = _check_vendor_options(self.vendor_options)
        return (
            *ints,
            policy,
            alg,
            force,
            0 if tag is None else tag,
            _event_handle(self.launch_completion_event),
            tuple(option._lower() for option in options),
        )


@contextlib.contextmanager
def coll_config(config: NCCLCollConfig | None, group: Any = None) -> Iterator[None]:
    """Gives ``config`` to the ``dist.*`` collectives issued on ``group``
    (None: the world group) inside the block.

    Each collective takes the config in place when it starts: all_reduce,
    broadcast, reduce, all_gather (and into_tensor), gather, scatter,
    reduce_scatter (and _tensor), all_to_all_single of even splits, and their
    coalesced forms.  barrier, point-to-point calls and uneven all-to-alls
    (NCCL's sends and receives) take none.  Every rank enters the same block
    around the same calls.  A block inside another gives its own config (None:
    none) until it ends.

    Raises NcclInvalid for a group that is not nccl_core's or a config that
    is not an NCCLCollConfig, and NcclUnsupported where the loaded NCCL has no
    per-call configs (2.31.2), when the block starts.
    """
    from nccl_core_backend.communicator import get_backend

    backend = get_backend(group)
    previous = backend._swap_coll_config(config)
    try:
        yield
    finally:
        backend._swap_coll_config(previous)
