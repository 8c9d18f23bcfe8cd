"""``qdqc validate``: the same op configurations on every target, compared with the oracle bit for bit.

The matrix is op x structural attributes x dtype x shape kind (static/dynamic). Each configuration is
compiled once per target (numeric attributes are runtime parameters, so one artifact serves every
num_bits/narrow_range/signed_input/min/max) and then run on:
  - the TF 2.21 golden inputs of that op whose structure matches the configuration, and
  - random inputs of each requested size, sprinkled with ties, NaN, +-inf, +-0 and subnormals,
    under several numeric attribute sets.
A cell is "exact", "ulp N" (largest distance in units in the last place), "error: ..." or
"skipped: reason". Any non-exact cell makes the exit status 1.
"""
from __future__ import annotations

import itertools
import zlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

from . import registry as R
from . import targets as T
from .config import OpConfig, format_shape
from .errors import QDQError
from .oracle.numerics import bit_equal, ulp_distance

DEFAULT_SIZES = (1000, 70000)  # 70000 > 65535: the lavapipe loop limit for reductions


@dataclass(frozen=True)
class MatrixEntry:
    """One row of the matrix: an op with its structural attributes, a dtype and a shape kind."""
    op: str
    attrs: tuple
    dtype: str
    static: bool

    @property
    def name(self) -> str:
        a = ",".join(f"{k}={v}" for k, v in self.attrs)
        return f"{self.op}[{a}]:{'f32' if self.dtype == 'float32' else 'f64'}:{'static' if self.static else 'dynamic'}"

    @property
    def attr(self) -> dict:
        return dict(self.attrs)


def structural_variants(spec: R.OpSpec) -> list[dict]:
    """The structural attribute combinations of an op (what changes the compiled program)."""
    if spec.family == R.QDQ:
        rgs = (True, False)
        rms = R.ROUND_MODES if spec.round_mode_attr else (None,)
        axes = (-1, 1) if spec.has_axis else (None,)
        out = []
        for rg, rm, ax in itertools.product(rgs, rms, axes):
            a = {"range_given": rg}
            if rm:
                a["round_mode"] = rm
            if ax is not None:
                a["axis"] = ax
            out.append(a)
        return out
    if spec.family == R.QDQ_GRAD:
        return [{"axis": -1}, {"axis": 1}]
    return [{}]


def build_matrix(ops=None, dtypes=None) -> list[MatrixEntry]:
    entries = []
    for name, spec in R.OPS.items():
        if ops and name not in ops:
            continue
        for a in structural_variants(spec):
            for dt in spec.dtypes:
                if dtypes and dt not in dtypes:
                    continue
                # Static shapes for float32 only: static f64 adds compile time and no new code path
                # (tests/test_large_inputs.py runs static f64 beyond the Vulkan loop limit).
                for static in ((False, True) if dt == "float32" else (False,)):
                    entries.append(MatrixEntry(name, tuple(sorted(a.items())), dt, static))
    return entries


# -- inputs ----------------------------------------------------------------------------------------


