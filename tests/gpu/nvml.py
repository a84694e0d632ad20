"""Device memory one process holds, from NVML through ctypes (the driver's
libnvidia-ml; no pynvml needed on the GPU hosts).

The GPU is found by its UUID, which CUDA and NVML share: CUDA's index is
NVML's only while CUDA_VISIBLE_DEVICES is unset, and the memory cases run
with it set on shared hosts."""

from __future__ import annotations

import ctypes

_lib = None
_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF


class _ProcessInfo(ctypes.Structure):
    # nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it.
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


def _library():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        if lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit_v2 failed")
        _lib = lib
    return _lib


def process_bytes(uuid: str, pid: int) -> int | None:
    """Bytes process `pid` holds on the GPU with this UUID ("GPU-..." or the
    bare form torch prints); None where NVML cannot tell."""
    try:
        lib = _library()
    except OSError:
        return None
    name = uuid if uuid.startswith("GPU-") else "GPU-" + uuid
    handle = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByUUID(name.encode(), ctypes.byref(handle)) != 0:
        return None
    count = ctypes.c_uint(64)
    infos = (_ProcessInfo * 64)()
    fn = getattr(lib, "nvmlDeviceGetComputeRunningProcesses_v3", None)
    if fn is None or fn(handle, ctypes.byref(count), infos) != 0:
        return None
    for info in infos[: count.value]:
        # In a container without the host's PID namespace NVML reports other
        # PIDs, or no byte count (NVML_VALUE_NOT_AVAILABLE): None then.
        if info.pid == pid and info.usedGpuMemory != _NOT_AVAILABLE:
            return int(info.usedGpuMemory)
    return None
