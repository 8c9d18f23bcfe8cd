"""Every golden case (TF 2.21 CPU kernels, 16-bit FakeQuant, XLA) on one target; counts and failures as JSON."""
import json, sys, time
sys.path.insert(0, "tests")
from qdq_compiler import raw_ops as compiled, targets as T
from checks import assert_matches_case
import goldens
from goldens import kwargs_of
target = sys.argv[1]
out = sys.argv[2]
print(target, T.get(target).availability(), flush=True)
res = {}
for name, sem, cases in (("tf-cpu", "tf-cpu", goldens.success_cases()),
                         ("half", "tf-cpu", [c for c in goldens.half_cases() if "outputs" in c["expect"] and not c.get("deviation")]),
                         ("xla", "tf-xla", [c for c in goldens.xla_cases() if "outputs" in c["expect"]])):
    t0 = time.time()
    fails = []
    for case in cases:
        kw = kwargs_of(case)
        try:
            assert_matches_case(case, getattr(compiled, case["op"])(**kw, target=target, semantics=sem), kw)
        except Exception as e:
            fails.append(f"{case['op']}:{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
    res[name] = {"cases": len(cases), "failures": len(fails), "first": fails[:60], "seconds": time.time() - t0}
    print(name, len(cases), "cases,", len(fails), "differ,", f"{time.time() - t0:.1f} s", flush=True)
    for f in fails[:10]:
        print("  ", f, flush=True)
json.dump(res, open(out, "w"), indent=1)
