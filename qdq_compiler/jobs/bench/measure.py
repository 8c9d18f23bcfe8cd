"""Timing the variants of each case, interleaved round by round, and checking the api results for exactness."""
from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from importlib.metadata import version
from typing import Callable

import numpy as np

from ... import aten, device_sessions, execute, mx, onnx_ops, raw_ops, runtime
from ... import targets as T
from ...numerics import bit_equal
from ...oracle import aten as oracle_aten
from ...oracle import mx as oracle_mx
from ...oracle import onnx_ops as oracle_onnx
from ...oracle import raw_ops as oracle_ops
from ...validation import bind, public_sum_agrees
from . import machine_load, tf_process, torch_process
from .cases import (CASES, FRAMEWORKS, LATENCY_ELEMENTS, Case, copy_bytes, data_inputs, io_bytes, make_inputs,
                    range_of)

# A variant whose single run takes longer than this many seconds is repeated fewer times (at least 3).
SLOW_BUDGET_S = 20.0


# -- the variants ----------------------------------------------------------------------------------

# Each op namespace's public functions, compiled and NumPy (the api and oracle variants call them).
PUBLIC = {"tf": raw_ops, "aten": aten, "onnx": onnx_ops, "mx": mx}
ORACLES = {"tf": oracle_ops, "aten": oracle_aten, "onnx": oracle_onnx, "mx": oracle_mx}


def variant_functions(case: Case, kw: dict, targets: list[str], frameworks=FRAMEWORKS) -> dict[tuple[str, str], Callable]:
    """(variant, target) -> a zero-argument callable. Target-independent variants use target '-'."""
    fns: dict[tuple[str, str], Callable] = {}
    data = [kw[n] for n in data_inputs(case)]
    fns[("copy", "-")] = (lambda: [a.copy() for a in data]) if len(data) > 1 else (lambda: data[0].copy())
    api = getattr(PUBLIC[case.spec.namespace], case.spec.function_name)
    for t in targets:
        fns[("api", t)] = (lambda t=t: api(**kw, target=t, semantics=case.semantics))
        fns[("device", t)] = _device_function(case, kw, t)
    oracle = getattr(ORACLES[case.spec.namespace], case.spec.function_name)
    fns[("oracle", "-")] = lambda: oracle(**kw, semantics=case.semantics)
    # TensorFlow and PyTorch are timed in processes of their own (tf_process, torch_process), after these
    return fns


def _device_function(case: Case, kw: dict, target: str):
    spec = case.spec   # the public arguments as the namespace's functions convert them (aten: switches, shapes)
    call = bind(case.op, spec.family.public_arguments(spec, dict(kw)), semantics=case.semantics)
    fn, args, view = execute.prepare(call, target)
    go = fn.prepare(args, execute.caller_storage(call, fn, view))
    go.api_driver = fn.pick_driver(args) if hasattr(fn, "pick_driver") else fn.driver
    return go


def _time_once(f) -> float:
    t0 = time.perf_counter()
    r = f()
    t = time.perf_counter() - t0
    del r
    return t


