"""The tf-xla reference runner: TF 2.21's XLA lowering, ``tf.function(jit_compile=True)`` on the CPU.

Every tensor input is a function argument (so XLA cannot fold it), one compiled function per op, attrs and
input dtypes. Success candidates run in one forked child, each error candidate in a child of its own (a
CHECK failure would abort the process); XLA:CPU contracts to FMA and flushes subnormals, so the files
name the host. No case reaches 32768 elements: XLA hands bigger reductions to YNNPACK.
"""
import re

import numpy as np

from .caselib import attr_values
from .child import error_result, load_tf, probe, run_all, scrub
from .fmt import same_bits
from .tf_cpu import tensors

YNN_MIN_ELEMENTS = 32768
# TF's message without node names, stack context, function names or NodeDefs
CLEAN = [(r"\{\{function_node [^}]*\}\}\s*", "", 0), (r"\s*\[Op:[^\]]*\]( name: .*)?$", "", re.S),
         (r"\n+\s*\[\[.*$", "", re.S), (r"\n\t?tf2xla conversion failed.*$", "", re.S),
         (r" for '\{\{node [^}]*\}\} = .*$", "", re.S), (r"^Graph execution error:\s*", "", 0),
         (r"RET_CHECK failure \([^)]*\) ", "RET_CHECK failure ", 0)]
_fns = {}


def clean_message(msg):
    """An MLIR verifier's own line; for an exception raised while tracing, its last line; else CLEAN."""
    m = re.search(r"error: loc\((?:fused\[[^\]]*\]|\"[^\"]*\")\): ([^\n]*)", msg)
    if m:
        return m.group(1).strip()
    if "in user code:" in msg:
        lines = [ln.strip() for ln in msg.strip().splitlines() if ln.strip()]
        msg = re.sub(r"^\w+(Error|Exception): ", "", lines[-1])
    return scrub(msg, CLEAN)


def run_xla(case):
    """The op's outputs under tf.function(jit_compile=True)."""
    tf = load_tf("3")
    names = list(case["inputs"])
    at = attr_values(case)
    key = (case["op"], tuple(sorted(at.items())), tuple((n, case["inputs"][n][0]) for n in names))
    if key not in _fns:
        raw = getattr(tf.raw_ops, case["op"])
        _fns[key] = tf.function(lambda *a: raw(**dict(zip(names, a)), **at), jit_compile=True)
    res = _fns[key](*tensors(tf, case, names))
    res = res if isinstance(res, (list, tuple)) else [res]
    return [np.asarray(r.numpy()) for r in res]


def run_case(case):
    try:
        return {"ok": True, "outputs": run_xla(case)}
    except Exception as e:  # noqa: BLE001
        return error_result(e, clean_message)


def run(cases, errors):
    """Run the candidates: success cases get "result", error cases "expect" (mode "xla"); a case XLA
    disagrees about moves between the lists. Returns the notes to print."""
    for c in cases:
        assert max(a.size for _, a in c["inputs"].values()) < YNN_MIN_ELEMENTS, c["note"]
    load_tf("3")  # imported in the parent, before forking; run in children only
    print("running %d success candidates in a child ..." % len(cases), flush=True)
    problems = []
    for c, r in zip(list(cases), run_all(run_case, cases)):
        if r["ok"]:
            c["result"] = r["outputs"]
        else:
            problems.append("expected success, XLA refused %s (%s): %s" % (c["op"], c["note"], r["error"]["message"]))
            c["tags"].append("error")
            cases.remove(c)
            errors.append(c)
    print("probing %d error candidates, one child each ..." % len(errors), flush=True)
    for c in list(errors):
        r = probe(run_case, c)
        if r["ok"]:
            problems.append("declared error succeeds under XLA: %s (%s)" % (c["op"], c["note"]))
            c["result"] = r["outputs"]
            c["tags"] = [t for t in c["tags"] if t != "error"]
            errors.remove(c)
            cases.append(c)
            continue
        c["expect"] = {"error": dict(r["error"], mode="xla")}
        if r["error"]["kind"] == "abort":
            c["tags"].append("abort")
    return problems


def oracle_check(cases, path):
    """--oracle: a numpy module's ``xla_forward(op, arrays, attrs)`` against XLA's results, per op."""
    import importlib.util  # noqa: PLC0415
    spec = importlib.util.spec_from_file_location("xla_oracle", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    print("\noracle check (%s): mismatching case ids per op" % path)
    for op in dict.fromkeys(c["op"] for c in cases):
        lst = [c for c in cases if c["op"] == op and "result" in c]
        bad = [c["id"] for c in lst if not all(
            same_bits(np.asarray(rf, o.dtype).reshape(np.shape(o)), o) for rf, o in zip(
                mod.xla_forward(op, {k: a for k, (_, a) in c["inputs"].items()}, attr_values(c)), c["result"]))]
        print("  %-44s %4d/%4d %s" % (op, len(bad), len(lst), bad[:10]))
