"""Non-CPU devices (Vulkan, CUDA) in sessions that close when idle.

Why: an IREE 3.13 Vulkan device on Mesa's lavapipe keeps two threads busy at 100% for as long as it
exists, idle or not (measured: 2 of 2 cores, 200 ticks/s per thread, from ``create_default_device`` until
the device is destroyed; IREE's queue threads wait on several semaphores at once and lavapipe's syncs have
no wait-any, so Mesa's ``vk_sync`` falls back to a polling loop). One Vulkan call would otherwise burn the
machine until the process exits, and slow everything else in it (the test suite ran ~2x slower).

So the device, its VM config and the modules loaded on it form a *session*: calls open it (or reuse the
open one) and a watchdog thread closes it after ``idle_s`` seconds without a call (``Limits.idle_device_s``
of the targets on that driver; ``QDQ_DEVICE_IDLE_S`` overrides: seconds, or ``off`` to keep devices for
the life of the process). The next call opens a new session and loads its module again from the artifact
bytes (a device and a pipeline JIT: tens of ms). Results are copied to NumPy before a call returns, so
nothing handed out refers to a closed session. A driver without an idle limit keeps its session forever.
"""
from __future__ import annotations

import contextlib
import gc
import os
import threading
import time

_lock = threading.RLock()
_sessions: dict[str, "_Session"] = {}
_busy: dict[str, int] = {}
_last_use: dict[str, float] = {}
_watchdog: threading.Thread | None = None
_wake = threading.Condition(_lock)
_kept: set[str] = set()  # drivers whose device must never be destroyed in this process (_safe_to_close)
opened = {}  # driver -> sessions opened so far (tests and benchmarks read it)


class _Session:
    """One device of a driver, its VM config and the functions loaded on it."""

    def __init__(self, driver: str):
        import iree.runtime as rt
        self.driver = driver
        self.device = rt.get_driver(driver).create_default_device()
        self.config = rt.Config(device=self.device)
        self.functions: dict[tuple[str, str], object] = {}   # (module key, function name) -> function

    def function(self, key: str, vmfb: bytes, name: str):
        """The IREE function ``name`` of the module ``vmfb`` (cached by ``key``) on this session's device."""
        fn = self.functions.get((key, name))
        if fn is None:
            import iree.runtime as rt
            with _lock:
                fn = self.functions.get((key, name))
                if fn is None:
                    module = rt.VmModule.copy_buffer(self.config.vm_instance, vmfb)
                    ctx = rt.SystemContext(vm_modules=[module], config=self.config)
                    fn = self.functions[(key, name)] = ctx.modules.module[name]
        return fn


def idle_seconds(driver: str) -> float | None:
    """Seconds of idleness after which ``driver``'s session closes (None: never)."""
    env = os.environ.get("QDQ_DEVICE_IDLE_S", "").strip().lower()
    if env:
        if env in ("off", "never", "none"):
            return None
        return max(float(env), 0.0)
    from .targets import idle_device_seconds
    return idle_device_seconds(driver)


@contextlib.contextmanager
def use(driver: str):
    """The open session of ``driver`` (opened if needed), kept open while the ``with`` block runs."""
    with _lock:
        s = _sessions.get(driver)
        if s is None:
            s = _sessions[driver] = _Session(driver)
            opened[driver] = opened.get(driver, 0) + 1
        _busy[driver] = _busy.get(driver, 0) + 1
    try:
        yield s
    except Exception:
        # A device that failed a call can stay failed: on CUDA (H200, driver 580) every call after one
        # CUDA_ERROR_INVALID_VALUE failed ("Failed to allocate buffer copy"). The next call opens a new device.
        with _lock:
            if _sessions.get(driver) is s:
                del _sessions[driver]
        raise
    finally:
        with _lock:
            _busy[driver] -= 1
            _last_use[driver] = time.monotonic()
            if idle_seconds(driver) is not None:
                _start_watchdog()


def pin(driver: str):
    """Open ``driver``'s session and keep it open until the returned callable is called (benchmarks keep
    device-resident inputs across calls)."""
    cm = use(driver)
    session = cm.__enter__()
    done = []

    def unpin():
        if not done:
            done.append(True)
            cm.__exit__(None, None, None)
    unpin.session = session
    return unpin


def close(driver: str | None = None, force: bool = False) -> int:
    """Close the idle session of ``driver`` (all drivers if None); the number closed. A session in use is
    kept unless ``force`` (at exit)."""
    closed = []
    with _lock:
        for d in [driver] if driver else list(_sessions):
            if d in _sessions and (force or not _busy.get(d)):
                closed.append(_sessions.pop(d))
    n = len(closed)
    if n:
        del closed[:]
        gc.collect()  # the device goes once the last module, config and function referring to it go
    return n


def is_open(driver: str) -> bool:
    return driver in _sessions


def _start_watchdog():
    global _watchdog
    if _watchdog is None or not _watchdog.is_alive():
        _watchdog = threading.Thread(target=_watch, name="qdq-device-idle", daemon=True)
        _watchdog.start()
    else:
        _wake.notify_all()


def _watch():
    """Close each session that has been idle for its driver's limit; sleep until the next deadline."""
    while True:
        with _lock:
            now, wait, due = time.monotonic(), None, []
            for d in list(_sessions):
                limit = idle_seconds(d)
                if limit is None or _busy.get(d) or d in _kept:
                    continue
                left = _last_use.get(d, now) + limit - now
                if left <= 0:
                    due.append(d)
                else:
                    wait = left if wait is None else min(wait, left)
            if not due:
                if wait is None and not _sessions:
                    return  # nothing open: the next call starts a new watchdog
                _wake.wait(timeout=wait if wait is not None else 60.0)
                continue
        for d in due:
            if _safe_to_close(d):
                close(d)


def _safe_to_close(driver: str) -> bool:
    """A Vulkan driver bound to TensorFlow's LLVM never returns from vkDestroyDevice: such a device is
    kept (its target refuses every call anyway, see targets/conflicts.py)."""
    from .targets import conflicts
    if conflicts.check(driver):
        with _lock:
            _kept.add(driver)
        return False
    return True
