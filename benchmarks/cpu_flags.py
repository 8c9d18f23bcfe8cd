"""Compare llvm-cpu compile-flag variants of the ``cpu`` target: speed and exactness.

    python benchmarks/cpu_flags.py                   # timings at 2^24 and the exactness check at 2^20
    python benchmarks/cpu_flags.py --goldens         # also every TF golden case through each variant
    python benchmarks/cpu_flags.py --log2n 22 --cases FakeQuantWithMinMaxArgs --variants default,peel

Each variant appends flags to the ``cpu`` target's own (a later ``--iree-llvmcpu-target-cpu`` overrides the
earlier one; ``-fma`` after the CPU's feature list removes FMA). For each benchmark case of ``qdqc bench``
it reports, on the driver the runtime picks for that size:

    kernel   the compiled function with its inputs bound once and its results left on the device
    api      NumPy in, NumPy out through the runtime (import, invoke, zero-copy result), the way run() does
    exact    the api result against the NumPy oracle at --check-log2n elements (bit for bit; sums within
             the float32 summation bound), random normal data plus ties, +-0, +-inf, NaN and subnormals

against ``x.copy()`` of the data-sized inputs, all interleaved round by round. With ``--goldens`` each
variant also runs the 3,782 TF 2.21 golden cases (qdq_compiler/goldens) in a subprocess whose ``cpu`` target
carries the variant's flags.

The variants (see benchmarks/README.md for what they do to the code):
    default     the cpu target as it is (x86-64-v2, no FMA; IREE's default "mask" vector strategy)
    peel        + --iree-llvmcpu-vector-pproc-strategy=peel (a vector main loop and a scalar remainder)
    v3-nofma    + x86-64-v3 (AVX2) with -fma
    v3-nofma-peel
    v4-nofma-peel  x86-64-v4 (AVX-512) with -fma, peel (only on a CPU with AVX-512)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from qdq_compiler import execute, runtime, targets  # noqa: E402
from qdq_compiler.jobs import bench  # noqa: E402
from qdq_compiler.validation import bind  # noqa: E402

PEEL = ("--iree-llvmcpu-vector-pproc-strategy=peel",)
V3 = ("--iree-llvmcpu-target-cpu=x86-64-v3", "--iree-llvmcpu-target-cpu-features=-fma")
V4 = ("--iree-llvmcpu-target-cpu=x86-64-v4", "--iree-llvmcpu-target-cpu-features=-fma")
VARIANTS = {
    "default": (),
    "peel": PEEL,
    "v3-nofma": V3,
    "v3-nofma-peel": V3 + PEEL,
    "v4-nofma-peel": V4 + PEEL,
}


def has_avx512() -> bool:
    try:
        return "avx512f" in open("/proc/cpuinfo").read()
    except OSError:
        return False


def variant_function(call, extra: tuple[str, ...]):
    """The LoadedFunction of ``call``'s artifact compiled with the cpu flags plus ``extra``, its args and a
    callable giving the caller storage it writes its result into (None where it takes none)."""
    _, args, view = execute.prepare(call, "cpu")
    shape, override, _, tuning = execute._shape_plan(call, "cpu")
    cfg = execute._runtime_config(call, "cpu", shape, override, tuning)
    art = execute.artifact_for(cfg, extra_flags=extra)
    t = targets.get("cpu")
    fn = runtime.load(t.driver, art.key, art.vmfb, cfg.op, import_alignment=runtime.import_alignment(t.backend, art.flags))
    return fn, args, (lambda: execute.caller_storage(call, fn, view))


def special_inputs(case: bench.Case, log2n: int) -> dict:
    """The bench inputs with ties, signed zeros, infinities, NaN and subnormals sprinkled in."""
    kw = bench.make_inputs(case, 1 << log2n, seed=7)
    rng = np.random.default_rng(11)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-40, 0.5, -0.5, 1.5, 2.5, 3.0e38],
                        dtype=np.float32)
    for name in bench.data_inputs(case):
        a = kw[name].reshape(-1)
        idx = rng.choice(a.size, size=min(a.size, 4096), replace=False)
        a[idx] = rng.choice(specials, size=idx.size)
    if case.range_from != "data":  # a NaN with a data range makes the whole tensor NaN (policy 5)
        a = kw[bench.data_inputs(case)[-1]].reshape(-1)
        a[rng.choice(a.size, size=min(a.size, 64), replace=False)] = np.nan
    return kw


def exact(case, extra, log2n) -> bool:
    from qdq_compiler.oracle import compute
    kw = special_inputs(case, log2n)
    call = bind(case.op, kw)
    fn, args, storage = variant_function(call, extra)
    got = fn(args, storage())
    x = call.data
    got = [got[0].reshape(x.shape)] + [g.reshape(call.arrays[case.spec.input("min").name].shape) for g in got[1:]]
    return bench.check_exact(case, tuple(got), compute(call), kw)


def time_variants(case, variants: dict, log2n: int, repeat: int) -> dict:
    kw = bench.make_inputs(case, 1 << log2n)
    call = bind(case.op, kw)
    data = [kw[n] for n in bench.data_inputs(case)]
    fns = {("copy", "-"): (lambda: [a.copy() for a in data])}
    driver = None
    for name, extra in variants.items():
        fn, args, storage = variant_function(call, extra)
        go = fn.prepare(args, storage())
        driver = go.driver
        fns[("kernel", name)] = go
        fns[("api", name)] = (lambda fn=fn, args=args, storage=storage: fn(args, storage()))
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.perf_counter()
            r = f()
            times[k].append(time.perf_counter() - t0)
            del r
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"driver": driver, "copy_ms": med[("copy", "-")] * 1e3,
            "variants": {name: {"kernel_ms": med[("kernel", name)] * 1e3, "api_ms": med[("api", name)] * 1e3,
                                "kernel_x_copy": med[("kernel", name)] / med[("copy", "-")],
                                "api_x_copy": med[("api", name)] / med[("copy", "-")]}
                         for name in variants}}


GOLDEN_SCRIPT = r"""
import dataclasses, sys
sys.path.insert(0, {tests!r})
from qdq_compiler import targets as T
t = T.TARGETS["cpu"]
T.TARGETS["cpu"] = dataclasses.replace(t, flags=t.flags + tuple({extra!r}))
from qdq_compiler import raw_ops
from goldens import success_cases, kwargs_of
from checks import assert_matches_case
bad = 0
cases = success_cases()
for case in cases:
    kw = kwargs_of(case)
    try:
        assert_matches_case(case, getattr(raw_ops, case["op"])(**kw, target="cpu"), kw)
    except Exception as e:
        bad += 1
        if bad <= 5:
            print("MISMATCH", case["op"], case["id"], str(e).splitlines()[0][:200])