def check_exact(case: Case, got, want, kw: dict) -> bool:
    """Whether ``got`` equals the oracle's ``want`` bit for bit (float sums: within their rounding bound)."""
    spec = case.spec
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for name, g, w in zip(spec.outputs, got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return False
        if name in spec.sum_outputs and not bit_equal(g, w):  # policy 6: a sum's order is free
            if not public_sum_agrees(case.op, kw, name, g, w):
                return False
        elif not bit_equal(g, w):
            return False
    return True


# -- measuring -------------------------------------------------------------------------------------

def measure_case(case: Case, log2n: int, targets: list[str], repeat: int, frameworks=FRAMEWORKS,
                 log: Callable[[str], None] = lambda s: None) -> list[dict]:
    """The result rows of one case at 2^log2n elements: one per (variant, target)."""
    n = 1 << log2n
    kw = make_inputs(case, n)
    fns = variant_functions(case, kw, targets, frameworks)
    rows: dict[tuple[str, str], dict] = {}
    exact: dict[str, bool] = {}
    oracle_result = fns[("oracle", "-")]()
    for key, f in fns.items():  # warm up (compiles, pools), and check each api result once
        r = f()
        if key[0] == "api":
            exact[key[1]] = check_exact(case, r, oracle_result, kw)
        del r
    del oracle_result
    gc.collect()
    times: dict[tuple[str, str], list[float]] = {k: [] for k in fns}
    load0 = machine_load.sample()
    first = {k: _time_once(f) for k, f in fns.items()}
    reps = {k: max(1, min(repeat, max(3, int(SLOW_BUDGET_S / max(first[k], 1e-9))))) for k in fns}
    for k in fns:
        times[k].append(first[k])
    for r in range(1, repeat):
        for k, f in fns.items():
            if r < reps[k]:
                times[k].append(_time_once(f))
    load = machine_load.between(load0, machine_load.sample())
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
            "range_from": case.range_from, "per_channel": case.per_channel, "compare_to": case.compare_to,
            "log2n": log2n, "elements": n, "variant": variant, "target": target, "driver": driver,
            "median_s": med, "min_s": min(ts), "p90_s": _p90(ts), "runs": len(ts), "bytes": nbytes,
            "gbps": nbytes / med / 1e9 if med > 0 else None,
            "ratio_to_copy": med / copy_med if copy_med > 0 else None,
            "exact": exact.get(target) if variant == "api" else None, "machine_load": load,
        }
    if "tf" in frameworks and case.tf:
        rows.update(_tf_rows(case, log2n, kw, repeat, b_io, copy_med, log))
    if "torch" in frameworks and case.torch:
        rows.update(_torch_rows(case, log2n, kw, repeat, b_io, copy_med, log))
    log(f"  {case.name} 2^{log2n}: " + ", ".join(
        f"{v}{'' if t == '-' else '@' + t} {rows[(v, t)]['median_s'] * 1e3:.2f} ms" for v, t in rows))
    return list(rows.values())


