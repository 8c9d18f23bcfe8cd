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
        """Checks that need only the config (rank, axis, attribute ranges), before any compile."""
        from .validation import _Checker
        import numpy as np
        from .validation import _CHECKS
        spec, c = self.spec, _Checker(self.spec)
        a = self.attr
        if spec.has_axis and a["axis"] >= 0 and a["axis"] >= self.rank:
            c.fail(f"axis={a['axis']} is out of range for rank {self.rank}; allowed -1 or 0..{self.rank - 1}", "axis")
        if spec.has_axis and a["axis"] < -1:
            c.fail(f"axis={a['axis']} is not allowed; allowed: -1 (per-tensor) or 0..{self.rank - 1}", "axis",
                   tf=f"Axis must be at least -1. Found {a['axis']}")
        if spec.per_channel_last and self.rank == 0:
            c.fail("inputs must have rank >= 1 (the channel is the last dimension)", "shape",
                   tf="Shape must be at least rank 1 but is rank 0")
        # Run the attribute checks of the family on a tiny stand-in call.
        if "num_bits" in a:
            if spec.family in (R.QDQ,):
                limit = 61 if a["signed_input"] else 62
                if not 0 < a["num_bits"] <= limit:
                    c.fail(f"num_bits={a['num_bits']} is out of range; allowed 1..{limit} when "
                           f"signed_input={a['signed_input']}", "num_bits",
                           tf=f"num_bits is out of range: {a['num_bits']} with signed_input_ {int(a['signed_input'])}")
            elif not 2 <= a["num_bits"] <= 16:
                c.fail(f"num_bits={a['num_bits']} is out of range; allowed 2..16", "num_bits",
                       tf="num_bits must be between 2 and 16, inclusive")
        if spec.range_from == "attr" and spec.family in (R.FAKE_QUANT, R.FAKE_QUANT_GRAD):
            if not a["min"] < a["max"]:
                c.fail(f"min={a['min']:g} must be smaller than max={a['max']:g}", "min",
                       tf=f"min has to be smaller than max, was: {a['min']:g} >= {a['max']:g}")
        del np, _CHECKS

    def key(self) -> dict:
        """A JSON-able identity (what the cache hashes, with the rendered text and flags)."""
        return {"op": self.op, "attrs": dict(self.attrs), "dtype": self.dtype,
                "shape": format_shape(self.shape), "target": self.target, "params": self.params}

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.attrs if self.params == "baked" or k in self.structural]
        return f"{self.op}[{', '.join(parts)}] {self.dtype} {format_shape(self.shape)} @{self.target}"

    def __str__(self):
        return json.dumps(self.key(), sort_keys=True)
