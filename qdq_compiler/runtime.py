"""Load compiled modules once per process and call them with NumPy arrays.

One device + VM instance per driver and one context per artifact, kept for the life of the process, so
repeated calls pay only the invocation.

CPU drivers (``local-sync``, ``local-task``) take a fast path that avoids every host<->device copy that
is not needed (IREE's ``FunctionInvoker`` copies each NumPy argument into a fresh device buffer, and
reading a result back copied it again):

* **Inputs are imported, not copied** (``HalAllocator.import_host_allocation``): the program reads the
  caller's NumPy memory in place. The compiled dispatches assume aligned bindings (IREE declares
  ``alignment(64)``; the SSE code of ``x86-64-v2`` faults below 16 bytes, see ``import_alignment``), so an
  array whose address is not a multiple of the module's ``import_alignment`` is first copied into an
  aligned NumPy buffer. Imported inputs are bound read-only: the programs never write their arguments
  (none is tied to a result), which is also why a large read-only array may be imported through a
  writable alias (the import API asks for a writable buffer).
* **Constant arguments** (``Constant``: the attribute parameters ``execute.run`` derives once per
  configuration) are imported once, from a private copy, per device.
* **Results are handed out without a copy**: a result of at least ``ZERO_COPY_MIN_BYTES`` is returned as
  a writable NumPy array that views the device buffer and holds the buffer and its mapping alive through
  ``ndarray.base`` (``_Keep``), so the memory cannot be freed or reused while any view of it exists (the
  earlier bug read ``to_host()`` views after their buffer was released). Smaller results, and any result
  that overlaps an input or another result, are copied out.
* **Freed result buffers are recycled**: the CPU devices use IREE's caching allocator (bounded by
  ``POOL_BYTES``), so the buffer of a result the caller has dropped serves the next call of the same
  size without new page faults. First-touch faults on fresh 4 KiB pages cost more than the kernel on a
  VM (~80 ms for 64 MiB here, against ~7 ms for ``x.copy()``, whose NumPy memory gets huge pages).
  ``trim()`` gives the cached memory back.
* **``outs=``**: results can be written into caller-provided arrays. A module that declares output
  storage (an ``!hal.buffer {iree.abi.output = K : index}`` argument) writes into it directly (the
  arrays must be aligned to ``import_alignment``, see ``empty_aligned``); otherwise the result is copied in.
* **Caller storage** (``pooled_empty``): the Python path's llvm-cpu programs write their data-shaped
  result into a buffer passed in (``Target.caller_storage``); a large one comes from the caching pool of
  the local-sync device, so it is paged in after the first call, and is handed out as a view that gives
  it back to the pool when dropped.
* **Driver by size**: a module built for ``local-sync`` (one thread, lowest latency) runs on
  ``local-task`` (IREE's worker pool, one worker per core) when its inputs total at least
  ``task_threshold()`` bytes, and, unless it takes caller storage, less than ``task_max_bytes()`` (see
  TASK_THRESHOLD_BYTES for why). Both load the same vmfb and both run dispatches with FTZ/DAZ, so the
  bits are the same.

Other drivers (Vulkan, CUDA) keep IREE's ``FunctionInvoker`` and copy results out of device memory.
"""
from __future__ import annotations

import atexit
import json
import re
import threading
import weakref
from typing import Sequence

import numpy as np

from . import cpu_devices, device_sessions
from .cpu_devices import (CPU_DRIVERS, POOL_BYTES, TASK_MAX_BYTES, TASK_THRESHOLD_BYTES, config_for,  # noqa: F401
                          device_for, pooled_empty, result_storage, task_max_bytes, task_threshold, trim)
from .host_memory import (_ETYPES, DEFAULT_IMPORT_ALIGNMENT, RESOURCE_ALIGNMENT_16, ZERO_COPY_MIN_BYTES, Constant,
                          _aligned_empty, _as_host_array, _check_out, _constants, _copy_into, _dtype_of, _element_type,
                          _result, _view_of)
