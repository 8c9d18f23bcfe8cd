"""``qdqc bench``: throughput of the compiled ops against a memory copy, the NumPy oracle and TensorFlow.

For each benchmark case (an op with attributes) and each size 2^k (float32 elements) it times, interleaved
round by round so that all variants see the same machine load:

    copy     ``.copy()`` of every data-sized input (the same bytes the op reads): the bandwidth yardstick
    api      the public API, ``qdq_compiler.raw_ops.<Op>(..., target=T)``: NumPy in, NumPy out
    device   the compiled kernel alone: inputs bound once (imported on CPU, uploaded elsewhere), results
             left on the device
    oracle   the NumPy reference (``qdq_compiler.oracle.raw_ops``)
    tf       TensorFlow's kernel (``tf.raw_ops``, NumPy in, ``.numpy()`` out), only when TensorFlow is
             installed (never a dependency; imported lazily)

and reports the median time, GB/s (bytes = the data-sized arrays read plus written) and the ratio to the
copy, as a table, as JSON (``--json``) and as a PNG plot of throughput against size (``--plot``, needs
matplotlib: ``pip install 'qdq-compiler[plot]'``). Each api result is also compared with the oracle
(bit for bit; float sums within their rounding bound, policy 6): the ``exact`` column.

Timings are only meaningful as ratios within one run on one machine; the goals of issue 7 are evaluated
at 2^24 elements when that size is measured (``goals`` in the JSON), and a 16-element call is timed for
the per-call overhead. Nothing here is an assertion: tests only check that the harness runs.
"""
from __future__ import annotations

import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import registry as R
from .errors import QDQError

CHANNELS = 64
LATENCY_ELEMENTS = 16
VARIANTS = ("copy", "api", "device", "oracle", "tf")
# A variant whose single run takes longer than this many seconds is repeated fewer times (at least 3).
SLOW_BUDGET_S = 20.0


@dataclass(frozen=True)
class Case:
    """One benchmarked configuration: an op, its attributes and how its inputs are made."""
    name: str
    op: str
    attrs: dict = field(default_factory=dict)
    kind: str = "per-tensor"         # per-tensor | per-channel | gradient (as the goals group them)
    range_from: str = "given"        # given | data
    per_channel: bool = False
    compare_to: str | None = None    # the per-tensor case a per-channel case is held against
    tf: bool = True                  # TF can run it (per-channel given ranges of V4 it rejects)

    @property
    def spec(self) -> R.OpSpec:
        return R.get(self.op)


CASES: tuple[Case, ...] = (
    Case("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgs", {"min": -1.5, "max": 2.0}),
    Case("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVars"),
    Case("QuantizeAndDequantizeV4[range_given]", "QuantizeAndDequantizeV4", {"range_given": True}),
    Case("QuantizeAndDequantizeV4[from data]", "QuantizeAndDequantizeV4", {"range_given": False}, range_from="data"),
    Case("FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannel", kind="per-channel",
         per_channel=True, compare_to="FakeQuantWithMinMaxVars"),
    Case("QuantizeAndDequantizeV4[range_given,axis]", "QuantizeAndDequantizeV4", {"range_given": True, "axis": 1},
         kind="per-channel", per_channel=True, compare_to="QuantizeAndDequantizeV4[range_given]", tf=False),
    Case("QuantizeAndDequantizeV4[from data,axis]", "QuantizeAndDequantizeV4", {"range_given": False, "axis": 1},
         kind="per-channel", range_from="data", per_channel=True, compare_to="QuantizeAndDequantizeV4[from data]"),
    Case("FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxArgsGradient", {"min": -1.5, "max": 2.0},
         kind="gradient"),
    Case("FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsGradient", kind="gradient"),
    Case("FakeQuantWithMinMaxVarsPerChannelGradient", "FakeQuantWithMinMaxVarsPerChannelGradient", kind="gradient",
         per_channel=True),
    Case("QuantizeAndDequantizeV4Grad", "QuantizeAndDequantizeV4Grad", kind="gradient"),
)

# The goals of issue 7, at 2^24 float32 elements through the public NumPy API.
GOAL_LOG2N = 24
GOALS = {"per-tensor given range": 1.3, "per-tensor range from data": 2.0, "per-channel vs per-tensor": 1.3,
         "gradient": 1.3, "16-element call (us)": 30.0}


