"""``OpConfig``: what one compiled artifact is (op, attributes, dtype, shape, target).

Attributes that change the program's structure (range source, rounding, axis, rank) are always part
of the config. Numeric attributes (num_bits, narrow_range, signed_input, Args' min/max) are either
baked in as constants (``params="baked"``, what bundles ship) or passed at run time as trailing 0-d
arguments (``params="runtime"``, the default of the Python path: one artifact serves every num_bits,
which costs nothing on a memory-bound op and saves a compile per attribute value).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import registry as R
from .errors import QDQError

# Attributes that are baked even in runtime-parameter mode.
STRUCTURAL = {"range_given", "round_mode", "axis"}
# V3 computes its integer range on device from the num_bits tensor, so signedness/narrowness are structural.
STRUCTURAL_V3 = STRUCTURAL | {"signed_input", "narrow_range"}
PARAM_MODES = ("runtime", "baked")


def parse_shape(text: str | tuple | list) -> tuple[int | None, ...]:
    """'?x8' -> (None, 8); '' or 'scalar' -> (); a tuple/list passes through (None or '?' = dynamic)."""
    if isinstance(text, (tuple, list)):
        dims = list(text)
    else:
        t = str(text).strip()
        if t in ("", "scalar", "()"):
            return ()
        dims = t.split("x")
    out = []
    for d in dims:
        if d is None or d == "?" or d == -1:
            out.append(None)
            continue
        try:
            v = int(d)
        except (TypeError, ValueError):
            raise QDQError(f"shape {text!r}: dimension {d!r} must be a non-negative integer or '?'",
                           arg="shape") from None
        if v < 0:
            raise QDQError(f"shape {text!r}: dimension {v} must be >= 0 (or '?' for dynamic)", arg="shape")
        out.append(v)
    return tuple(out)


def format_shape(shape) -> str:
    return "x".join("?" if d is None else str(d) for d in shape) or "scalar"


@dataclass(frozen=True)
class OpConfig:
    """A frozen, hashable description of one compiled artifact."""
    op: str
    attrs: tuple[tuple[str, Any], ...]
    dtype: str = "float32"
    shape: tuple[int | None, ...] = (None,)
    target: str = "cpu"
    params: str = "runtime"
    _attr_dict: Mapping[str, Any] = field(default=None, compare=False, hash=False, repr=False)

    @staticmethod
    def make(op: str, attrs: Mapping[str, Any] | None = None, dtype: str = "float32", shape="?",
             target: str = "cpu", params: str = "runtime") -> "OpConfig":
        """Validate and normalise: every attribute filled in (defaults), unknown ones rejected."""
        spec = R.get(op)
        attrs = dict(attrs or {})
        from .validation import _Checker, _check_attr
        c = _Checker(spec)
        unknown = sorted(set(attrs) - set(spec.attr_map))
        if unknown:
            c.fail(f"unknown attribute {unknown[0]!r}; attributes of {op}: {', '.join(spec.attr_map) or 'none'}",
                   unknown[0])
        full = {a.name: _check_attr(c, a, attrs.get(a.name, a.default)) for a in spec.attrs}
        if dtype not in spec.dtypes:
            c.fail(f"dtype {dtype!r} is not supported; allowed: {', '.join(spec.dtypes)}", "dtype")
        from . import targets as _targets
        _targets.get(target)  # an unknown target is a QDQError listing the known ones
        if params not in PARAM_MODES:
            c.fail(f"params={params!r}; allowed: {', '.join(PARAM_MODES)}", "params")
        shape = parse_shape(shape)
        cfg = OpConfig(op, tuple(sorted(full.items())), dtype, shape, target, params)
        cfg.check_static()
        return cfg

    @property
    def spec(self) -> R.OpSpec:
        return R.get(self.op)

    @property
    def attr(self) -> dict[str, Any]:
        return dict(self.attrs)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def structural(self) -> set[str]:
        return STRUCTURAL_V3 if self.spec.num_bits_input else STRUCTURAL

    def check_static(self):
        """Validate the config with the same checks as a call (validation.bind), on stand-in arrays of
        its shape (a dynamic dim counts as 1): attribute ranges, axis against rank, PerChannel rank."""
        import numpy as np
        from .validation import bind
        spec, a = self.spec, self.attr
        dims = tuple(1 if d is None else d for d in self.shape)
        if spec.per_channel_last and dims:
            axis = len(dims) - 1
        elif spec.has_axis and 0 <= a["axis"] < len(dims):
            axis = a["axis"]
        else:
            axis = None
        pshape = () if axis is None else (dims[axis],)
        dt = np.dtype(self.dtype)
        kwargs = {}
        for inp in spec.inputs:
            if inp.role in ("data", "grad"):
                kwargs[inp.name] = np.zeros(dims, dt)
            elif inp.role == "num_bits":
                kwargs[inp.name] = np.int32(8)
            else:
                kwargs[inp.name] = np.full(pshape, -1.0 if inp.role == "min" else 1.0, dt)
        bind(self.op, {**kwargs, **{k: v for k, v in a.items()}})

    def key(self) -> dict:
        """A JSON-able identity (what the cache hashes, with the rendered text and flags)."""
        return {"op": self.op, "attrs": dict(self.attrs), "dtype": self.dtype,
                "shape": format_shape(self.shape), "target": self.target, "params": self.params}

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.attrs if self.params == "baked" or k in self.structural]
        return f"{self.op}[{', '.join(parts)}] {self.dtype} {format_shape(self.shape)} @{self.target}"

    def __str__(self):
        return json.dumps(self.key(), sort_keys=True)
