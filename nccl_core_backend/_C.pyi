"""Type stubs of the C++ extension nccl_core_backend._C."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Sequence, SupportsInt

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend, Store

from nccl_core_backend.coll_config import NCCLCollConfig
from nccl_core_backend.dev_resources import (
    GinBarrierHandle,
    GinBarrierRequirement,
    LLA2AHandle,
    LLA2ARequirement,
    LsaBarrierHandle,
    LsaBarrierRequirement,
    MultimemHandle,
    TeamRequirement,
)
from nccl_core_backend.constants import (
    NcclCftCap,
    NcclCftTeamMode,
    NcclCommMemStat,
    NcclGinConnectionType,
    NcclGinType,
    Result,
    WindowFlag,
)
from nccl_core_backend.properties import NCCLCommProperties
from nccl_core_backend.rma import WaitSignalDesc
from nccl_core_backend.team import NCCLTeam
from nccl_core_backend.unique_id import UniqueId


StreamLike = torch.cuda.Stream | int | Any | None
# A C-contiguous CUDA tensor, or an object with __dlpack__ (viewed through
# torch.from_dlpack) or only __cuda_array_interface__ (wrapped in place on its
# own device, never copied).  Raw operations refuse other layouts (x.t(),
# Fortran order) with NcclInvalid; registration and _resolve_tensor take any
# dense layout.
BufferLike = torch.Tensor | Any
RedOpLike = SupportsInt | CustomRedOp | dist.ReduceOp

def nccl_version() -> int: ...
def build_nccl_version() -> int: ...
def has_symbol(name: str) -> bool: ...
def _host_profile(enable: bool | None = None,
                  reset: bool = False) -> dict[str, tuple[int, float]]: ...
def group_start() -> None: ...
def group_end() -> None: ...
def group_simulate_end() -> float:
    """NcclInvalid outside a group or inside a nested one."""
def _param_get(key: str) -> str | None: ...
def _param_keys() -> list[str]: ...
def _param_dump_all() -> None: ...
def get_error_string(nccl_result: Result | int) -> str:
    """NcclInvalid for a code outside a 32-bit int."""
def _group_depth() -> int: ...
def _empty(sizes: Sequence[int], dtype: torch.dtype, device: int, fortran: bool) -> torch.Tensor:
    """NcclInvalid when the element count, a stride or the bytes would wrap."""
def _resolve_tensor(tensor: BufferLike) -> tuple[int, int, int, int]: ...
def _mem_live_bytes() -> int: ...
def _is_vmm(ptr: int) -> bool: ...
def _rma_native() -> bool: ...
def _parse_rma_route(text: str) -> str: ...
def _features(loaded: int | None = None) -> list[dict[str, Any]]: ...
def _path_table() -> list[dict[str, Any]]: ...
def _paths_for(world: int, fast_path_max_bytes: int | None = None, push_min_bytes: int | None = None,
               push_max_bytes: int | None = None,
               eager_fast_path_max_bytes: int | None = None,
               two_shot_min_bytes: int | None = None,
               one_way_max_bytes: int | None = None) -> dict[str, Any]: ...
def _claimed_struct_version(loaded: int) -> int: ...
def _set_comm_listener(listener: Any | None) -> None:
    """listener(group_name, comm_ptr, device, up): a group's communicator was created
    (up=True) or is about to be finalized or aborted (up=False)."""

class Options(Backend.Options):
    is_high_priority_stream: bool
    blocking_wait: bool
    watchdog_interval: timedelta
    error_handling: int
    abort_on_error: bool
    trace_buffer_size: int
    desync_report_wait: timedelta
    unraised_error_grace: timedelta
    call_check_interval: timedelta
    heartbeat_timeout: timedelta
    blocking: bool
    fast_path_max_bytes: int | None  # None: the path table (nccl_core_backend.paths)
    eager_fast_path_max_bytes: int | None  # eager calls, where fast_path_max_bytes is None
    push_min_bytes: int | None
    push_max_bytes: int | None
    push_ctas: int
    two_shot_min_bytes: int | None  # None: the path table's
    one_way_max_bytes: int | None  # None: the path table's
    register_allocator_segments: bool
    cga_cluster_size: int
    min_ctas: int
    max_ctas: int
    split_share: int
    cta_policy: int
    traffic_class: int
    net_name: str
    comm_name: str
    enable_timing: bool
    nan_check: bool
    nan_check_strict: bool
    def __init__(self, timeout: timedelta = ...) -> None: ...

class ProcessGroupNcclCore(Backend):
    def __init__(self, store: Store, rank: int, size: int, options: Options) -> None: ...
    def communicator(self, device: int | None = None) -> Communicator: ...
    def perform_nocolor_split(self, device: torch.device) -> None: ...
    def _paths(self) -> dict[str, Any] | None:
        """Which calls this group runs as nccl_core's NVLink kernels (nccl_core_backend.paths)."""
    def register_mem_pool(self, pool: torch.cuda.MemPool, symm: bool = False) -> None:
        """Every segment of `pool` registered with the group's communicator, now and as
        the pool grows, as buffers.  symm=True (the pool must use `mem_allocator`): the
        segments held now become symmetric windows, collectively, after a check that
        every rank holds as many; later ones are buffers.  DistBackendError without a
        communicator; ValueError for a pool on another device, one already registered,
        symm=True on memory that is not NCCL memory, or ranks holding different
        numbers of segments."""
    def deregister_mem_pool(self, pool: torch.cuda.MemPool) -> None:
        """ValueError for a pool that is not registered with this group."""
    def _registered_segments(self, pool: torch.cuda.MemPool | None = None) -> dict[str, int]: ...
    @property
    def options(self) -> Options: ...
    @property
    def nccl_core_options(self) -> Options: ...
    def _add_ephemeral_timeout(self, timeout: timedelta) -> None:
        """Adds `timeout` to ops issued from now until the first of them completes."""
    def _ephemeral_timeout(self) -> timedelta: ...
    def _set_default_timeout(self, timeout: timedelta) -> None: ...
    def _start_time_estimate(self) -> None:
        """Ops until _end_time_estimate() are simulated by NCCL, not run."""
    def _end_time_estimate(self) -> float:
        """NCCL's estimate of the simulated ops, in microseconds."""
    def comm_split_count(self) -> int: ...
    def memory_stats(self) -> dict[str, int]:
        """NCCL's memory statistics of the communicator (NCCL >= 2.29.7)."""
    def revoke(self) -> None:
        """ncclCommRevoke on the group's communicator (NCCL >= 2.28.7): its pending
        Works and every later call raise DistBackendError until destroy_process_group()."""
    def suspend(self) -> None:
        """ncclCommSuspend(NCCL_SUSPEND_MEM) on the group's communicator (NCCL >= 2.29.7)."""
    def resume(self) -> None:
        """ncclCommResume on the group's communicator (NCCL >= 2.29.7)."""
    def _is_initialized(self) -> bool: ...
    def _error_message(self) -> str:
        """The error this group failed with, '' while it has not (found by the watchdog
        before any call raised it, too)."""

