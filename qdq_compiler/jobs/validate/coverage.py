"""What a configuration covers: its structural attributes, and the numeric attribute sets of its calls
(TF goldens and random calls, counted), so a report row says more than ``FakeQuantWithMinMaxArgs:f32:dynamic``."""
from __future__ import annotations

import numpy as np

from ... import ops
from .inputs import golden_calls, golden_source
from .matrix import MatrixEntry


def _text(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(v)


def numeric_attrs(entry: MatrixEntry, call) -> tuple[dict[str, str], dict[str, str]]:
    """The numeric attributes of one bound call (``validation.bind``), as text: (discrete, ranges).
    Discrete: int, bool and str attributes and a num_bits input (num_bits=8, narrow_range=false); ranges:
    float attributes and min/max inputs (min=-1.5, or min=[64 values] per channel). Structural attributes
    (in the entry's name) are left out."""
    spec = ops.get(entry.op)
    structural = dict(entry.attrs)
    discrete, ranges = {}, {}
    for a in spec.attrs:
        if a.name in structural:
            continue
        v = call.attrs[a.name]
        (ranges if a.kind is float else discrete)[a.name] = _text(v)
    for inp in spec.inputs:
        if inp.layout == ops.DATA:
            continue
        arr = np.asarray(call.arrays[inp.name])
        if inp.layout == ops.SCALAR and arr.dtype.kind in "iu":   # V3's num_bits
            discrete[inp.name] = _text(int(arr))
        else:
            ranges[inp.name] = _text(arr.item()) if arr.ndim == 0 else f"[{arr.size} values]"
    return discrete, ranges


def _join(d: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in d.items()) or "(none)"


def entry_coverage(entry: MatrixEntry, cases) -> dict:
    """What every cell of ``entry`` runs (the same cases on each target; ``cells.bound_calls``), described:
    ``{"entry", "op", "dtype", "shape", "structural", "goldens", "golden_file", "no_goldens", "random",
    "attribute_sets", "random_calls"}``. ``golden_file``: the file the goldens came from (None: none);
    ``no_goldens``: why ``goldens`` is 0 ('' otherwise).
    ``attribute_sets``: one ``{"attrs", "golden", "random"}`` per distinct set of discrete attributes;
    ``random_calls``: each random call's attributes and range."""
    sets: dict[str, dict] = {}
    random_calls = []
    for case in cases:
        discrete, ranges = numeric_attrs(entry, case.call)
        key = _join(discrete)
        row = sets.setdefault(key, {"attrs": key, "golden": 0, "random": 0})
        row["golden" if case.golden else "random"] += 1
        if not case.golden:
            random_calls.append(_join({**discrete, **ranges}))
    goldens = sum(r["golden"] for r in sets.values())
    source, why = golden_source(entry)
    if not goldens and not why:
        why = (f"none of {source}'s cases has this dtype and structure" if not golden_calls(entry)
               else "the op refused every golden case of this configuration")
    return {"entry": entry.name, "op": entry.op, "dtype": entry.dtype,
            "shape": "static" if entry.static else "dynamic", "structural": {k: v for k, v in entry.attrs},
            "goldens": goldens, "golden_file": source, "no_goldens": "" if goldens else why,
            "random": len(random_calls),
            "attribute_sets": sorted(sets.values(), key=lambda r: _order(r["attrs"])), "random_calls": random_calls}


def _order(attrs: str) -> list:
    """Sort key of ``num_bits=8 narrow_range=false``: numbers as numbers (2 before 16)."""
    parts = (p.partition("=") for p in attrs.split(" "))
    return [(k, int(v) if v.lstrip("-").isdigit() else 0, v) for k, _, v in parts]


def attribute_values(cov: dict) -> str:
    """The distinct values of each discrete attribute over all calls, compactly:
    ``num_bits 2..16 (15), narrow_range false,true``."""
    seen: dict[str, set] = {}
    for row in cov["attribute_sets"]:
        if row["attrs"] == "(none)":
            continue
        for part in row["attrs"].split(" "):
            k, v = part.split("=", 1)
            seen.setdefault(k, set()).add(v)
    out = []
    for k, vals in seen.items():
        if all(v.lstrip("-").isdigit() for v in vals):
            nums = sorted(int(v) for v in vals)   # distinct: contiguous when they span exactly their count
            if len(nums) > 3 and nums[-1] - nums[0] + 1 == len(nums):
                out.append(f"{k} {nums[0]}..{nums[-1]}")
            elif len(nums) > 8:   # MX's stochastic seeds: up to 2^64 - 1, one per call
                out.append(f"{k} {len(nums)} values in {nums[0]}..{nums[-1]}")
            else:
                out.append(f"{k} {','.join(map(str, nums))}")
        else:
            out.append(f"{k} {','.join(sorted(vals))}")
    return "; ".join(out) or "-"