def _p90(ts: list[float]) -> float:
    """The 90th percentile of a run's times (nearest rank): with the minimum, how widely the calls spread."""
    s = sorted(ts)
    return s[min(len(s) - 1, max(0, -(-9 * len(s) // 10) - 1))]


def _framework_rows(case: Case, log2n: int, res: dict, names: tuple[str, str], driver: str, nbytes: int,
                    copy_med: float, extra: dict) -> dict:
    """A framework's two rows from its process's result: names[0] the NumPy round trip, names[1] the op alone; each
    ratio to a copy is to the copy timed in the framework's process where it timed one (else ours)."""
    out = {}
    copy_med = res.get("copy", {}).get("median_s") or copy_med
    for variant, key in zip(names, ("round_trip", "op")):
        med = res[key]["median_s"]
        out[(variant, "-")] = {
            "case": case.name, "op": case.op, "attrs": dict(case.attrs), "kind": case.kind,
            "range_from": case.range_from, "per_channel": case.per_channel, "compare_to": case.compare_to,
            "log2n": log2n, "elements": 1 << log2n, "variant": variant, "target": "-", "driver": driver,
            "median_s": med, "min_s": res[key]["min_s"], "p90_s": res[key].get("p90_s"), "runs": res[key]["runs"],
            "bytes": nbytes,
            "gbps": nbytes / med / 1e9 if med > 0 else None,
            "ratio_to_copy": med / copy_med if copy_med > 0 else None, "exact": None, "own_process": True, **extra}
    return out


def _tf_rows(case: Case, log2n: int, kw: dict, repeat: int, nbytes: int, copy_med: float, log) -> dict:
    """TensorFlow's rows, timed in its own process: "tf" (NumPy in, NumPy out) and "tf-op" (the op alone on
    resident tensors); under tf-xla TF's own XLA. None where TF is not there or failed (logged)."""
    res = tf_process.measure(case.op, case.semantics, kw, {i.name for i in case.spec.inputs}, repeat)
    if "error" in res:
        log(f"  {case.name} 2^{log2n}: TensorFlow not timed: {res['error']}")
        return {}
    return _framework_rows(case, log2n, res, ("tf", "tf-op"), "xla" if res["xla"] else "eager", nbytes, copy_med,
                           {"tensorflow": res["tensorflow"], "tf_threads": res.get("threads")})


def _torch_rows(case: Case, log2n: int, kw: dict, repeat: int, nbytes: int, copy_med: float, log) -> dict:
    """PyTorch's rows, timed in its own process: "torch" (NumPy in, NumPy out) and "torch-op" (the op alone on a
    resident tensor), its nearest op on the same data and range. None where PyTorch is not there (logged)."""
    lo, hi = range_of(case, kw)
    res = torch_process.measure(case.torch, kw[data_inputs(case)[0]], lo, hi, repeat)
    if "error" in res:
        log(f"  {case.name} 2^{log2n}: PyTorch not timed: {res['error']}")
        return {}
    return _framework_rows(case, log2n, res, ("torch", "torch-op"), "eager", nbytes, copy_med,
                           {"torch": res["torch"], "torch_threads": res["threads"]})


def measure_latency(targets: list[str], repeat: int, calls: int = 200, frameworks=FRAMEWORKS) -> list[dict]:
    """Per-call time of a 16-element FakeQuantWithMinMaxArgs (median over ``repeat`` batches)."""
    case = CASES[0]
    kw = make_inputs(case, LATENCY_ELEMENTS)
    fns = variant_functions(case, kw, targets, frameworks)
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


def machine_info() -> dict:
    """The CPU, core count and library versions the numbers were taken with."""
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
        info["iree_runtime"] = version("iree-base-runtime")
        info["iree_compiler"] = version("iree-base-compiler")
    except Exception:
        pass
    # TensorFlow and PyTorch run in processes of their own: run_bench fills in the versions they reported
    info["tensorflow"] = info["torch"] = info["torch_threads"] = None
    return info


def run_bench(cases: list[Case], targets: list[str], sizes: list[int], repeat: int = 7, tf: bool = True, torch: bool = True,
              latency: bool = True, log: Callable[[str], None] = lambda s: None, latency_calls: int = 200) -> dict:
    """Measure every case at every size on every target; the results as a JSON-able dict (``latency_calls``:
    calls per timed batch of the per-call latency rows)."""
    frameworks = tuple(name for name, on in (("tf", tf), ("torch", torch)) if on)
    runnable, skipped = [], {}
    for t in targets:
        ok, why = T.get(t).availability()
        (runnable.append(t) if ok else skipped.__setitem__(t, why))
    # Each device stays open for the whole run: a Vulkan device closes after 1 s idle (Limits.idle_device_s),
    # and reopening it takes tens of ms that no call of the op costs (issue 29.11).
    unpins = [device_sessions.pin(d) for d in dict.fromkeys(T.get(t).driver for t in runnable)
              if device_sessions.idle_seconds(d) is not None]
    try:
        rows = []
        for case in cases:
            for k in sizes:
                rows += measure_case(case, k, runnable, repeat, frameworks, log)
                gc.collect()
                runtime.trim()
        lat = measure_latency(runnable, repeat, latency_calls, frameworks=frameworks) if latency else []
    finally:
        for unpin in unpins:
            unpin()
    copies = [r for r in rows if r["variant"] == "copy" and not r["case"].endswith("Gradient")
              and r["case"] != "QuantizeAndDequantizeV4Grad"]
    big = max((r["log2n"] for r in copies), default=None)
    copy_bw = statistics.median([r["gbps"] for r in copies if r["log2n"] == big]) if big is not None else None
    info = machine_info()
    info["tensorflow"] = next((r["tensorflow"] for r in rows if r.get("tensorflow")), None)
    info["torch"] = next((r["torch"] for r in rows if r.get("torch")), None)
    info["torch_threads"] = next((r["torch_threads"] for r in rows if r.get("torch_threads")), None)
    info["torch_python"] = torch_process.torch_python()[0] if info["torch"] else None
    info["tensorflow_python"] = tf_process.tf_python()[0] if info["tensorflow"] else None
    info["copy_gbps"] = copy_bw
    info["copy_gbps_at_log2n"] = big
    return {"machine": info,
            "config": {"targets": runnable, "skipped_targets": skipped, "sizes_log2": sizes, "repeat": repeat,
                       "cases": [c.name for c in cases], "tf": info["tensorflow"] is not None,
                       "torch": info["torch"] is not None,
                       "task_threshold_bytes": runtime.task_threshold(),
                       "task_max_bytes": runtime.task_max_bytes()},
            "results": rows, "latency": lat}
