"""Compile here (no GPU) every cuda artifact the device check needs (tools/device_check/README.md): the
matrix (both semantics, static cells at their real shapes), the goldens, the FMA programs, the bench cases.
The driver is stubbed out: each call compiles its artifact and stops before loading it."""
import sys
import time

sys.path.insert(0, "tests")
from qdq_compiler import targets as T, runtime, raw_ops as compiled, cli
from qdq_compiler.jobs.bench import cases as BC, measure as BM
orig = T._driver_available
T._driver_available = lambda d: (True, "") if d == "cuda" else orig(d)
class Stop(Exception): pass
def _load(*a, **k): raise Stop()
runtime.load = _load
import goldens
from goldens import kwargs_of
t0 = time.time()
n = err = 0
def go(f):
    global n, err
    try:
        f()
    except Stop:
        n += 1
    except Exception as e:
        err += 1
        print("ERR", type(e).__name__, str(e)[:200])
from qdq_compiler import execute, oracle
def fake_run(call, target, static=False, out=None):
    try:
        execute.plan_for(call, target, static)
    except Stop:
        pass
    return oracle.compute(call)
real_run, execute.run = execute.run, fake_run
cli.main(["validate", "--targets", "cuda", "--semantics", "tf-cpu,tf-xla,torch-cpu", "--no-progress", "--report", "/tmp/pre.json"])
execute.run = real_run
print("matrix", time.time() - t0, flush=True)
for case in goldens.success_cases():
    go(lambda: getattr(compiled, case["op"])(**kwargs_of(case), target="cuda"))
for case in goldens.half_cases():
    if "outputs" in case["expect"] and not case.get("deviation"):
        go(lambda: getattr(compiled, case["op"])(**kwargs_of(case), target="cuda"))
for case in goldens.xla_cases():
    if "outputs" in case["expect"]:
        go(lambda: getattr(compiled, case["op"])(**kwargs_of(case), target="cuda", semantics="tf-xla"))
import qdq_compiler as q
import test_aten
for op in test_aten.ATEN_OPS:
    for case in test_aten._cases(op):
        if "outputs" in case["expect"]:
            go(lambda: getattr(q.aten, op)(**test_aten._kwargs(case), target="cuda"))
print("goldens", n, err, time.time() - t0, flush=True)
import test_fma_equivalence as FE
for dt in ("float32", "float64"):
    for u in ("hardware", "emulated"):
        go(lambda: FE.fma_program("cuda", dt, u))
        go(lambda: FE.fma_program("cpu", dt, u))
for c in BC.select_cases(None, semantics=("tf-cpu", "tf-xla", "torch-cpu")):
    for k in (4, 10, 14, 18, 20, 22, 24):
        kw = BC.make_inputs(c, 1 << k)
        go(lambda: BM._device_function(c, kw, "cuda"))
print("all", n, err, time.time() - t0)
