"""Every golden case (TF 2.21 CPU kernels, 16-bit FakeQuant, XLA; PyTorch 2.13's CPU kernels) on one target;
counts and failures as JSON. The aten cases run every dtype here (the suite samples some off cpu)."""
import json, sys, time
sys.path.insert(0, "tests")
from qdq_compiler import raw_ops as compiled, targets as T
import qdq_compiler as q
from checks import assert_matches_case
import goldens
import test_aten
from goldens import kwargs_of
target = sys.argv[1]
out = sys.argv[2]
print(target, T.get(target).availability(), flush=True)


def tf_check(sem):
    def check(case):
        kw = kwargs_of(case)
        assert_matches_case(case, getattr(compiled, case["op"])(**kw, target=target, semantics=sem), kw)
    return check


def aten_check(case):
    fn = getattr(q.aten, case["op"])
    test_aten._check(lambda **kw: fn(**kw, target=target), case, sums_free=True)


aten_cases = [c for op in test_aten.ATEN_OPS for c in test_aten._cases(op) if "outputs" in c["expect"]]
res = {}
for name, check, cases in (("tf-cpu", tf_check("tf-cpu"), goldens.success_cases()),
                           ("half", tf_check("tf-cpu"), [c for c in goldens.half_cases() if "outputs" in c["expect"] and not c.get("deviation")]),
                           ("xla", tf_check("tf-xla"), [c for c in goldens.xla_cases() if "outputs" in c["expect"]]),
                           ("torch-cpu", aten_check, aten_cases)):
    t0 = time.time()
    fails = []
    for case in cases:
        try:
            check(case)
        except Exception as e:
            fails.append(f"{case['op']}:{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
    res[name] = {"cases": len(cases), "failures": len(fails), "first": fails[:60], "seconds": time.time() - t0}
    print(name, len(cases), "cases,", len(fails), "differ,", f"{time.time() - t0:.1f} s", flush=True)
    for f in fails[:10]:
        print("  ", f, flush=True)
json.dump(res, open(out, "w"), indent=1)
