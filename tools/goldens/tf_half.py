"""The 16-bit FakeQuant definition run through TF (the half set, semantics tf-cpu).

TF has no float16/bfloat16 FakeQuant kernel. The project's definition (spec "Project policy" item 8,
qdq_compiler/ops/fake_quant.py ``widened``): widen each 16-bit input exactly to float32, compute as TF's
float32 CPU kernel does, round each result once (to nearest even) to the 16-bit type. So this runner is
the tf-cpu runner's eager float32 call on the widened inputs, with the rounding after it.
"""
from qdq_compiler.ops import OPS

from .caselib import F32
from .child import load_tf, run_all
from .fmt import enc_outputs
from .gen_half import TYPES, to_16
from .tf_cpu import run_eager

DEFINITION = ("FakeQuant in float16/bfloat16 is TF's float32 CPU kernel applied to the exact float32 value "
              "of each 16-bit input, each result rounded once (to nearest even) to the 16-bit type.")


def widened(case):
    """The float32 call the definition makes: the case's attrs, its inputs' exact float32 values."""
    return {"op": case["op"], "attrs": case["attrs"], "inputs": {n: ("float32", a) for n, a in case["wide"].items()}}


def run(cases, stats):
    """Each case's expectation (its outputs rounded to its type); a case TF raises on is dropped (counted in
    ``stats``). Returns the cases kept."""
    load_tf()  # imported in the parent, before forking; run in children only
    print("running %d cases in a child ..." % len(cases), flush=True)
    kept = []
    for c, r in zip(cases, run_all(run_eager, [widened(c) for c in cases])):
        st = stats[(c["op"], c["dtype"])]
        if not r["ok"]:
            st["tf_error"].append("%s: %s: %s" % (c["id"], r["error"]["kind"], r["error"]["message"]))
            continue
        outs = OPS[c["op"]].outputs
        assert len(r["outputs"]) == len(outs) and all(o.dtype == F32 for o in r["outputs"]), c["id"]
        c["expect"] = enc_outputs(outs, [to_16(o, TYPES[c["dtype"]][0]) for o in r["outputs"]])
        kept.append(c)
        st["kept"] += 1
    return kept


def report(final, stats):
    """Per op and type: float32 source cases, duplicates, TF errors, kept, deviations."""
    print("\n%-44s %-9s %6s %6s %6s %6s %6s" % ("op", "dtype", "f32", "dup", "tf_err", "kept", "dev"))
    for (op, dtype), st in stats.items():
        dev = sum(1 for c in final[op] if c["inputs"]["inputs"]["dtype"] == dtype and c.get("deviation"))
        print("%-44s %-9s %6d %6d %6d %6d %6d" % (op, dtype, st["source"], st["duplicate"], len(st["tf_error"]),
                                                   st["kept"], dev))
    for st in stats.values():
        for e in st["tf_error"]:
            print("dropped (TF raised):", e)