def select_cases(ops: str | None) -> list[Case]:
    """The cases named (case names or op names, comma-separated), or every case."""
    if not ops:
        return list(CASES)
    out = []
    for name in [s.strip() for s in ops.split(",") if s.strip()]:
        hit = [c for c in CASES if c.name == name] or [c for c in CASES if c.op == name]
        if not hit:
            R.get(name)  # an unknown op raises QDQError naming the known ones
            hit = [Case(name, name, kind="gradient" if R.get(name).gradient_of else "per-tensor",
                        per_channel=R.get(name).per_channel_last)]
        out += [c for c in hit if c not in out]
    return out


def parse_sizes(text) -> list[int]:
    try:
        sizes = sorted({int(s) for s in str(text).split(",") if s.strip()})
    except ValueError:
        raise QDQError(f"--sizes {text!r}: expected comma-separated log2 element counts, e.g. 10,14,18,22,24",
                       arg="--sizes") from None
    if not sizes or sizes[0] < 0 or sizes[-1] > 30:
        raise QDQError(f"--sizes {text!r}: log2 sizes must lie in 0..30 (the issue measures 10..26)", arg="--sizes")
    return sizes


def make_inputs(case: Case, n: int, seed: int = 0) -> dict:
    """Keyword arguments of ``case.op`` with ``n`` float32 elements of data (normal, scale 2)."""
    spec = case.spec
    rng = np.random.default_rng(seed + n)
    c = min(CHANNELS, n) if case.per_channel else None
    shape = (n // c, c) if c else (n,)
    kw = dict(case.attrs)
    for inp in spec.inputs:
        if inp.role in ("data", "grad"):
            kw[inp.name] = (rng.standard_normal(shape, dtype=np.float32) * np.float32(2)).astype(np.float32)
        elif inp.role in ("min", "max"):
            v = np.float32(-1.5 if inp.role == "min" else 2.0)
            if c and (spec.per_channel_last or case.attrs.get("axis", -1) >= 0):
                ramp = np.linspace(0.5, 1.5, c, dtype=np.float32)
                kw[inp.name] = (v * ramp).astype(np.float32)
            else:
                kw[inp.name] = v
        elif inp.role == "num_bits":
            kw[inp.name] = np.int32(8)
    return kw


def data_inputs(case: Case) -> list[str]:
    return [i.name for i in case.spec.inputs if i.role in ("data", "grad")]


def io_bytes(case: Case, kw: dict) -> int:
    """Bytes of the data-sized arrays read plus the data-sized result written."""
    arrays = [kw[n] for n in data_inputs(case)]
    return sum(a.nbytes for a in arrays) + arrays[-1].nbytes


def copy_bytes(case: Case, kw: dict) -> int:
    return 2 * sum(kw[n].nbytes for n in data_inputs(case))


# -- the variants ----------------------------------------------------------------------------------

def _tf_module():
    """TensorFlow if installed (quietly), else None. Never a dependency."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf  # noqa: F401
    except Exception:
        return None
    return tf


def variant_functions(case: Case, kw: dict, targets: list[str], want_tf: bool) -> dict[tuple[str, str], Callable]:
    """(variant, target) -> a zero-argument callable. Target-independent variants use target '-'."""
    from . import raw_ops
    from .oracle import raw_ops as oracle_ops
    fns: dict[tuple[str, str], Callable] = {}
    data = [kw[n] for n in data_inputs(case)]
    fns[("copy", "-")] = (lambda: [a.copy() for a in data]) if len(data) > 1 else (lambda: data[0].copy())
    api = getattr(raw_ops, case.op)
    for t in targets:
        fns[("api", t)] = (lambda t=t: api(**kw, target=t))
        fns[("device", t)] = _device_function(case, kw, t)
    oracle = getattr(oracle_ops, case.op)
    fns[("oracle", "-")] = lambda: oracle(**kw)
    if want_tf and case.tf:
        tf = _tf_module()
        if tf is not None:
            tf_op = getattr(tf.raw_ops, case.op)

            def run_tf():
                out = tf_op(**kw)
                return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else out.numpy()
            fns[("tf", "-")] = run_tf
    return fns


def _device_function(case: Case, kw: dict, target: str):
    from . import execute
    from .validation import bind
    call = bind(case.op, kw)
    fn, args, _ = execute.prepare(call, target)
    go = fn.prepare(args)
    go.api_driver = fn.pick_driver(args) if hasattr(fn, "pick_driver") else fn.driver
    return go


def _time_once(f) -> float:
    t0 = time.perf_counter()
    r = f()
    t = time.perf_counter() - t0
    del r
    return t


def _check_exact(case: Case, got, want, kw: dict) -> bool:
    from .oracle.numerics import bit_equal
    spec = case.spec
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for name, g, w in zip(spec.outputs, got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return False
        if name in spec.sum_outputs and not bit_equal(g, w):
            grads = kw["gradients"].astype(np.float64)
            axes = tuple(range(grads.ndim - w.ndim))
            n = grads.size // max(w.size, 1)
            bound = max(n - 1, 0) * np.finfo(np.float32).eps * np.abs(grads).sum(axis=axes)
            if not np.all(np.abs(g.astype(np.float64) - w.astype(np.float64)) <= bound):
                return False
        elif not bit_equal(g, w):
            return False
    return True


# -- measuring -------------------------------------------------------------------------------------

def measure_case(case: Case, log2n: int, targets: list[str], repeat: int, want_tf: bool,
                 log: Callable[[str], None] = lambda s: None) -> list[dict]:
    n = 1 << log2n
    kw = make_inputs(case, n)
    fns = variant_functions(case, kw, targets, want_tf)
    rows: dict[tuple[str, str], dict] = {}
    exact: dict[str, bool] = {}
    oracle_result = fns[("oracle", "-")]()
    for key, f in fns.items():  # warm up (compiles, pools), and check each api result once
        r = f()
        if key[0] == "api":
            exact[key[1]] = _check_exact(case, r, oracle_result, kw)
        del r
    del oracle_result
    gc.collect()
    times: dict[tuple[str, str], list[float]] = {k: [] for k in fns}
    first = {k: _time_once(f) for k, f in fns.items()}
    reps = {k: max(1, min(repeat, max(3, int(SLOW_BUDGET_S / max(first[k], 1e-9))))) for k in fns}
    for k in fns:
        times[k].append(first[k])
    for r in range(1, repeat):
        for k, f in fns.items():
            if r < reps[k]:
                times[k].append(_time_once(f))
    copy_med = statistics.median(times[("copy", "-")])
    b_io, b_copy = io_bytes(case, kw), copy_bytes(case, kw)
    for (variant, target), ts in times.items():
        med = statistics.median(ts)
        nbytes = b_copy if variant == "copy" else b_io
        f = fns[(variant, target)]
        driver = getattr(f, "api_driver", None) if variant == "api" else getattr(f, "driver", None)
        if variant == "api":
            driver = fns[("device", target)].api_driver
        rows[(variant, target)] = {
            "case": case.name, "op": case.op, "attrs": dict(case.attrs), "kind": case.kind,
            "range_from": case.range_from, "per_channel": case.per_channel,
            "log2n": log2n, "elements": n, "variant": variant, "target": target, "driver": driver,
            "median_s": med, "min_s": min(ts), "runs": len(ts), "bytes": nbytes,
            "gbps": nbytes / med / 1e9 if med > 0 else None,
            "ratio_to_copy": med / copy_med if copy_med > 0 else None,
            "exact": exact.get(target) if variant == "api" else None,
        }
    log(f"  {case.name} 2^{log2n}: " + ", ".join(
        f"{v}{'' if t == '-' else '@' + t} {rows[(v, t)]['median_s'] * 1e3:.2f} ms" for v, t in rows))
    return list(rows.values())


def measure_latency(targets: list[str], repeat: int, calls: int = 200) -> list[dict]:
    """Per-call time of a 16-element FakeQuantWithMinMaxArgs (median over ``repeat`` batches)."""
    case = CASES[0]
    kw = make_inputs(case, LATENCY_ELEMENTS)
    fns = variant_functions(case, kw, targets, want_tf=True)
    out = []
    for (variant, target), f in fns.items():
        if variant == "copy":
            continue
        for _ in range(20):
            f()
        batches = []
        for _ in range(max(repeat, 5)):
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            batches.append((time.perf_counter() - t0) / calls)
        out.append({"case": case.name, "elements": LATENCY_ELEMENTS, "variant": variant, "target": target,
                    "median_us": statistics.median(batches) * 1e6, "min_us": min(batches) * 1e6,
                    "calls": calls * len(batches)})
    return out


def evaluate_goals(rows: list[dict], latency: list[dict]) -> list[dict]:
    """The issue's goals, from the rows at 2^24 (api variant, each target), and the 16-element call."""
    goals = []
    at = {(r["case"], r["variant"], r["target"]): r for r in rows if r["log2n"] == GOAL_LOG2N}
    cases = {c.name: c for c in CASES}
    targets = sorted({r["target"] for r in rows if r["variant"] == "api"})
    for t in targets:
        for (name, variant, target), r in sorted(at.items()):
            if variant != "api" or target != t:
                continue
            case = cases.get(name)
            if case is None:
                continue
            if case.kind == "gradient":
                goal, what, ratio = "gradient", "x copy of its inputs", r["ratio_to_copy"]
            elif case.kind == "per-channel":
                base = at.get((case.compare_to, "api", t))
                if base is None:
                    continue
                goal, what = "per-channel vs per-tensor", f"x {case.compare_to}"
                ratio = r["median_s"] / base["median_s"]
            elif case.range_from == "data":
                goal, what, ratio = "per-tensor range from data", "x copy", r["ratio_to_copy"]
            else:
                goal, what, ratio = "per-tensor given range", "x copy", r["ratio_to_copy"]
            goals.append({"goal": goal, "case": name, "target": t, "measure": what, "value": ratio,
                          "limit": GOALS[goal], "met": ratio is not None and ratio <= GOALS[goal]})
    for lat in latency:
        if lat["variant"] == "api":
            goals.append({"goal": "16-element call (us)", "case": lat["case"], "target": lat["target"],
                          "measure": "us per call", "value": lat["median_us"], "limit": GOALS["16-element call (us)"],
                          "met": lat["median_us"] <= GOALS["16-element call (us)"]})
    return goals


def machine_info() -> dict:
    info = {"platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        from importlib.metadata import version
        info["iree_runtime"] = version("iree-base-runtime")
        info["iree_compiler"] = version("iree-base-compiler")
    except Exception:
        pass
    tf = sys.modules.get("tensorflow")
    info["tensorflow"] = getattr(tf, "__version__", None) if tf else None
    return info


def run_bench(cases: list[Case], targets: list[str], sizes: list[int], repeat: int = 7, tf: bool = True,
              latency: bool = True, log: Callable[[str], None] = lambda s: None) -> dict:
    """Measure every case at every size on every target; the results as a JSON-able dict."""
    from . import runtime
    from . import targets as T
    runnable, skipped = [], {}
    for t in targets:
        ok, why = T.get(t).availability()
        (runnable.append(t) if ok else skipped.__setitem__(t, why))
    rows = []
    for case in cases:
        for k in sizes:
            rows += measure_case(case, k, runnable, repeat, tf, log)
            gc.collect()
            runtime.trim()
    lat = measure_latency(runnable, repeat) if latency else []
    copies = [r for r in rows if r["variant"] == "copy" and not r["case"].endswith("Gradient")
              and r["case"] != "QuantizeAndDequantizeV4Grad"]
    big = max((r["log2n"] for r in copies), default=None)
    copy_bw = statistics.median([r["gbps"] for r in copies if r["log2n"] == big]) if big is not None else None
    info = machine_info()
    info["copy_gbps"] = copy_bw
    info["copy_gbps_at_log2n"] = big
    return {"machine": info,
            "config": {"targets": runnable, "skipped_targets": skipped, "sizes_log2": sizes, "repeat": repeat,
                       "cases": [c.name for c in cases], "tf": info["tensorflow"] is not None,
                       "task_threshold_bytes": runtime.task_threshold(),
                       "task_max_bytes": runtime.task_max_bytes()},
            "results": rows, "latency": lat, "goals": evaluate_goals(rows, lat)}


# -- reporting -------------------------------------------------------------------------------------

def format_table(res: dict) -> str:
    lines = []
    m = res["machine"]
    bw = m.get("copy_gbps")
    lines.append(f"machine: {m.get('cpu', m['machine'])}, {m['cpus']} CPUs; numpy {m['numpy']}, "
                 f"IREE {m.get('iree_runtime', '?')}, TensorFlow {m.get('tensorflow') or 'not installed'}")
    if bw:
        lines.append(f"copy bandwidth: {bw:.1f} GB/s (x.copy(), 2^{m['copy_gbps_at_log2n']} float32, read + write)")
    for t, why in res["config"].get("skipped_targets", {}).items():
        lines.append(f"skipped target {t}: {why}")
    hdr = f"{'case':44s} {'log2n':>5s} {'variant':8s} {'target':7s} {'driver':10s} {'median':>10s} {'GB/s':>7s} {'x copy':>7s} {'exact':>5s}"
    lines += ["", hdr, "-" * len(hdr)]
    order = {v: i for i, v in enumerate(VARIANTS)}
    rows = sorted(res["results"], key=lambda r: (r["case"], r["log2n"], order.get(r["variant"], 9), r["target"]))
    prev = None
    for r in rows:
        if prev is not None and (r["case"], r["log2n"]) != prev:
            lines.append("")
        prev = (r["case"], r["log2n"])
        exact = "" if r["exact"] is None else ("yes" if r["exact"] else "NO")
        lines.append(f"{r['case']:44s} {r['log2n']:5d} {r['variant']:8s} {r['target']:7s} {r['driver'] or '-':10s} "
                     f"{_fmt_time(r['median_s']):>10s} {r['gbps'] or 0:7.2f} {r['ratio_to_copy'] or 0:7.2f} {exact:>5s}")
    if res.get("latency"):
        lines += ["", f"per-call time, {LATENCY_ELEMENTS} elements ({res['latency'][0]['case']}):"]
        for r in res["latency"]:
            lines.append(f"  {r['variant']:8s} {r['target']:7s} {r['median_us']:9.1f} us  (min {r['min_us']:.1f})")
    if res.get("goals"):
        lines += ["", f"goals (issue 7) at 2^{GOAL_LOG2N} float32 through the public API:"]
        for g in res["goals"]:
            lines.append(f"  {'met ' if g['met'] else 'MISS'} {g['goal']:28s} {g['case']:44s} {g['target']:6s} "
                         f"{g['value']:8.2f} {g['measure']} (goal <= {g['limit']:g})")
    return "\n".join(lines)


def _fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} us"


def plot(res: dict, path: str) -> bool:
    """A PNG of GB/s against size, one panel per case. False (and a message) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("qdqc bench: skipping the plot: matplotlib is not installed (pip install 'qdq-compiler[plot]')",
              file=sys.stderr)
        return False
    cases = list(dict.fromkeys(r["case"] for r in res["results"]))
    ncol = 3 if len(cases) > 4 else max(1, len(cases))
    nrow = math.ceil(len(cases) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.6 * nrow), squeeze=False)
    styles = {"copy": ("k", "--"), "oracle": ("tab:gray", ":"), "tf": ("tab:orange", "-."),
              "api": (None, "-"), "device": (None, (0, (4, 1)))}
    colors = ["tab:blue", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    targets = sorted({r["target"] for r in res["results"] if r["target"] != "-"})
    for ax, case in zip(axes.flat, cases):
        rows = [r for r in res["results"] if r["case"] == case]
        for v in VARIANTS:
            for t in (["-"] if v in ("copy", "oracle", "tf") else targets):
                pts = sorted((r["log2n"], r["gbps"]) for r in rows if r["variant"] == v and r["target"] == t)
                if not pts:
                    continue
                color, ls = styles[v]
                color = color or colors[targets.index(t) % len(colors)]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, linestyle=ls, marker="o",
                        markersize=3, label=v if t == "-" else f"{v} {t}")
        ax.set_title(case, fontsize=9)
        ax.set_xlabel("log2(float32 elements)")
        ax.set_ylabel("GB/s")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    m = res["machine"]
    fig.suptitle(f"qdqc bench: {m.get('cpu', m['machine'])}, {m['cpus']} CPUs, copy "
                 f"{(m.get('copy_gbps') or 0):.1f} GB/s", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return True


def main(args) -> int:
    cases = select_cases(getattr(args, "ops", None))
    targets = [t.strip() for t in (getattr(args, "targets", None) or "cpu").split(",") if t.strip()]
    from . import targets as T
    for t in targets:
        T.get(t)  # unknown names are an error; unavailable ones are skipped with the reason
    sizes = parse_sizes(getattr(args, "sizes", None) or "10,14,18,22,24")
    repeat = int(getattr(args, "repeat", 7) or 7)
    if repeat < 1:
        raise QDQError(f"--repeat {repeat}: must be >= 1", arg="--repeat")

    def log(s):
        print(s, file=sys.stderr, flush=True)
    res = run_bench(cases, targets, sizes, repeat, tf=True, latency=True, log=log)
    print(format_table(res))
    if getattr(args, "json", None):
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
        print(f"wrote {args.json}", file=sys.stderr)
    if getattr(args, "plot", None):
        if plot(res, args.plot):
            print(f"wrote {args.plot}", file=sys.stderr)
    return 0