def _shape_for(entry: MatrixEntry, size: int) -> tuple[int, ...]:
    spec = R.get(entry.op)
    if spec.per_channel_last:
        return (max(size // 8, 1), 8)
    if entry.attr.get("axis", -1) >= 0:
        return (max(size // 40, 1), 4, 10)
    return (size,)


def _special(rng, x: np.ndarray, scale: float) -> np.ndarray:
    """Sprinkle the values that break naive lowerings: ties, NaN, +-inf, +-0, subnormals."""
    flat = x.reshape(-1)
    n = flat.size
    if n < 16:
        return x
    tiny = np.finfo(x.dtype).tiny
    picks = rng.choice(n, size=min(n, 64), replace=False)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny / 4, -tiny / 2, 0.5 * scale, -0.5 * scale,
                         1.5 * scale, -2.5 * scale, 3.5 * scale], x.dtype)
    flat[picks[: len(specials)]] = specials[: len(picks)]
    return x


def random_calls(entry: MatrixEntry, size: int, seed: int) -> list[dict]:
    """Keyword arguments for several calls of ``entry``'s op at ``size`` elements."""
    spec = R.get(entry.op)
    rng = np.random.default_rng(seed)
    dt = np.dtype(entry.dtype)
    shape = _shape_for(entry, size)
    x = (rng.standard_normal(shape) * 2).astype(dt)
    calls = []
    if spec.family in (R.QDQ, R.QDQ_GRAD):
        axis = entry.attr.get("axis", -1)
        pshape = () if axis == -1 else (shape[axis],)
        nb_sets = [(8, True, False), (4, False, False), (3, True, True), (16, True, False)] \
            if spec.family == R.QDQ else [(8, True, False)]
        for i, (nb, signed, narrow) in enumerate(nb_sets):
            lo = (-rng.random(pshape) * 2 - 0.1).astype(dt)
            hi = (rng.random(pshape) * 2 + 0.1).astype(dt)
            xi = x.copy()
            if entry.attr.get("range_given") is False and i % 2 == 0:
                xi = _special(rng, xi, 0.0)
                xi[np.isnan(xi) | np.isinf(xi)] = 0.0  # NaN/inf with a data range: covered by goldens
            else:
                xi = _special(rng, xi, 2.0 / 255)
            kw = {"input": xi, "input_min": lo, "input_max": hi}
            if spec.range_from == "attr":  # V1: the range is a pair of float attributes
                kw.update(input_min=float(np.float32(lo)), input_max=float(np.float32(hi)))
            if spec.family == R.QDQ_GRAD:
                kw["gradients"] = rng.integers(-8, 9, shape).astype(dt)
                kw["axis"] = axis
            else:
                kw.update(entry.attr)
                kw["signed_input"] = signed
                if spec.num_bits_input:
                    kw["num_bits"] = np.int32(nb)
                else:
                    kw["num_bits"] = nb
                if "narrow_range" in spec.attr_map:
                    kw["narrow_range"] = narrow
            calls.append(kw)
        return calls
    # FakeQuant family
    d = shape[-1]
    for nb, narrow in ((8, False), (4, True), (16, False)):
        xi = _special(rng, x.copy(), 0.01)
        kw = {"inputs": xi, "num_bits": nb, "narrow_range": narrow}
        mn, mx = -float(rng.random() * 3 + 0.01), float(rng.random() * 3 + 0.01)
        if spec.range_from == "attr":
            kw.update(min=mn, max=mx)
        elif spec.range_from == "scalar":
            kw.update(min=np.float32(mn), max=np.float32(mx))
        else:
            mnv = (-rng.random(d) * 3).astype(np.float32)
            mxv = (rng.random(d) * 3).astype(np.float32)
            mnv[0] = mxv[0] = 0.0  # the min == max == 0 special case
            kw.update(min=mnv, max=mxv)
        if "gradients" in spec.input_names:
            kw["gradients"] = rng.integers(-8, 9, shape).astype(np.float32)
        calls.append(kw)
    return calls


def golden_calls(entry: MatrixEntry) -> list[dict]:
    """Golden cases (tests/goldens, if present) whose structure and dtype match ``entry``."""
    from pathlib import Path
    gdir = Path(__file__).resolve().parent.parent / "tests" / "goldens"
    f = gdir / f"{entry.op}.json"
    if not f.is_file():
        return []
    spec = R.get(entry.op)
    out = []
    for case in json.loads(f.read_text())["cases"]:
        if "outputs" not in case["expect"] or case.get("deviation"):
            continue
        kw = {}
        for name, value in case["attrs"].items():
            a = spec.attr_map.get(name)
            kw[name] = float.fromhex(value) if a is not None and a.kind is float and isinstance(value, str) else value
        for name, e in case["inputs"].items():
            vals = e["values"]
            if e["dtype"] == "int32":
                kw[name] = np.array(vals, np.int32).reshape(e["shape"])
            else:
                kw[name] = np.array([float.fromhex(v) if v not in ("nan", "-nan") else np.nan for v in vals],
                                    np.float64).astype(e["dtype"]).reshape(e["shape"])
        data = kw[spec.input("data").name]
        if data.dtype.name != entry.dtype:
            continue
        full = {a.name: kw.get(a.name, a.default) for a in spec.attrs}
        ax = full.get("axis", -1)
        want_axis = entry.attr.get("axis", -1)
        if ax != want_axis and not (want_axis == 1 and ax >= 0 and data.ndim > ax):
            continue
        if any(full.get(k) != v for k, v in entry.attrs if k != "axis"):
            continue
        if ax >= 0 and want_axis == 1:  # per-axis goldens run through the [outer, C, inner] program
            pass
        out.append(kw)
    return out


# -- running ---------------------------------------------------------------------------------------


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


def _canonical_kwargs(entry: MatrixEntry, kw: dict) -> dict:
    """Golden per-axis cases along any axis run through the entry's [outer, C, inner] program."""
    spec = R.get(entry.op)
    ax = kw.get("axis", -1)
    if entry.attr.get("axis", -1) == 1 and ax >= 0:
        from .oracle.qdq import three_d
        kw = dict(kw)
        for inp in spec.inputs:
            if inp.role in ("data", "grad"):
                kw[inp.name] = three_d(kw[inp.name], ax)
        kw["axis"] = 1
    return kw


def run_cell(entry: MatrixEntry, target: str, sizes, seed: int, goldens: bool = True) -> Cell:
    """Compile ``entry`` for ``target`` and compare every call with the oracle."""
    from .execute import run
    from .oracle import compute
    from .validation import bind
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
    spec = R.get(entry.op)
    worst, n = 0, 0
    for kw in calls:
        try:
            call = bind(entry.op, kw)
        except QDQError:
            continue
        want = compute(call)
        try:
            got = run(call, target, static=entry.static)
        except QDQError as e:
            return Cell(entry.name, target, "error", str(e).splitlines()[0][:300], cases=n,
                        seconds=time.perf_counter() - t0)
        n += 1
        for name, g, w in zip(spec.outputs, got, want):
            if name in spec.sum_outputs:
                # Policy 6: a sum's order is free; bound by (n-1) eps sum|g|.
                grads = call.arrays["gradients"].astype(np.float64)
                axes = tuple(range(grads.ndim - w.ndim))
                bound = max(grads.size // max(w.size, 1) - 1, 0) * np.finfo(np.float32).eps * np.abs(grads).sum(axis=axes)
                d = np.abs(g.astype(np.float64) - w.astype(np.float64))
                if not (np.array_equal(np.isnan(g), np.isnan(w)) and np.all(np.nan_to_num(d) <= bound)):
                    worst = max(worst, ulp_distance(g, w))
                continue
            if not bit_equal(g, w):
                worst = max(worst, max(ulp_distance(g, w), 1))
    status = "exact" if worst == 0 else "ulp"
    return Cell(entry.name, target, status, "" if worst == 0 else f"max {worst} ulp", worst, n,
                time.perf_counter() - t0)


def _progress(done: int, total: int, label: str, enabled: bool):
    if not enabled:
        return
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:60]:<60}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def precompile(entries, targets, sizes, jobs: int, progress: bool):
    """Compile every (entry, target[, static shape]) in parallel (iree-compile runs as a subprocess)."""
    from .execute import config_for_entry, artifact_for
    work = []
    for e in entries:
        for t in targets:
            if e.dtype not in T.get(t).dtypes:
                continue
            shapes = [_shape_for(e, max(sizes))] if e.static else [None]
            work += [(e, t, sh) for sh in shapes]
    errors = {}

    def one(item):
        e, t, sh = item
        try:
            artifact_for(config_for_entry(e, t, sh))
        except QDQError as ex:
            errors[(e.name, t)] = " ".join(str(ex).split())[:400]

    done = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for _ in pool.map(one, work):
            done += 1
            _progress(done, len(work), "compiling", progress)
    return errors


def select_targets(text: str | None) -> tuple[list[str], dict[str, str], list[str]]:
    """The targets to run, those skipped with their reasons, and the skipped ones named explicitly
    (these are still compiled, so a missing device does not hide a compile failure)."""
    names = [n.strip() for n in text.split(",")] if text else \
        ["cpu"] + [n for n in T.TARGETS if n not in ("cpu", "cpu-host")]
    run, skipped, compile_only = [], {}, []
    for n in names:
        t = T.get(n)
        ok, why = t.availability()
        if ok:
            run.append(t.name)
        else:
            skipped[t.name] = why
            if text:
                compile_only.append(t.name)
    return run, skipped, compile_only


def format_table(cells: list[Cell], targets: list[str]) -> str:
    rows = {}
    for c in cells:
        rows.setdefault(c.entry, {})[c.target] = c
    w = max([len(r) for r in rows] + [10])
    lines = [f"{'configuration':<{w}}  " + "  ".join(f"{t:<10}" for t in targets)]
    for r, by_t in rows.items():
        lines.append(f"{r:<{w}}  " + "  ".join(f"{by_t[t].short() if t in by_t else '-':<10}" for t in targets))
    return "\n".join(lines)


def markdown(cells, targets, skipped, summary) -> str:
    rows = {}
    for c in cells:
        rows.setdefault(c.entry, {})[c.target] = c
    out = ["# qdqc validate", "", f"Compiler: IREE {summary['compiler']}. {summary['text']}", ""]
    out.append("| configuration | " + " | ".join(targets) + " |")
    out.append("|---|" + "---|" * len(targets))
    for r, by_t in rows.items():
        out.append(f"| `{r}` | " + " | ".join(by_t[t].short() if t in by_t else "-" for t in targets) + " |")
    for t, why in skipped.items():
        out.append(f"\n{t}: skipped ({why})")
    return "\n".join(out) + "\n"


def junit(cells, skipped) -> str:
    from xml.sax.saxutils import escape, quoteattr
    fails = sum(c.status in ("ulp", "error") for c in cells)
    skips = sum(c.status == "skipped" for c in cells) + len(skipped)
    out = [f'<?xml version="1.0" encoding="utf-8"?>',
           f'<testsuite name="qdqc-validate" tests="{len(cells) + len(skipped)}" failures="{fails}" '
           f'skipped="{skips}" errors="0">']
    for c in cells:
        out.append(f'  <testcase classname={quoteattr(c.target)} name={quoteattr(c.entry)} time="{c.seconds:.3f}">')
        if c.status in ("ulp", "error"):
            out.append(f'    <failure message={quoteattr(c.short())}>{escape(c.detail)}</failure>')
        elif c.status == "skipped":
            out.append(f'    <skipped message={quoteattr(c.detail)}/>')
        out.append("  </testcase>")
    for t, why in skipped.items():
        out.append(f'  <testcase classname={quoteattr(t)} name="target"><skipped message={quoteattr(why)}/></testcase>')
    out.append("</testsuite>")
    return "\n".join(out) + "\n"


def main(args) -> int:
    from .compile import compiler_version
    t0 = time.perf_counter()
    ops = [o.strip() for o in args.ops.split(",")] if args.ops else None
    for o in ops or []:
        R.get(o)
    dtypes = None
    if args.dtypes:
        from .cli import _dtype
        dtypes = [_dtype(d.strip()) for d in args.dtypes.split(",")]
    sizes = DEFAULT_SIZES
    if args.sizes:
        try:
            sizes = tuple(int(s) for s in args.sizes.split(","))
        except ValueError:
            raise QDQError(f"--sizes {args.sizes!r}: expected comma-separated element counts", arg="--sizes") from None
        if any(s < 1 for s in sizes):
            raise QDQError("--sizes must be positive element counts", arg="--sizes")
    targets, skipped, compile_only = select_targets(args.targets)
    entries = build_matrix(ops, dtypes)
    if args.shard:
        try:
            i, n = (int(v) for v in args.shard.split("/"))
            assert 1 <= i <= n
        except (ValueError, AssertionError):
            raise QDQError(f"--shard {args.shard!r}: expected i/n with 1 <= i <= n", arg="--shard") from None
        entries = entries[i - 1::n]
    progress = not args.no_progress and sys.stderr.isatty()
    jobs = args.jobs or os.cpu_count() or 1
    compile_errors = precompile(entries, targets + compile_only, sizes, jobs, progress)
    cells = []
    for t in compile_only:  # compiled, not run: the report says so per configuration
        for e in entries:
            if (e.name, t) in compile_errors:
                cells.append(Cell(e.name, t, "error", compile_errors[(e.name, t)]))
            elif e.dtype in T.get(t).dtypes:
                cells.append(Cell(e.name, t, "skipped", f"compiled; not run: {skipped[t]}"))
    total = len(cells) + len(entries) * len(targets)
    for e in entries:
        for t in targets:
            if (e.name, t) in compile_errors:
                cells.append(Cell(e.name, t, "error", compile_errors[(e.name, t)]))
            else:
                cells.append(run_cell(e, t, sizes, args.seed))
            _progress(len(cells), total, e.name, progress)
    for t, why in skipped.items():
        print(f"{t}: skipped ({why})", file=sys.stderr)
    bad = [c for c in cells if not c.ok]
    elapsed = time.perf_counter() - t0
    text = (f"{len(cells) - len(bad)} of {len(cells)} cells exact ({len(entries)} configurations x "
            f"{len(targets)} targets: {', '.join(targets)}; sizes {', '.join(map(str, sizes))}"
            + (f"; compiled only: {', '.join(compile_only)}" if compile_only else "") + f"); {elapsed:.1f} s")
    summary = {"compiler": compiler_version(), "targets": targets, "skipped_targets": skipped,
               "configurations": len(entries), "cells": len(cells), "exact": len(cells) - len(bad),
               "failed": len(bad), "seconds": round(elapsed, 2), "text": text,
               "known_deviations": {n: T.get(n).deviation for n in targets if T.get(n).deviation}}
    print(format_table(cells, targets + compile_only))
    for c in bad:
        print(f"MISMATCH {c.target} {c.entry}: {c.detail}")
    print(text)
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"summary": summary, "cells": [asdict(c) for c in cells]}, f, indent=1)
    if args.junit:
        with open(args.junit, "w") as f:
            f.write(junit(cells, skipped))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(cells, targets + compile_only, skipped, summary))
    return 1 if bad else 0
