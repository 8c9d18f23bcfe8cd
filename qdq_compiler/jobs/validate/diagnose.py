"""What a failing cell says (issue 29.2): the first differing element of the first failing call, with its
input, both answers as values and bits, how many elements differ, the call's attributes, and a ``qdqc run``
command that reruns it on the saved inputs. A bare "max 4611686018427387904 ulp" told a user nothing."""
from __future__ import annotations

import re

import numpy as np

from ... import compile as _compile
from ... import dtypes, ops
from ...numerics import bits
from ...outputs import save_arrays
from .matrix import MatrixEntry

NAN_ONE_SIDE = 2 ** 62   # numerics.ulp_distance's answer where one side is NaN and the other is not


def _value(v) -> str:
    """A scalar as its value and its bit pattern: 0.5 (0x3f000000)."""
    a = np.asarray(v)
    return f"{float(a)!r} (0x{int(bits(a)):0{a.dtype.itemsize * 2}x})"


def first_difference(spec: ops.OpSpec, call, name: str, got: np.ndarray, want: np.ndarray) -> dict:
    """The first element of output ``name`` whose bits differ (NaN against NaN is no difference)."""
    g, w = np.asarray(got), np.asarray(want)
    differ = bits(g) != bits(w)
    if dtypes.is_float(g.dtype):   # NaN against NaN is no difference (a storage type's codes compare whole)
        differ &= ~(np.isnan(g) & np.isnan(w))
    flat = int(np.flatnonzero(differ.ravel())[0])
    index = tuple(int(i) for i in np.unravel_index(flat, g.shape)) if g.ndim else ()
    out = {"output": name, "differ": int(differ.sum()), "elements": int(g.size), "index": list(index),
           "expected": _value(w.ravel()[flat]), "got": _value(g.ravel()[flat])}
    data = np.asarray(call.arrays[spec.data_input])
    if data.shape == g.shape:  # an element-wise output: the input that produced it
        out["input"] = _value(data.ravel()[flat])
    out["attributes"] = " ".join(f"{k}={_attr_text(v)}" for k, v in sorted(call.attrs.items()))
    return out


def _attr_text(v) -> str:
    """As ``--attr`` parses it back exactly (a Python float's repr round-trips)."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    return repr(float(v)) if isinstance(v, (float, np.floating)) else str(v)


def reproduce(entry: MatrixEntry, target: str, call) -> str:
    """Save the call's inputs under the cache's failures/ folder; the ``qdqc run`` command that reruns it."""
    folder = _compile.cache_dir() / "failures" / re.sub(r"[^\w.@=,-]+", "_", f"{entry.name}@{target}")
    folder.mkdir(parents=True, exist_ok=True)
    spec = ops.get(entry.op)
    inputs = []
    for inp in spec.inputs:
        inputs += ["--input", save_arrays(folder / f"{inp.name}.npy", {inp.name: np.asarray(call.arrays[inp.name])})]
    attrs = []
    for k, v in sorted(call.attrs.items()):
        attrs += ["--attr", f"{k}={_attr_text(v)}"]
    return " ".join(["qdqc", "run", entry.op, *attrs, *inputs, "--target", target, "--semantics", entry.semantics])


def describe(worst: int, failing: int, calls: int, first: dict) -> str:
    """One paragraph for the console, JUnit and Markdown."""
    what = ("NaN in one answer only" if worst >= NAN_ONE_SIDE else
            "the sign differs" if first["expected"].startswith("-") != first["got"].startswith("-") else
            "units in the last place")
    where = f"index {first['index']}" + (f", input {first['input']}" if "input" in first else "")
    return (f"max {worst} ulp ({what}); {failing} of {calls} calls differ. First: output {first['output']}, "
            f"{first['differ']} of {first['elements']} elements differ; at {where}: expected {first['expected']}, "
            f"got {first['got']}; attributes {first['attributes']}. Rerun: {first['reproduce']}")
