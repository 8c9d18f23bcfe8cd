"""The CPU drivers' devices: one per driver for the process, with a bounded caching allocator, the
memory pool results in caller storage come from, and the input sizes that pick local-task.

Why a pool (see runtime.py): first-touch page faults on fresh 4 KiB pages cost more than the kernels on a
VM; buffers that come back to IREE's caching allocator stay faulted in.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from .host_memory import ZERO_COPY_MIN_BYTES, _view_of, empty_aligned

CPU_DRIVERS = ("local-sync", "local-task")

# Inputs of TASK_THRESHOLD_BYTES up to (not including) TASK_MAX_BYTES send a local-sync module to local-task
# (QDQ_TASK_THRESHOLD / QDQ_TASK_MAX_BYTES override them, in bytes; QDQ_TASK_THRESHOLD=off: never).
# Below the window the task system's hand-off (~30-150 us) outweighs a second core. Above it, local-task
# allocates a module's own results outside the caching pool (IREE's queue alloca/dealloca on the task
# queue): every call then faults in fresh 4 KiB pages, 16,394 faults and ~35 ms for a 64 MiB result here
# against 0 on local-sync. A module that writes into caller storage allocates no result, so the upper end
# does not apply to it. Measured on the 2-core VM: see benchmarks/README.md.
TASK_THRESHOLD_BYTES = 1 << 20
TASK_MAX_BYTES = 32 << 20
# Upper bound of the memory each CPU device's caching allocator keeps (outstanding + free buffers).
POOL_BYTES = 1 << 30

_lock = threading.RLock()
_devices: dict[str, object] = {}
_configs: dict[str, object] = {}


def task_threshold() -> int:
    """Input bytes from which a local-sync module runs on local-task (0: never)."""
    env = os.environ.get("QDQ_TASK_THRESHOLD")
    if env is None:
        return TASK_THRESHOLD_BYTES
    if env.strip().lower() in ("off", "never", "none", "0", ""):
        return 0
    return int(env)


def task_max_bytes() -> int:
    """Input bytes from which a local-sync module stays on local-sync again (see TASK_MAX_BYTES)."""
    env = os.environ.get("QDQ_TASK_MAX_BYTES")
    return int(env) if env else TASK_MAX_BYTES


def device_for(driver: str):
    """The process-wide HAL device of a CPU ``driver``, with a bounded caching allocator. (Other drivers'
    devices live in ``device_sessions``, closed when idle.)"""
    import iree.runtime as rt
    with _lock:
        dev = _devices.get(driver)
        if dev is None:
            pool = int(os.environ.get("QDQ_POOL_BYTES", POOL_BYTES))
            # heap "*" (the only one), any allocation size, at most `pool` bytes, 64 free buffers.
            dev = rt.get_driver(driver).create_default_device(allocators=[f"caching:*=*;{pool};64"])
            _devices[driver] = dev
        return dev


def config_for(driver: str):
    import iree.runtime as rt
    with _lock:
        cfg = _configs.get(driver)
        if cfg is None:
            cfg = _configs[driver] = rt.Config(device=device_for(driver))
        return cfg


def trim():
    """Give the free buffers cached by the CPU devices back to the system."""
    with _lock:
        devs = [d for k, d in _devices.items() if k in CPU_DRIVERS]
    for d in devs:
        d.allocator.trim()


_POOL_MT = _POOL_USAGE = None


def pooled_empty(shape, dtype) -> np.ndarray:
    """An uninitialised, 64-byte aligned array in a buffer of the local-sync device's caching pool, for a
    result in caller storage: after the first call of a size its pages are already faulted in (a fresh
    NumPy array of 64 MiB costs ~16,000 page faults here when IREE writes it). The buffer goes back to the
    pool when the array (and every view of it) is dropped."""
    global _POOL_MT, _POOL_USAGE
    dtype = np.dtype(dtype)
    n = 1
    for d in shape:
        n *= int(d)
    if n == 0:
        return np.empty(shape, dtype)
    import iree.runtime as rt
    if _POOL_MT is None:  # device-local memory is what the caching allocator keeps (host-local it frees)
        _POOL_MT = int(rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE)
        _POOL_USAGE = int(rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING)
    buf = device_for("local-sync").allocator.allocate_buffer(
        memory_type=_POOL_MT, allowed_usage=_POOL_USAGE, allocation_size=n * dtype.itemsize)
    mapping = buf.map()
    ptr = np.frombuffer(mapping, np.uint8, count=1).__array_interface__["data"][0]
    # (by bytes, then viewed: an extension dtype such as bfloat16 has no array-interface typestr of its own)
    return _view_of(ptr, (n * dtype.itemsize,), np.dtype(np.uint8), (mapping, buf)).view(dtype).reshape(shape)


def result_storage(shape, dtype, alignment: int) -> np.ndarray:
    """Caller storage for a result the caller did not provide: from the pool when large, else NumPy's."""
    dtype = np.dtype(dtype)
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize >= ZERO_COPY_MIN_BYTES:
        return pooled_empty(shape, dtype)
    return empty_aligned(shape, dtype, alignment)


def release():
    """Forget the devices and configs (at exit, after every module that uses them is dropped)."""
    with _lock:
        _configs.clear()
        _devices.clear()