class CommResource:
    def close(self) -> None: ...
    @property
    def is_valid(self) -> bool: ...
    def __enter__(self) -> CommResource: ...
    def __exit__(self, *args: object) -> None: ...

class RegisteredBufferHandle(CommResource):
    @property
    def handle(self) -> int: ...
    @property
    def size(self) -> int: ...

class RegisteredWindowHandle(CommResource):
    @property
    def handle(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def user_ptr(self) -> int: ...
    @property
    def flags(self) -> int: ...
    @property
    def lsa_size(self) -> int: ...
    @property
    def lsa_rank(self) -> int: ...
    def get_lsa_device_pointer(self, lsa_rank: int, offset: int = 0) -> int:
        """offset is checked against that rank's window size (exchanged at registration)."""
    def get_peer_device_pointer(self, peer: int, offset: int = 0) -> int | None:
        """offset is checked against the peer's window size (exchanged at registration)."""
    def get_lsa_multimem_device_pointer(self, offset: int = 0) -> int | None: ...
    def get_multimem_device_pointer(self, multimem: MultimemHandle, offset: int = 0) -> int | None:
        """The window's multicast address through a team's handle
        (DevCommResource.multimem_handle; ncclGetMultimemDevicePointer, NCCL >= 2.29.2), or
        None where this communicator has no NVLink multicast."""

class CustomRedOp(CommResource):
    @property
    def op(self) -> int: ...
    def __int__(self) -> int: ...
    @property
    def datatype(self) -> int: ...
    @property
    def residence(self) -> int: ...
    @property
    def scalar(self) -> torch.Tensor: ...
    @property
    def reduce_op(self) -> dist.ReduceOp: ...

class NCCLDevCommRequirements:
    lsa_multimem: bool
    barrier_count: int
    lsa_barrier_count: int
    rail_gin_barrier_count: int
    lsa_ll_a2a_block_count: int
    lsa_ll_a2a_slot_count: int
    gin_force_enable: bool
    gin_context_count: int
    gin_signal_count: int
    gin_counter_count: int
    gin_connection_type: NcclGinConnectionType
    gin_exclusive_contexts: bool
    gin_queue_depth: int
    gin_traffic_class: int | None
    world_gin_barrier_count: int
    gin_strong_signals_required: bool
    gin_va_signals_required: bool
    gin_custom_stride: int
    gin_type: NcclGinType
    cft_caps: NcclCftCap
    cft_barrier_count: int
    resources: tuple[LsaBarrierRequirement | GinBarrierRequirement | LLA2ARequirement, ...]
    teams: tuple[TeamRequirement, ...]
    def __init__(self, *, lsa_multimem: bool = False, barrier_count: int = 0,
                 lsa_barrier_count: int = 0, rail_gin_barrier_count: int = 0,
                 lsa_ll_a2a_block_count: int = 0, lsa_ll_a2a_slot_count: int = 0,
                 gin_force_enable: bool = False, gin_context_count: int = 0,
                 gin_signal_count: int = 0, gin_counter_count: int = 0,
                 gin_connection_type: NcclGinConnectionType | int = 0,
                 gin_exclusive_contexts: bool = False, gin_queue_depth: int = 0,
                 gin_traffic_class: int | None = None, world_gin_barrier_count: int = 0,
                 gin_strong_signals_required: bool = True, gin_va_signals_required: bool = True,
                 gin_custom_stride: int = 1, gin_type: NcclGinType | int = 0,
                 cft_caps: NcclCftCap | int = 0, cft_barrier_count: int = 0,
                 resources: Sequence[LsaBarrierRequirement | GinBarrierRequirement
                                     | LLA2ARequirement] = (),
                 teams: Sequence[TeamRequirement] = ()) -> None:
        """Fields of a later NCCL than the loaded one are refused (NcclUnsupported) when set
        away from NCCL's default: 2.29.7 the GIN connection, 2.30.3 the traffic class and world
        GIN barriers, 2.30.7 the signal flags, 2.31.2 the custom stride, GIN type and CFT.
        resources: device resources made by NCCL's *CreateRequirement helpers, each giving
        one handle in DevCommResource.resource_handles.
        teams: teams NCCL prepares for the device communicator, each once (entries for one
        team merge; multimem if any sets it); multimem is refused where NVLink multicast is
        off (NcclUnsupported), as lsa_multimem is."""

class DevCommResource(CommResource):
    @property
    def ptr(self) -> int: ...
    @property
    def dev_comm(self) -> DevCommResource: ...
    @property
    def requirements(self) -> NCCLDevCommRequirements: ...
    @property
    def resource_handles(self) -> tuple[LsaBarrierHandle | GinBarrierHandle | LLA2AHandle, ...]:
        """The handle of each of requirements.resources, in order, as NCCL completed it."""
    def multimem_handle(self, team: NCCLTeam) -> MultimemHandle:
        """The multicast handle NCCL filled in for ``team``; KeyError unless an entry of
        requirements.teams asked for it with multimem=True."""

class Communicator:
    def __init__(self) -> None:
        """A null communicator (no NCCL handle): what a new rank calls grow(..., rank=) on."""
    @property
    def rank(self) -> int: ...
    @property
    def nranks(self) -> int: ...
    @property
    def device(self) -> torch.device: ...
    @property
    def ptr(self) -> int: ...
    @property
    def is_valid(self) -> bool: ...
    def get_last_error(self) -> str: ...
    def get_async_error(self) -> Result: ...
    def get_mem_stat(self, stat: NcclCommMemStat | int) -> int: ...
    def suspend(self, flags: int = 1) -> None:
        """Releases the communicator's suspendable device memory (``GPU_MEM_SUSPEND``
        bytes) until :meth:`resume` (``ncclCommSuspend``, NCCL >= 2.29.7; ``flags``:
        NCCL_SUSPEND_MEM = 1).  ``NcclUnsupported`` on older NCCL."""
    def resume(self) -> None:
        """Restores what :meth:`suspend` released (``ncclCommResume``, NCCL >= 2.29.7)."""
    def revoke(self, flags: int = 0) -> None:
        """Stops the operations in flight (``ncclCommRevoke``, NCCL >= 2.28.7); then
        destroy(), split or shrink it.  ``flags`` other than 0: NcclInvalid."""
    def close_all_resources(self) -> None: ...
    def finalize(self) -> None:
        """Waits for operations of other threads in flight (and their open groups)
        first; NcclInvalid inside this thread's open group that uses it, and
        after revoke()."""
    def destroy(self) -> None:
        """As finalize, without ncclCommFinalize."""
    def abort(self) -> None:
        """Waits up to 1 s for calls of other threads that are only enqueueing."""
    def allreduce(self, sendbuf: BufferLike, recvbuf: BufferLike, op: RedOpLike, *,
                  stream: StreamLike = None,
                  config: NCCLCollConfig | None = None) -> None:
        """bool buffers reduce as logic: SUM is OR, PROD is AND; AVG and
        CustomRedOp are refused for them (as for reduce and reduce_scatter)."""
    def reduce(self, sendbuf: BufferLike, recvbuf: BufferLike | None, op: RedOpLike,
               root: int | None = None, *, stream: StreamLike = None,
               config: NCCLCollConfig | None = None) -> None: ...
    def broadcast(self, sendbuf: BufferLike | None, recvbuf: BufferLike, root: int, *,
                  stream: StreamLike = None,
                  config: NCCLCollConfig | None = None) -> None: ...
    def allgather(self, sendbuf: BufferLike, recvbuf: BufferLike, *,
                  stream: StreamLike = None,
                  config: NCCLCollConfig | None = None) -> None: ...
    def gather(self, sendbuf: BufferLike, recvbuf: BufferLike | None, root: int | None = None, *,
               stream: StreamLike = None,
               config: NCCLCollConfig | None = None) -> None: ...
    def reduce_scatter(self, sendbuf: BufferLike, recvbuf: BufferLike, op: RedOpLike, *,
                       stream: StreamLike = None,
                       config: NCCLCollConfig | None = None) -> None: ...
    def alltoall(self, sendbuf: BufferLike, recvbuf: BufferLike, *,
                 stream: StreamLike = None,
                 config: NCCLCollConfig | None = None) -> None: ...
    def scatter(self, sendbuf: BufferLike | None, recvbuf: BufferLike, root: int, *,
                stream: StreamLike = None,
                config: NCCLCollConfig | None = None) -> None: ...
    def send(self, sendbuf: BufferLike, peer: int, *, stream: StreamLike = None) -> None: ...
    def recv(self, recvbuf: BufferLike, peer: int, *, stream: StreamLike = None) -> None: ...
    def register_buffer(self, buffer: BufferLike) -> RegisteredBufferHandle: ...
    def register_window(self, buffer: BufferLike,
                        flags: WindowFlag | int | None = None) -> RegisteredWindowHandle | None: ...
    def create_pre_mul_sum(self, scalar: float | int | torch.Tensor | Any,
                           datatype: Any = None, residence: Any = None) -> CustomRedOp:
        """For an integer datatype the factor must be integral and fit it
        (0.5 for int8, -1 for uint8: NcclInvalid); torch.bool is refused."""
    def put_signal(self, local_buffer: BufferLike, peer: int, peer_window: RegisteredWindowHandle,
                   peer_window_offset: int = 0, signal_index: int = 0, context: int = 0,
                   flags: int = 0, *, stream: StreamLike = None) -> None:
        """peer_window_offset (elements of local_buffer's dtype) times the
        element size must not wrap, and offset + bytes must fit the *peer's*
        window (its size is exchanged at registration)."""
    def signal(self, peer: int, signal_index: int = 0, context: int = 0, flags: int = 0, *,
               stream: StreamLike = None) -> None: ...
    def wait_signal(self, descs: WaitSignalDesc | Sequence[WaitSignalDesc], *,
                    stream: StreamLike = None) -> None: ...
    def shrink(self, exclude_ranks: Sequence[int] | None = None, config: Options | None = None,
               flag: int = 0) -> Communicator:
        """exclude_ranks must name at least one rank, each once (NcclInvalid otherwise)."""
    def get_unique_id(self) -> UniqueId:
        """ncclCommGetUniqueId (NCCL >= 2.29.2), on the one existing rank that leads a grow."""
    def grow(self, nranks: int, unique_id: UniqueId | None = None, rank: int | None = None,
             config: Options | None = None) -> Communicator:
        """ncclCommGrow (NCCL >= 2.29.2): existing ranks on this communicator (unique_id on
        the leading rank only), new ranks on Communicator() with unique_id and rank=."""
    def _resource_count(self) -> int: ...
    def create_dev_comm(self,
                        requirements: NCCLDevCommRequirements | None = None) -> DevCommResource: ...
    @property
    def properties(self) -> NCCLCommProperties:
        """``ncclCommQueryProperties`` (NCCL >= 2.29.2); fields of later releases
        are None on older ones."""
    @property
    def cuda_dev(self) -> int: ...
    @property
    def nvml_dev(self) -> int: ...
    @property
    def device_api_support(self) -> bool: ...
    @property
    def multimem_support(self) -> bool: ...
    @property
    def gin_type(self) -> NcclGinType: ...
    @property
    def railed_gin_type(self) -> NcclGinType:
        """NCCL >= 2.29.7."""
    @property
    def n_lsa_teams(self) -> int:
        """NCCL >= 2.29.7."""
    @property
    def host_rma_support(self) -> bool:
        """NCCL >= 2.29.7."""
    @property
    def team_world(self) -> NCCLTeam: ...
    @property
    def team_lsa(self) -> NCCLTeam: ...
    @property
    def team_rail(self) -> NCCLTeam: ...
    def team_cft(self, mode: NcclCftTeamMode | int = 0) -> NCCLTeam:
        """NCCL >= 2.31.2."""
    @property
    def team_cft_multimem(self) -> NCCLTeam:
        """NCCL >= 2.31.2."""
    def team_rank_to_world(self, team: NCCLTeam, team_rank: int) -> int:
        """NcclInvalid for a team_rank outside the team or a team not of this rank."""
    def team_rank_to_lsa(self, team: NCCLTeam, team_rank: int) -> int:
        """NcclInvalid as team_rank_to_world."""
    @property
    def rma_route(self) -> str:
        """"auto" or "native" (see docs/api.md, One-sided operations)."""
    @rma_route.setter
    def rma_route(self, value: str) -> None:
        """NcclUnsupported for "native" before NCCL 2.29.2; NcclInvalid for another
        route once one is agreed (first register_window) and its windows live."""
    def _rma_served_by_kernels(self, peer: int) -> bool: ...

def _device_all_reduce(dev_comm: DevCommResource, window: RegisteredWindowHandle, out: BufferLike,
                       offset: int, op: int, stream: StreamLike) -> None: ...
def _device_all_gather(dev_comm: DevCommResource, window: RegisteredWindowHandle, out: BufferLike,
                       offset: int, stream: StreamLike) -> None: ...
def _device_kernels_available() -> bool: ...
def _device_kernels_mismatch() -> str: ...
