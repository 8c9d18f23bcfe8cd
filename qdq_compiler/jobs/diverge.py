"""``qdqc diverge``: where two semantics of one namespace differ, per configuration and numeric attribute set.

The same inputs go through the oracle under both (by default ``tf-cpu``, TF's CPU kernels, and ``tf-xla``,
its XLA lowering: TF 2.21's two answers); every output element whose bits differ is counted, measured in
quantisation levels (the difference over the grid step of the first answer: ``Family.grid_step``) and in
ULPs, and the first one is kept as an example (input value, both answers). Only dtypes both take are compared; the
sums of the FakeQuant gradients are compared within the freedom of their summation order (policy 6).
The reports: a text table (stdout), JSON, Markdown and JUnit XML; ``qdqc validate --semantics tf-cpu,tf-xla``
adds the same rows to its own reports.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import asdict, dataclass
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from .. import dtypes as DT
from .. import ops
from .. import semantics as SEM
from ..errors import QDQError, QDQWarning
from ..outputs import write_atomic
from ..numerics import bits, sum_within_bound, ulp_distance
from ..oracle import compute
from ..validation import bind
from .validate.coverage import numeric_attrs
from .validate.inputs import random_calls
from .validate.matrix import build_matrix

SEMANTICS = SEM.pair()   # the default pair: TF 2.21's two answers


@dataclass
class Divergence:
    configuration: str       # the matrix entry's name (op, structural attributes, dtype)
    attrs: str               # the call's numeric attributes and range
    elements: int            # output elements compared
    differ: int              # of which the two answers differ
    max_levels: float | None  # the largest difference in quantisation levels (None: not a quantised output)
    max_ulp: int             # over the elements that are numbers in both answers
    nan_one_side: int        # elements that are NaN in one answer only
    example: dict | None     # {"output", "index", "input", <semantics a>, <semantics b>} of the first difference

    @property
    def percent(self) -> float:
        return 100.0 * self.differ / self.elements if self.elements else 0.0


def _hex(v) -> str:
    f = float(v)
    return "nan" if f != f else (repr(f) if f in (float("inf"), float("-inf")) else f"{f:.9g}")


def _compare(spec, call_cpu, cpu, xla, pair) -> tuple[int, int, float | None, int, int, dict | None]:
    """(elements, differing, max levels, max ulp, NaN on one side, example) over the outputs of one call."""
    n = differ = worst_ulp = one_nan = 0
    worst_levels, example = None, None
    x = call_cpu.data
    for name, a, b in zip(spec.outputs, cpu, xla):
        n += a.size
        if name in spec.sum_outputs:
            if not sum_within_bound(b, a, spec.family.sum_terms(spec, call_cpu.arrays, call_cpu.attrs, name)):
                bad = int(np.sum(bits(a) != bits(b)))
                differ += bad
                worst_ulp = max(worst_ulp, ulp_distance(a, b))
            continue
        ua, ub = bits(a).reshape(-1), bits(b).reshape(-1)
        nan_a, nan_b = np.isnan(a).reshape(-1), np.isnan(b).reshape(-1)
        mask = (ua != ub) & ~(nan_a & nan_b)
        k = int(mask.sum())
        if not k:
            continue
        differ += k
        both = ~(nan_a | nan_b)
        one_nan += int(np.sum(nan_a != nan_b))
        if both.any():
            worst_ulp = max(worst_ulp, ulp_distance(a.reshape(-1)[both], b.reshape(-1)[both]))
        step = spec.family.grid_step(call_cpu)
        if step is not None and a.shape == x.shape:
            step = np.broadcast_to(np.asarray(step, np.float64), x.shape).reshape(-1)
            with np.errstate(all="ignore"):
                lv = np.abs(a.reshape(-1).astype(np.float64) - b.reshape(-1).astype(np.float64)) / step
            lv = lv[mask & np.isfinite(lv)]
            if lv.size:
                worst_levels = max(worst_levels or 0.0, float(lv.max()))
        if example is None:
            i = int(np.flatnonzero(mask)[0])
            example = {"output": name, "index": i, "input": _hex(x.reshape(-1)[i]) if a.shape == x.shape else None,
                       pair[0]: _hex(a.reshape(-1)[i]), pair[1]: _hex(b.reshape(-1)[i])}
    return n, differ, worst_levels, worst_ulp, one_nan, example


def diverge(ops_: list[str] | None = None, dtypes: list[str] | None = None, size: int = 100_000,
            seed: int = 0, semantics: tuple[str, str] = SEMANTICS) -> list[Divergence]:
    """One ``Divergence`` per (configuration, numeric attribute set) of the dynamic matrix, comparing the
    answers of the two ``semantics`` (one namespace's)."""
    pair = SEM.pair(semantics)
    rows = []
    for entry in build_matrix(ops_, dtypes, pair[:1]):
        spec = ops.get(entry.op)
        if entry.static or any(not spec.family.answers(s) or spec.family.rules(s).unsupported(spec)
                               or entry.dtype not in spec.family.rules(s).dtypes for s in pair):
            continue
        for kw in random_calls(entry, size, seed):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", QDQWarning)
                try:
                    calls = [bind(entry.op, kw, semantics=s) for s in pair]
                except QDQError:
                    continue
            cpu, xla = (compute(c) for c in calls)
            n, differ, levels, ulp, one_nan, example = _compare(spec, calls[0], cpu, xla, pair)
            discrete, ranges = numeric_attrs(entry, calls[0])
            text = " ".join(f"{k}={v}" for k, v in {**discrete, **ranges}.items()) or "(none)"
            rows.append(Divergence(entry.name.replace(":dynamic", ""), text, n, differ, levels, ulp, one_nan, example))
    return rows


def _why_none(ops_, dtypes, pair) -> str:
    """Why no configuration of ``ops_`` x ``dtypes`` has both answers."""
    parts = []
    for name in ops_ or ops.OPS:
        spec = ops.get(name)
        if not all(spec.family.answers(s) for s in pair):
            parts.append(f"{name} has no rules under {' or '.join(s for s in pair if not spec.family.answers(s))}")
            continue
        rules = [spec.family.rules(s) for s in pair]
        why = next((r.unsupported(spec) for r in rules if r.unsupported(spec)), "")
        both = [d for d in rules[0].dtypes if d in rules[1].dtypes]
        parts.append(why or f"{name} has both answers in {', '.join(both)}")
    return "; ".join(parts) + (f" (asked for {', '.join(dtypes)})" if dtypes else "")


def _columns(r: Divergence, pair) -> dict[str, str]:
    """The values every report shows of one row (text, Markdown and JUnit format them)."""
    ex = r.example
    return {"levels": "-" if r.max_levels is None else f"{r.max_levels:.3g}",
            "ulp": str(r.max_ulp if r.differ else 0),
            "example": "" if ex is None else f"{ex['input']} -> {ex[pair[0]]} | {ex[pair[1]]}"}


def _answers(pair) -> str:
    """How reports name the two answers: TF's default pair as before, any other pair by its names."""
    return "TF's two answers" if tuple(pair) == SEMANTICS else f"{pair[0]} and {pair[1]}"


def _total(rows: list[Divergence], pair=SEMANTICS) -> str:
    return (f"{_answers(pair)} differ on {sum(r.differ for r in rows)} of {sum(r.elements for r in rows)} output "
            f"elements ({sum(1 for r in rows if r.differ)} of {len(rows)} calls)")


def format_table(rows: list[Divergence], pair=SEMANTICS) -> str:
    w = max([len(r.configuration) for r in rows] + [13])
    a = max([len(r.attrs) for r in rows] + [10])
    lines = [f"{'configuration':<{w}}  {'attributes':<{a}}  {'differ':>16}  {'levels':>8}  {'ulp':>10}  {'NaN/1':>5}  "
             f"example (input -> {pair[0]} | {pair[1]})"]
    for r in rows:
        c = _columns(r, pair)
        lines.append(f"{r.configuration:<{w}}  {r.attrs:<{a}}  {r.differ:>7} ({r.percent:5.1f}%)  {c['levels']:>8}  "
                     f"{c['ulp']:>10}  {r.nan_one_side:>5}  {c['example']}")
    return "\n".join(lines + [_total(rows, pair)])


def markdown(rows: list[Divergence], pair=SEMANTICS) -> str:
    out = ["| configuration | attributes | elements that differ | max levels | max ulp | NaN in one only | "
           f"example: input -> {pair[0]} / {pair[1]} |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        c, e = _columns(r, pair), r.example
        ex = "" if e is None else f"`{e['input']}` -> `{e[pair[0]]}` / `{e[pair[1]]}`"
        out.append(f"| `{r.configuration}` | {r.attrs} | {r.differ:,} of {r.elements:,} ({r.percent:.1f}%) | "
                   f"{c['levels']} | {c['ulp']} | {r.nan_one_side} | {ex} |")
    return "\n".join(out + ["", _total(rows, pair)]) + "\n"


def junit_suite(rows: list[Divergence], size: int, seed: int, pair=SEMANTICS) -> list[str]:
    """A ``<testsuite name="qdqc-diverge">``: one passing testcase per row (the divergence is TF's, not a
    failure) whose properties carry the counts, levels, ULPs and the example, and whose system-out says it."""
    def prop(k, v):
        return f"      <property name={quoteattr(k)} value={quoteattr(str(v))}/>"
    out = [f'  <testsuite name="qdqc-diverge" tests="{len(rows)}" failures="0" skipped="0" errors="0">',
           "    <properties>", prop("semantics", ",".join(pair)), prop("size", size), prop("seed", seed),
           prop("total", _total(rows, pair)), "    </properties>"]
    for r in rows:
        c = _columns(r, pair)
        out += [f"    <testcase classname={quoteattr(r.configuration)} name={quoteattr(r.attrs)} time=\"0\">",
                "     <properties>"]
        out += [prop(k, v) for k, v in (("elements", r.elements), ("differ", r.differ),
                                        ("percent", f"{r.percent:.3f}"), ("max levels", c["levels"]),
                                        ("max ulp", c["ulp"]), ("nan in one only", r.nan_one_side),
                                        ("example", c["example"]))]
        out += ["     </properties>",
                f"      <system-out>{escape(f'{r.differ} of {r.elements} elements differ; ' + c['example'])}"
                f"</system-out>", "    </testcase>"]
    return out + ["  </testsuite>"]


def junit(rows: list[Divergence], size: int, seed: int, pair=SEMANTICS) -> str:
    return "\n".join(['<?xml version="1.0" encoding="utf-8"?>', "<testsuites>", *junit_suite(rows, size, seed, pair),
                      "</testsuites>"]) + "\n"


def json_report(rows: list[Divergence], size: int, seed: int, pair=SEMANTICS) -> str:
    return json.dumps(json_rows(rows, size, seed, pair), indent=1)


def json_rows(rows: list[Divergence], size: int, seed: int, pair=SEMANTICS) -> dict:
    """The JSON form; ``from_json`` reads it back (validate's reports carry it)."""
    return {"semantics": list(pair), "size": size, "seed": seed, "total": _total(rows, pair),
            "rows": [{**asdict(r), "percent": round(r.percent, 3)} for r in rows]}


def from_json(data: dict) -> list[Divergence]:
    return [Divergence(**{k: v for k, v in r.items() if k != "percent"}) for r in data["rows"]]


def run(ops_=None, dtypes=None, size: int = 100_000, seed: int = 0, json_path=None, markdown_path=None,
        junit_path=None, semantics=SEMANTICS) -> int:
    """``qdqc diverge``: print the table, write the reports; exit status 0 (divergence is the references',
    not a failure). A selection with nothing to compare (V1 has no tf-xla; a dtype the ops lack) is a
    QDQError saying why."""
    pair = SEM.pair(semantics)
    if dtypes:
        dtypes = [DT.get(d).name for d in dtypes]
    rows = diverge(ops_, dtypes, size, seed, pair)
    if not rows:  # nothing compared is no answer: say why, and fail (a typo must not pass a CI step)
        raise QDQError(f"nothing to compare: {_why_none(ops_, dtypes, pair)}", arg="--ops")
    print(format_table(rows, pair))
    for path, text in ((json_path, lambda: json_report(rows, size, seed, pair)),
                       (markdown_path, lambda: markdown(rows, pair)), (junit_path, lambda: junit(rows, size, seed, pair))):
        if path:
            write_atomic(path, text())
    return 0
