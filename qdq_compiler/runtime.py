"""Load compiled modules once per process and call them with NumPy arrays.

One ``iree.runtime.Config`` (VM instance + HAL device) per driver, one context per artifact, kept
for the life of the process, so repeated calls pay only the invocation.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np

_lock = threading.Lock()
_configs: dict[str, object] = {}
_functions: dict[tuple[str, str], object] = {}


def config_for(driver: str):
    import iree.runtime as rt
    with _lock:
        cfg = _configs.get(driver)
        if cfg is None:
            cfg = _configs[driver] = rt.Config(device=rt.get_device(driver))
        return cfg


@dataclass
class LoadedFunction:
    """A bound module function plus how to read its results back to the host."""
    fn: object
    driver: str

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = self.fn(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [to_numpy(o) for o in outs]


def to_numpy(arr) -> np.ndarray:
    """Result to host memory. Vulkan artifacts are built with mappable results, so this is one map."""
    return np.array(arr.to_host(), copy=True)


def load(driver: str, key: str, vmfb: bytes, function: str) -> LoadedFunction:
    """The function ``function`` of the module ``vmfb`` (cached by ``key``) on ``driver``."""
    import iree.runtime as rt
    with _lock:
        f = _functions.get((driver, key))
    if f is not None:
        return f
    cfg = config_for(driver)
    module = rt.VmModule.copy_buffer(cfg.vm_instance, vmfb)
    ctx = rt.SystemContext(vm_modules=[module], config=cfg)
    f = LoadedFunction(ctx.modules.module[function], driver)
    with _lock:
        _functions[(driver, key)] = f
    return f