from .host_memory import _Keep, empty_aligned  # noqa: F401  (re-exported: runtime.empty_aligned is public)

_lock = threading.RLock()
_functions: dict[tuple[str, str, str], "LoadedFunction"] = {}   # (driver, module key, function name)


def _require_no_conflict(driver: str):
    """Refuse, before any dispatch, a driver that would crash or hang in this process (Vulkan beside
    TensorFlow's LLVM: targets/conflicts.py). A few dlsym lookups where the driver is isolated."""
    from .targets import conflicts
    why = conflicts.check(driver)
    if why:
        from .errors import TargetUnavailableError
        raise TargetUnavailableError(f"driver {driver!r} cannot run in this process: {why}", arg="target")


def import_alignment(backend: str, flags: Sequence[str]) -> int:
    """The buffer alignment that the dispatches of a module compiled with ``flags`` actually need.

    llvm-cpu for ``x86-64-v2`` is SSE code: no SSE instruction needs more than 16 bytes (``movaps`` and
    folded memory operands need exactly 16), and NumPy's allocator returns 16-byte aligned memory, so
    ordinary arrays are imported as they are, unless features are added (tf-xla's +fma implies AVX). vmvx
    reads elements one at a time. Code compiled with ``RESOURCE_ALIGNMENT_16`` (the ``cpu`` target at
    x86-64-v3) assumes 16 bytes. Anything else (AVX: 32, AVX-512: 64) gets IREE's contract of 64 bytes;
    arrays short of it are copied to aligned memory.
    """
    if backend == "vmvx" or (backend == "llvm-cpu" and RESOURCE_ALIGNMENT_16 in flags):
        return 16
    if backend == "llvm-cpu":
        cpu = [f.split("=", 1)[1] for f in flags if f.startswith("--iree-llvmcpu-target-cpu=")]
        features = [f for f in flags if f.startswith("--iree-llvmcpu-target-cpu-features=")]
        width = [int(f.split("=", 1)[1]) for f in flags if f.startswith("--iree-llvmcpu-target-vector-width-in-bytes=")]
        # +fma implies AVX: with vectors wider than 16 bytes its aligned 32-byte loads segfaulted on 16-byte
        # imports; the last width flag is the one iree-compile keeps
        if cpu and cpu[-1] == "x86-64-v2" and (not features or (width and width[-1] <= 16)):
            return 16
    return DEFAULT_IMPORT_ALIGNMENT


_MT = _USAGE = _BV = _VL = None


def _init_constants():
    import iree.runtime as rt
    global _MT, _USAGE, _BV, _VL
    _BV = rt.HalBufferView
    _VL = rt.VmVariantList
    _MT = int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE)
    _USAGE = int(rt.BufferUsage.DEFAULT)


# -- loaded functions ------------------------------------------------------------------------------

class _Variant:
    """One artifact loaded on one CPU driver: the context, the function and the device."""
    __slots__ = ("driver", "device", "allocator", "context", "vm_function", "invoke")

    def __init__(self, driver: str, vmfb: bytes, function: str):
        import iree.runtime as rt
        cfg = config_for(driver)
        module = rt.VmModule.copy_buffer(cfg.vm_instance, vmfb)
        ctx = rt.SystemContext(vm_modules=[module], config=cfg)
        self.driver = driver
        self.device = cfg.device
        self.allocator = cfg.device.allocator
        self.context = ctx.vm_context
        self.vm_function = ctx.modules.module[function].vm_function
        self.invoke = self.context.invoke


