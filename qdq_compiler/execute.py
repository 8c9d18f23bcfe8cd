"""Run a validated ``Call`` on a compiled target.

The Python path canonicalises shapes to keep the number of artifacts small: a per-tensor op is run
on the flattened data (one rank-1 artifact for every shape), a per-axis op on the [outer, C, inner]
view (rank 3, axis 1), and the last-axis PerChannel ops on [batch, d]. NumPy reshapes of contiguous
arrays are free, and the arithmetic is element-wise within a channel, so the bits are unchanged.
Numeric attributes travel as trailing 0-d arguments (see config.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import compile as _compile
from . import emit, runtime, targets
from .config import OpConfig
from .validation import Call


@dataclass(frozen=True)
class Artifact:
    """One compiled configuration for one target."""
    config: OpConfig
    mlir: str
    flags: tuple[str, ...]
    vmfb: bytes
    path: object
    key: str

    def function(self):
        t = targets.get(self.config.target)
        return runtime.load(t.driver, self.key, self.vmfb, self.config.op)


_artifacts: dict[OpConfig, Artifact] = {}


def artifact_for(cfg: OpConfig, extra_flags: tuple[str, ...] = ()) -> Artifact:
    """Render, compile (through the cache) and remember the artifact of ``cfg``."""
    art = _artifacts.get(cfg) if not extra_flags else None
    if art is not None:
        return art
    t = targets.get(cfg.target)
    mlir = emit.render(cfg)
    flags = t.compile_flags + tuple(extra_flags)
    path, data = _compile.cached_compile(mlir, flags, what=cfg.describe(), info=cfg.key())
    art = Artifact(cfg, mlir, flags, data, path, _compile.cache_key(mlir, flags))
    if not extra_flags:
        _artifacts[cfg] = art
    return art


def _shape_plan(call: Call):
    """(canonical shape string, the structural attrs to use, a function from array name to its view)."""
    x = call.data
    axis = call.per_channel_axis()
    spec = call.spec
    if axis is None:
        return "?", {}, lambda a: a.reshape(-1)
    if spec.per_channel_last:
        d = x.shape[-1]
        b = int(np.prod(x.shape[:-1], dtype=np.int64))
        return "?x?", {}, lambda a: a.reshape(b, d)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    c = x.shape[axis]
    return "?x?x?", {"axis": 1}, lambda a: a.reshape(outer, c, inner)


def config_for_call(call: Call, target: str) -> OpConfig:
    shape, override, _ = _shape_plan(call)
    return _runtime_config(call, target, shape, override)


def _runtime_config(call: Call, target: str, shape: str, override: dict) -> OpConfig:
    structural = {k: v for k, v in call.attrs.items()
                  if k in (OpConfig.make(call.op).structural)}
    structural.update(override)
    return OpConfig.make(call.op, structural, call.dtype.name, shape, target, "runtime")


def run(call: Call, target: str = "cpu", static: bool = False) -> tuple[np.ndarray, ...]:
    """Compute ``call`` on ``target`` ("oracle" = the NumPy reference); outputs as the oracle returns them.

    ``static=True`` compiles for the exact (canonical) shape instead of dynamic dims.
    """
    if target == "oracle":
        from .oracle import compute
        return compute(call)
    t = targets.get(target)
    t.require_available()
    if call.data.size == 0 and not t.limits.get("empty_buffers", True):
        # Vulkan rejects zero-sized bindings. An empty input has no element to compute: its outputs are
        # empty and its range gradients are sums over nothing, so the host answers without a dispatch.
        from .oracle import compute
        return compute(call)
    shape, override, view = _shape_plan(call)
    static = static or _needs_static_reduction(call, t, view)
    if static:
        shape = "x".join(str(d) for d in view(call.data).shape) or "scalar"
    cfg = _runtime_config(call, target, shape, override)
    art = artifact_for(cfg)
    spec = call.spec
    args = []
    for inp in spec.inputs:
        a = call.arrays[inp.name]
        args.append(view(a) if inp.role in ("data", "grad") else a)
    for name, etype, value in emit.param_values(spec, dict(call.attrs), call.dtype.name):
        args.append(np.asarray(value))
    outs = art.function()(args)
    x = call.data
    result = [outs[0].reshape(x.shape)]
    if len(outs) > 1:
        mn = call.arrays[spec.input("min").name]
        result += [o.reshape(mn.shape) for o in outs[1:]]
    return tuple(result)


def _needs_static_reduction(call: Call, t, view) -> bool:
    """A reduction longer than the target's dynamic limit (lavapipe's loop cap): compile the exact shape,
    whose reductions are split into bounded stages (macros.mlir.j2, reduce_two_stage)."""
    limit = t.limits.get("dynamic_reduce_max")
    if not limit:
        return False
    spec = call.spec
    reduces = (spec.family == "qdq" and not call.attrs.get("range_given", True)) or bool(spec.sum_outputs)
    if not reduces:
        return False
    data = view(call.data)
    axis = call.per_channel_axis()
    channels = data.shape[{None: None}.get(axis, 1)] if axis is not None and data.ndim > 1 else 1
    if spec.per_channel_last:
        channels = data.shape[-1]
    return data.size // max(channels, 1) > limit


def run_config(call: Call, target: str, static: bool = False) -> tuple[np.ndarray, ...]:
    return run(call, target, static)


def config_for_entry(entry, target: str, shape: tuple[int, ...] | None = None) -> OpConfig:
    """The artifact a validation-matrix entry runs: dynamic dims, or ``shape`` when static."""
    spec = entry.spec if hasattr(entry, "spec") else None
    from . import registry as R
    spec = R.get(entry.op)
    attrs = dict(entry.attrs)
    if spec.per_channel_last:
        rank = 2
    elif attrs.get("axis", -1) >= 0:
        rank = 3
    else:
        rank = 1
    dims = "x".join(["?"] * rank) if shape is None else "x".join(map(str, shape))
    return OpConfig.make(entry.op, attrs, entry.dtype, dims, target, "runtime")
