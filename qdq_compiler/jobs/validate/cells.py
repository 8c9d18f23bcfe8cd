"""One cell of the matrix: a configuration compiled for one target and compared with the oracle."""
from __future__ import annotations

import time
import zlib
from dataclasses import dataclass


from ... import execute, oracle
from ... import ops
from ... import targets as T
from ...errors import QDQError
from ...numerics import bit_equal, sum_within_bound, ulp_distance
from ...validation import bind
from .inputs import _canonical_kwargs, golden_calls, random_calls
from .matrix import MatrixEntry


@dataclass
class Cell:
    entry: str
    target: str
    status: str            # exact | ulp | error | skipped
    detail: str = ""
    max_ulp: int = 0
    cases: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("exact", "skipped")

    def short(self) -> str:
        if self.status == "skipped" and self.detail.startswith("compiled"):
            return "compiled"
        return {"exact": "exact", "ulp": f"ulp {self.max_ulp}", "error": "ERROR",
                "skipped": "skipped"}[self.status]


def run_cell(entry: MatrixEntry, target: str, sizes, seed: int, goldens: bool = True) -> Cell:
    """Compile ``entry`` for ``target`` and compare every call with the oracle."""
    t0 = time.perf_counter()
    t = T.get(target)
    if entry.dtype not in t.dtypes:
        return Cell(entry.name, target, "skipped", f"{target} has no {entry.dtype}")
    # Static configurations are compiled for one shape (the largest size): random inputs only.
    calls = [] if entry.static or not goldens else [_canonical_kwargs(entry, kw) for kw in golden_calls(entry)]
    for i, size in enumerate(sizes):
        if entry.static and size != max(sizes):
            continue
        calls += random_calls(entry, size, seed + 1000 * i + zlib.crc32(entry.name.encode()) % 997)
    spec = ops.get(entry.op)
    worst, n = 0, 0
    for kw in calls:
        try:
            call = bind(entry.op, kw)
        except QDQError:
            continue
        want = oracle.compute(call)
        try:
            got = execute.run(call, target, static=entry.static)
        except QDQError as e:
            return Cell(entry.name, target, "error", str(e).splitlines()[0][:300], cases=n,
                        seconds=time.perf_counter() - t0)
        n += 1
        for name, g, w in zip(spec.outputs, got, want):
            if name in spec.sum_outputs:  # policy 6: a sum's order is free
                if not sum_within_bound(g, w, call.arrays[spec.input("grad").name]):
                    worst = max(worst, ulp_distance(g, w))
                continue
            if not bit_equal(g, w):
                worst = max(worst, max(ulp_distance(g, w), 1))
    status = "exact" if worst == 0 else "ulp"
    return Cell(entry.name, target, status, "" if worst == 0 else f"max {worst} ulp", worst, n,
                time.perf_counter() - t0)