class LoadedFunction:
    """A module function: ``f(args)`` -> list of NumPy results; ``f(args, outs)`` writes into ``outs``.

    ``args`` are NumPy arrays (or scalars) and ``Constant``s, in the function's argument order.
    """

    def __init__(self, driver: str, key: str, vmfb: bytes, function: str,
                 import_alignment: int = DEFAULT_IMPORT_ALIGNMENT):
        self.driver, self.key, self.function_name = driver, key, function
        self.import_alignment = max(int(import_alignment), 16)
        self._vmfb = vmfb
        self.cpu = driver in CPU_DRIVERS
        self._variants: dict[str, _Variant] = {}
        self.fn = None
        if self.cpu:
            decl_fn = self._variant(driver).vm_function
        else:
            _require_no_conflict(driver)
            with device_sessions.use(driver) as session:
                decl_fn = session.function(key, vmfb, function).vm_function
        self.n_results, self.storage_args = _abi_of(decl_fn)

    def _variant(self, driver: str) -> _Variant:
        v = self._variants.get(driver)
        if v is None:
            with _lock:
                v = self._variants.get(driver)
                if v is None:
                    v = self._variants[driver] = _Variant(driver, self._vmfb, self.function_name)
        return v

    def pick_driver(self, args: Sequence) -> str:
        """local-task for the large inputs of a local-sync module (see task_threshold())."""
        if self.driver != "local-sync":
            return self.driver
        limit = task_threshold()
        if limit <= 0:
            return self.driver
        total = 0
        for a in args:
            if type(a) is not Constant:
                total += getattr(a, "nbytes", 0)
        if total < limit or (total >= task_max_bytes() and not self.storage_args):
            return self.driver
        return "local-task"

    def call_small(self, arrays: Sequence[np.ndarray], constants: Sequence[Constant],
                   storage: Sequence[np.ndarray] = ()) -> list[np.ndarray] | None:
        """``self(arrays + constants, outs)`` for a small call, or None where it does not apply (the caller
        then takes ``__call__``). Small: a CPU driver, every array a C-contiguous, writable, native,
        16-byte aligned ndarray under ZERO_COPY_MIN_BYTES and, on local-sync, the inputs under the task
        threshold. ``storage``: one such array per ``storage_args``, which those results are written into
        and returned as. The per-call work is what each call needs: import the arrays, push the constants'
        references, invoke, copy the other results out (under ZERO_COPY_MIN_BYTES they are always copied)."""
        if not self.cpu or len(storage) != len(self.storage_args):
            return None
        total = 0
        align = self.import_alignment
        for k, a in enumerate((*arrays, *storage)):
            if type(a) is not np.ndarray:
                return None
            fl = a.flags
            if not (fl.c_contiguous and fl.writeable and fl.aligned) or a.dtype.kind == "b" or not a.dtype.isnative:
                return None
            if fl.owndata:
                if align > 16 and a.__array_interface__["data"][0] % align:
                    return None
            else:  # a reshape of a whole array that owns its data starts where it starts; else look
                b = a.base
                if not (type(b) is np.ndarray and b.flags.owndata and b.nbytes == a.nbytes and align <= 16) \
                        and a.__array_interface__["data"][0] % align:
                    return None
            if k < len(arrays):
                total += a.nbytes
        if total >= ZERO_COPY_MIN_BYTES or (self.driver == "local-sync" and 0 < task_threshold() <= total):
            return None
        v = self._variants.get(self.driver) or self._variant(self.driver)
        lst = _VL(len(arrays) + len(constants) + len(storage))
        import_host = v.allocator.import_host_allocation
        for a in arrays:
            buf = import_host(a, memory_type=_MT, allowed_usage=_USAGE)
            lst.push_ref(_BV(buf, a.shape, _ETYPES.get(a.dtype.str) or _element_type(a.dtype)).ref)
        for c in constants:
            lst.push_ref(c.ref(v))
        for a in storage:
            lst.push_ref(import_host(a, memory_type=_MT, allowed_usage=_USAGE).ref)
        rets = _VL(self.n_results)
        v.invoke(v.vm_function, lst, rets)
        out = []
        for i in range(len(rets)):
            if storage and i in self.storage_args:
                out.append(storage[self.storage_args.index(i)])
                continue
            bv = rets.get_as_object(i, _BV)
            shape = tuple(bv.shape)
            count = 1
            for d in shape:
                count *= d
            dtype = _dtype_of(bv.element_type)
            out.append(np.frombuffer(bv.map(), dtype, count=count).reshape(shape).copy() if count
                       else np.empty(shape, dtype))
        return out

    def __call__(self, args: Sequence, outs: Sequence[np.ndarray | None] | None = None,
                 driver: str | None = None) -> list[np.ndarray]:
        if not self.cpu:
            _require_no_conflict(self.driver)
            if self.storage_args:
                raise RuntimeError(f"{self.function_name}: output storage is only supported on CPU drivers here")
            plain = [a.array if type(a) is Constant else a for a in args]
            with device_sessions.use(self.driver) as session:  # copied out before the session may close
                out = session.function(self.key, self._vmfb, self.function_name)(*plain)
                res = out if isinstance(out, (tuple, list)) else (out,)
                return _copy_into([to_numpy(o) for o in res], outs)
        import iree.runtime as rt
        v = self._variant(driver or self.pick_driver(args))
        arg_list, keep, _ = self._bind_all(v, args, outs)
        ret_list = rt.VmVariantList(self.n_results)
        v.invoke(v.vm_function, arg_list, ret_list)
        results = []
        storage = self.storage_args
        spans: list = []
        for i in range(len(ret_list)):
            want = outs[i] if outs is not None and i < len(outs) else None
            if i in storage:
                results.append(want)
                continue
            results.append(_result(ret_list.get_as_object(i, _BV), spans, keep, want))
        del keep
        return results

    def prepare(self, args: Sequence, outs: Sequence[np.ndarray | None] | None = None,
                driver: str | None = None):
        """A zero-argument callable that runs the function on ``args`` bound once: the inputs stay
        device-resident (imported on CPU drivers, uploaded elsewhere) and the results stay on the device
        (returned unread). For timing the kernel without the host-side marshalling."""
        import iree.runtime as rt
        if not self.cpu:
            _require_no_conflict(self.driver)
            unpin = device_sessions.pin(self.driver)  # open while the callable lives
            session = unpin.session
            dargs = [rt.asdevicearray(session.device, _as_host_array(a.array if type(a) is Constant else a))
                     for a in args]
            fn = session.function(self.key, self._vmfb, self.function_name)

            def go_device():
                return fn(*dargs)
            go_device.driver = self.driver
            weakref.finalize(go_device, unpin)
            return go_device
        driver = driver or self.pick_driver(args)
        v = self._variant(driver)
        arg_list, keep, _ = self._bind_all(v, args, outs)
        n, invoke, vm_function = self.n_results, v.invoke, v.vm_function

        def go():
            rets = rt.VmVariantList(n)
            invoke(vm_function, arg_list, rets)
            return rets
        go.driver = driver
        go.keep = keep
        return go

    def _bind_all(self, v: _Variant, args: Sequence, outs):
        """The argument list: each input bound (constant, import or aligned copy), then output storage.
        Also the arrays bound (they must outlive the call; their address ranges tell whether a result
        overlaps an input)."""
        import iree.runtime as rt
        arg_list = rt.VmVariantList(len(args) + len(self.storage_args))
        keep: list = []
        align = self.import_alignment
        import_host = v.allocator.import_host_allocation
        for a in args:
            if type(a) is Constant:
                arg_list.push_ref(a.ref(v))
                continue
            a = _as_host_array(a)
            flags = a.flags
            # NumPy allocates its own data 16-byte aligned; views (slices, frombuffer) may be anything.
            if not (flags.owndata and align <= 16) and a.__array_interface__["data"][0] % align:
                c = _aligned_empty(a.nbytes, align).view(a.dtype).reshape(a.shape)
                np.copyto(c, a)
                a = c
            elif not flags.writeable:
                if a.nbytes < ZERO_COPY_MIN_BYTES:
                    a = a.copy()
                else:  # bound read-only: the programs never write their inputs
                    a = _view_of(a.__array_interface__["data"][0], a.shape, a.dtype, (a,))
            keep.append(a)
            buf = import_host(a, memory_type=_MT, allowed_usage=_USAGE)
            arg_list.push_ref(rt.HalBufferView(buf, a.shape, _element_type(a.dtype)).ref)
        for i in self.storage_args:
            o = outs[i] if outs is not None and i < len(outs) else None
            if o is None:
                raise ValueError(f"{self.function_name}: result {i} is written into caller storage; pass outs[{i}]")
            _check_out(o, align, f"outs[{i}]")
            keep.append(o)  # a prepared call writes into it as long as it lives
            arg_list.push_ref(import_host(o, memory_type=_MT, allowed_usage=_USAGE).ref)
        return arg_list, keep, None


