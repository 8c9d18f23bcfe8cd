"""The tf-cpu reference runner: TF 2.21's CPU kernels, eager and in graph mode.

Every success case runs eagerly; every 7th one (and every spec vector) also in a ``tf.function`` with a
fixed input signature, and the two must agree bit for bit. Each error case runs in a child of its own per
mode, because some abort the process: the eager error is the expectation, and an error only graph mode
raises (a shape function) is recorded with the eager outputs beside it. V1 ``QuantizeAndDequantize`` runs
from a GraphDef with ``versions.producer = 21`` in a ``tf.compat.v1.Session`` (modern graphs reject it).
"""
import re

import numpy as np

from qdq_compiler.ops import OPS

from .caselib import F32, NP_DTYPES, V1, attr, attr_values
from .child import error_result, load_tf, probe, run_all, scrub
from .fmt import enc_outputs, hexf, same_bits

# TF's message without node names, stack context or nondeterministic attr lists
CLEAN = [(r"\{\{function_node [^}]*\}\}\s*", "", 0), (r"\s*\[Op:[^\]]*\]( name: .*)?$", "", re.S),
         (r"^Graph execution error:\s*", "", 0), (r"^Detected at node .*?\(most recent call last\):\n", "", 0),
         (r"^Node: '[^']*'\n", "", 0), (r"\n+\t? *\[\[.*$", "", re.S), (r"\n\t; NodeDef: .*$", "", re.S),
         (r": <tf\.Tensor: .*$", "", re.S), (r" with these attrs: \[.*$", "", re.S),
         (r"(Could not find device for node: \{\{node \w+\}\}) = .*$", r"\1", re.S),
         (r" for '\{\{node [^}]*\}\} = .*$", "", re.S)]


def v1_session(case):
    """V1 runs from a producer-21 GraphDef in a Session (in modern graphs TF rejects it)."""
    return case["op"] == V1 and case.get("v1_mode") != "modern"


def tensors(tf, case, names):
    """The case's inputs as TF tensors (bfloat16 ones are held as float32 and cast)."""
    return [tf.cast(tf.constant(np.asarray(a, F32)), tf.bfloat16) if dt == "bfloat16" else
            tf.constant(np.asarray(a, NP_DTYPES[dt])) for dt, a in (case["inputs"][n] for n in names)]


def run_tf(case, mode):
    """The op's outputs from TF, eager or in a ``tf.function`` with a fixed input signature (mode "graph")."""
    tf, names = load_tf(), list(case["inputs"])
    if v1_session(case):
        return run_v1_session(tf, case)
    at = attr_values(case)

    def fn(*args):
        return getattr(tf.raw_ops, case["op"])(**dict(zip(names, args)), **at)

    if mode == "graph":
        fn = tf.function(fn, autograph=False, input_signature=[
            tf.TensorSpec(case["inputs"][n][1].shape, getattr(tf, case["inputs"][n][0])) for n in names])
    res = fn(*tensors(tf, case, names))
    return [np.asarray(t.numpy() if hasattr(t, "numpy") else t) for t in (res if isinstance(res, (list, tuple))
                                                                           else [res])]


def run_v1_session(tf, case):
    from tensorflow.core.framework import graph_pb2, types_pb2  # noqa: PLC0415
    dt, x = case["inputs"]["input"]
    tenum = {"float32": types_pb2.DT_FLOAT, "float64": types_pb2.DT_DOUBLE, "float16": types_pb2.DT_HALF,
             "bfloat16": types_pb2.DT_BFLOAT16}[dt]
    gd = graph_pb2.GraphDef()
    gd.versions.producer = 21
    n = gd.node.add()
    n.name, n.op = "x", "Placeholder"
    n.attr["dtype"].type = tenum
    q = gd.node.add()
    q.name, q.op = "q", V1
    q.input.append("x")
    q.attr["T"].type = tenum
    for k in case["attrs"]:
        v = attr(case, k)
        setattr(q.attr[k], "b" if isinstance(v, bool) else "i" if isinstance(v, int) else "f", v)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(gd, name="")
    with tf.compat.v1.Session(graph=graph) as sess:
        return [np.asarray(sess.run("q:0", feed_dict={"x:0": np.asarray(x, NP_DTYPES[dt])}))]


