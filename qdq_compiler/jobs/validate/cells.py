"""One cell of the matrix: a configuration compiled for one target and compared with the oracle."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

from ... import execute, oracle
from ... import ops
from ... import targets as T
from ...errors import QDQError, QDQWarning
from ...numerics import bit_equal, sum_within_bound, ulp_distance
from ...validation import Call, bind
from . import diagnose
from .inputs import entry_calls
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
    first_failure: dict | None = None   # diagnose.first_difference of the first failing call, with "reproduce"
    host: str = ""         # where it ran: the host's name, the worker ("local" in a local run), the device
    worker: str = ""
    device: str = ""
    goldens: int = 0       # reference golden cases it ran (of ``cases``; the configuration's coverage says why 0)

    @property
    def place(self) -> str:
        """'host/worker' of a cell a cluster ran ('' for a local run's)."""
        return f"{self.host}/{self.worker}" if self.worker and self.worker != "local" else ""

    @property
    def ok(self) -> bool:
        return self.status in ("exact", "skipped")

    def short(self) -> str:
        if self.status == "skipped" and self.detail.startswith("compiled"):
            return "compiled"
        return {"exact": "exact", "ulp": f"ulp {self.max_ulp}", "error": "ERROR",
                "skipped": "skipped"}[self.status]


@dataclass
class Case:
    """One bound call of a configuration; the oracle's answer is computed once, for every target."""
    call: Call
    golden: bool
    want: tuple | None = None


def bound_calls(entry: MatrixEntry, sizes, seed: int, goldens: bool = True) -> list[Case]:
    """The calls of ``entry`` (``inputs.entry_calls``) bound and checked, each marked TF golden or random;
    the ones the op refuses (as TF would) are left out. The same on every target: bind once, run on each."""
    calls, n_golden = entry_calls(entry, sizes, seed, goldens)
    out = []
    with warnings.catch_warnings():  # the matrix runs TF's dubious cases (min > max...) on purpose
        warnings.simplefilter("ignore", QDQWarning)
        for i, kw in enumerate(calls):
            try:
                out.append(Case(bind(entry.op, kw, semantics=entry.semantics), i < n_golden))
            except QDQError:
                continue
    return out


def run_cell(entry: MatrixEntry, target: str, sizes, seed: int, goldens: bool = True,
             calls: list[Case] | None = None) -> Cell:
    """Compile ``entry`` for ``target`` and compare every call (``calls``, default ``bound_calls(...)``)
    with the oracle."""
    t0 = time.perf_counter()
    t = T.get(target)
    spec = ops.get(entry.op)
    gap = t.dtype_gap(entry.dtype)
    if gap:
        return Cell(entry.name, target, "skipped", gap)
    if calls is None:
        calls = bound_calls(entry, sizes, seed, goldens)
    if not calls:  # a configuration that runs nothing must not pass as exact
        return Cell(entry.name, target, "error", "no call of this configuration could be bound: every "
                    "generated input was refused", seconds=time.perf_counter() - t0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QDQWarning)
        worst, n, error, failing, first = _compare(entry, target, calls)
    seconds = time.perf_counter() - t0
    ran = sum(c.golden for c in calls[:n])   # the goldens come first (inputs.entry_calls)
    if error:
        return Cell(entry.name, target, "error", error, cases=n, seconds=seconds, goldens=ran)
    if worst == 0:
        return Cell(entry.name, target, "exact", "", 0, n, seconds, goldens=ran)
    return Cell(entry.name, target, "ulp", diagnose.describe(worst, failing, n, first), worst, n, seconds, first,
                goldens=ran)


def _compare(entry: MatrixEntry, target: str, cases: list[Case]) -> tuple[int, int, str, int, dict | None]:
    """(largest ulp distance, calls run, first error or '', calls that differ, the first difference) of
    ``cases`` on ``target`` against the oracle."""
    spec = ops.get(entry.op)
    worst, n, failing, first = 0, 0, 0, None
    for case in cases:
        call = case.call
        if case.want is None:
            case.want = oracle.compute(call)
        want = case.want
        try:
            got = execute.run(call, target, static=entry.static)
        except QDQError as e:
            return worst, n, str(e).splitlines()[0][:300], failing, first
        except Exception as e:  # noqa: BLE001 - the device failed the call (IREE's status): an error cell, not a crash
            shape = "x".join(map(str, call.data.shape)) or "scalar"
            return worst, n, f"{T.readable_iree_error(e)[:300]} (data {shape}, {call.dtype_name})", failing, first
        n += 1
        bad = None
        for name, g, w in zip(spec.outputs, got, want):
            if name in spec.sum_outputs:  # policy 6: a sum's order is free (NaN against NaN is no difference)
                if sum_within_bound(g, w, spec.family.sum_terms(spec, call.arrays, call.attrs, name)) or not ulp_distance(g, w):
                    continue
                worst = max(worst, ulp_distance(g, w))
            elif bit_equal(g, w):
                continue
            else:
                worst = max(worst, max(ulp_distance(g, w), 1))
            bad = bad or (name, g, w)
        if bad:
            failing += 1
            if first is None:
                first = diagnose.first_difference(spec, call, *bad)
                first["reproduce"] = diagnose.reproduce(entry, target, call)
    return worst, n, "", failing, first