print("GOLDENS", len(cases) - bad, "of", len(cases))
"""


def goldens(extra) -> str:
    code = GOLDEN_SCRIPT.format(tests=str(ROOT / "tests"), extra=list(extra))
    env = dict(os.environ)
    env.setdefault("QDQ_CACHE_DIR", str(ROOT / ".qdq_cache"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(ROOT))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("GOLDENS", "MISMATCH"))]
    return "; ".join(lines) or f"failed: {p.stderr.strip().splitlines()[-1:]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", help="comma-separated bench case or op names (default: all)")
    ap.add_argument("--variants", help=f"comma-separated, from {', '.join(VARIANTS)} (default: all that run here)")
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--check-log2n", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--goldens", action="store_true", help="also run the TF golden cases per variant")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    names = a.variants.split(",") if a.variants else [v for v in VARIANTS if has_avx512() or not v.startswith("v4")]
    variants = {n: VARIANTS[n] for n in names}
    cases = bench.select_cases(a.cases)
    out = {"log2n": a.log2n, "check_log2n": a.check_log2n, "variants": {n: list(f) for n, f in variants.items()},
           "cases": {}, "goldens": {}}
    print(f"{'case':44s} {'variant':14s} {'exact':>5s} {'kernel ms':>10s} {'x copy':>7s} {'api ms':>9s} {'x copy':>7s}  driver")
    for case in cases:
        res = time_variants(case, variants, a.log2n, a.repeat)
        res["exact"] = {n: exact(case, f, a.check_log2n) for n, f in variants.items()}
        out["cases"][case.name] = res
        print(f"{case.name:44s} {'copy':14s} {'':>5s} {res['copy_ms']:10.2f} {1:7.2f}")
        for n, r in res["variants"].items():
            print(f"{'':44s} {n:14s} {'yes' if res['exact'][n] else 'NO':>5s} {r['kernel_ms']:10.2f} "
                  f"{r['kernel_x_copy']:7.2f} {r['api_ms']:9.2f} {r['api_x_copy']:7.2f}  {res['driver']}", flush=True)
    if a.goldens:
        for n, f in variants.items():
            out["goldens"][n] = goldens(f)
            print(f"goldens {n}: {out['goldens'][n]}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