def run_mode(case, mode):
    """{"ok": True, "outputs"} or {"ok": False, "error": {"kind", "message"}}."""
    try:
        return {"ok": True, "outputs": run_tf(case, mode)}
    except Exception as e:  # noqa: BLE001
        return error_result(e, lambda m: scrub(m, CLEAN))


def run_eager(case):
    return run_mode(case, "eager")


def run_checked(case):
    """Eager, and in graph mode too where the case asks for the cross-check."""
    return {"eager": run_mode(case, "eager"), "graph": run_mode(case, "graph") if case.get("graph_check") else None}


def err_dict(e, mode):
    d = {"kind": e["kind"], "message": e["message"], "mode": mode}
    if e["kind"] == "abort" and e.get("signal") is not None:
        d["signal"] = e["signal"]
    return d


def run(cases, errors):
    """Run the candidates: success cases get "result", error cases "expect"; a case TF disagrees about
    moves between the lists. Returns the notes to print."""
    load_tf()  # imported in the parent, before forking; run in children only
    print("running %d success candidates in a child ..." % len(cases), flush=True)
    problems, n_graph, n_spec = [], 0, 0
    for c, r in zip(list(cases), run_all(run_checked, cases)):
        e, g = (r["eager"], r["graph"]) if "eager" in r else (r, None)  # (r: a child that died on its own)
        if not e["ok"]:  # stays in ``cases`` too (without a result), so its id keeps its place
            c["expect_error"] = True
            c["tags"].append("error")
            errors.append(c)
            problems.append("unexpected eager error %s: %s" % (c["id"], e["error"]["message"]))
            continue
        c["result"] = e["outputs"]
        if g is not None:
            n_graph += 1
            if not g["ok"]:
                problems.append("graph mode failed for success case %s: %s" % (c["id"], g["error"]["message"]))
            elif not all(same_bits(a, b) for a, b in zip(e["outputs"], g["outputs"])):
                problems.append("graph/eager mismatch %s" % c["id"])
        for name, exp, got in zip(OPS[c["op"]].outputs, c.get("spec_expect", ()), e["outputs"]):
            got = np.asarray(got).ravel()
            exp = np.array(exp, got.dtype)
            if not same_bits(exp, got):
                problems.append("%s %s %s: spec %s tf %s" % (
                    "info: zero signs" if c.get("deviation") == "zero_sign" else "SPEC MISMATCH", c["id"], name,
                    [hexf(v) for v in exp], [hexf(v) for v in got]))
        n_spec += "spec_expect" in c
    print("probing %d error cases ..." % len(errors), flush=True)
    for c in list(errors):
        e = probe(run_mode, c, "eager")
        gmode = None if v1_session(c) else probe(run_mode, c, "graph")
        if not e["ok"]:
            c["expect"] = {"error": err_dict(e["error"], "graph" if v1_session(c) else "eager")}
            if gmode is not None:
                c["graph_error"] = None if gmode["ok"] else err_dict(gmode["error"], "graph")
                if gmode["ok"]:
                    problems.append("graph mode succeeds where eager fails: %s (%s)" % (c["id"], c["note"]))
        elif gmode is not None and not gmode["ok"]:
            c["expect"] = {"error": err_dict(gmode["error"], "graph")}
            c["eager_outputs"] = enc_outputs(OPS[c["op"]].outputs, e["outputs"])["outputs"]
            c["tags"].append("graph_only")
        else:
            problems.append("declared error case succeeds in both modes: %s (%s)" % (c["id"], c["note"]))
            c["result"] = e["outputs"]
            c["tags"].remove("error")
            errors.remove(c)
            cases.append(c)
            continue
        if c["expect"]["error"]["kind"] == "abort":
            c["tags"].append("abort")
    print("graph-mode cross-checked success cases: %d; spec vector cases compared with the spec's hex values: %d"
          % (n_graph, n_spec))
    return problems