_DECL_STORAGE = re.compile(r"%input\d+: !hal\.buffer \{iree\.abi\.output = (\d+) : index\}")


def _abi_of(vm_function) -> tuple[int, tuple[int, ...]]:
    """(number of results, result indices written into caller storage) from the function's reflection."""
    refl = vm_function.reflection
    n_results = 1
    abi = refl.get("iree.abi")
    if abi:
        try:
            n_results = max(len(json.loads(abi).get("r", [])), 1)
        except (ValueError, TypeError, AttributeError):
            pass
    decl = refl.get("iree.abi.declaration", "")
    storage = tuple(int(m.group(1)) for m in _DECL_STORAGE.finditer(decl))
    return n_results, storage


def to_numpy(arr) -> np.ndarray:
    """A result of a non-CPU driver to host memory. Vulkan artifacts are built with mappable results,
    so this is one map and one copy; other results (CUDA's device-local ones) go through a staging buffer."""
    if arr._is_mappable():
        return np.array(arr.to_host(), copy=True)
    return staged_copy(arr._device, arr._buffer_view)


def staged_copy(device, bv) -> np.ndarray:
    """``bv`` copied into a host staging buffer that IREE allocates, then into NumPy. Not IREE's own
    ``to_host``: for an importing allocator (CUDA) it registers a fresh ``np.empty`` with the driver, and a
    small one can share a page with memory registered before: on an H200 one golden case (four 4-byte
    results) failed with CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED."""
    import iree.runtime as rt
    source = bv.get_buffer()
    host = device.allocator.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=source.byte_length())
    sem = device.create_semaphore(0)
    device.queue_copy(source, host, wait_semaphores=rt.HalFence.create_at(sem, 0),
                      signal_semaphores=rt.HalFence.create_at(sem, 1))
    rt.HalFence.create_at(sem, 1).wait()
    return np.array(host.map().asarray(tuple(bv.shape), _dtype_of(bv.element_type)), copy=True)


def load(driver: str, key: str, vmfb: bytes, function: str,
         import_alignment: int = DEFAULT_IMPORT_ALIGNMENT) -> LoadedFunction:
    """The function ``function`` of the module ``vmfb`` (cached by ``key``) on ``driver``.

    ``import_alignment``: the alignment the module's dispatches need of imported arrays (see
    ``import_alignment()``); the default is IREE's contract, right for any module.
    """
    if _MT is None:
        _init_constants()
    f = _functions.get((driver, key, function))
    if f is not None:
        return f
    f = LoadedFunction(driver, key, vmfb, function, import_alignment)
    with _lock:
        return _functions.setdefault((driver, key, function), f)


def _release_all():
    """Drop the cached IREE objects before the interpreter tears the bindings down (at exit)."""
    from .targets import conflicts
    with _lock:
        for driver, session in list(device_sessions._sessions.items()):
            if conflicts.check(driver):
                # A Vulkan driver bound to TensorFlow's LLVM never returns from vkDestroyDevice: keep it alive.
                import ctypes
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(session))
        device_sessions.close(force=True)
        _functions.clear()
        cpu_devices.release()
        for c in list(_constants):
            c._refs.clear()
    import gc
    gc.collect()


atexit.register(_release_all)
