#!/usr/bin/env python3
"""16-bit (float16, bfloat16) golden vectors of the six FakeQuant ops, semantics "tf-cpu".

TensorFlow has no 16-bit FakeQuant kernel. The project's stated definition (spec "Project policy" item 8,
qdq_compiler/ops/fake_quant.py ``widened``) is: widen the 16-bit inputs exactly to float32, compute as
TF's float32 CPU kernel does, round each result once to the 16-bit type. This script applies that
definition with TF 2.21's own float32 kernel:

  for every success case of qdq_compiler/goldens/<Op>.json (float32; error cases and cases with a
  "deviation" are skipped), and for each of float16 and bfloat16:
    * round every float input to the 16-bit type (round to nearest even, ml_dtypes/NumPy; NaN stays NaN;
      a value beyond the type's range becomes +-inf), then widen it back exactly to float32;
    * run ``tf.raw_ops.<Op>`` eagerly on the CPU on those float32 values, with the case's attrs (Args'
      min/max stay the float32 attributes of the float32 case);
    * round each output once to the 16-bit type.

Writes qdq_compiler/goldens/half/<Op>.json: {"op", "tf_version", "semantics": "tf-cpu", "definition",
"cases"}, cases in the format of qdq_compiler/goldens/README.md, inputs and outputs in the 16-bit dtype
("float16" / "bfloat16"), ids "<float32 id>-f16" / "<float32 id>-bf16". A case whose rounded inputs and
attrs repeat an earlier case of the same op and type is dropped, as is one TF raises on (counted and
printed). Args/ArgsGradient cases whose float32 min or max attribute is beyond the 16-bit type's range
are kept, marked ``"deviation": "range_not_representable"``: the package rejects those calls (its
grid ends would be infinities in the storage type) although the definition gives an answer.

Run from the repository root under the TF virtualenv (never imported by the package or its tests):

    python3 -m venv /work/tfvenv && /work/tfvenv/bin/pip install tensorflow-cpu==2.21.0 numpy ml_dtypes
    /work/tfvenv/bin/python tools/goldens_16bit_fake_quant.py      # ~15 s on 2 cores

All cases run in one forked child (each in its own child only if that one dies). The output is
byte-identical from run to run. The op metadata (inputs, outputs, sums) comes from the package's registry,
and the forked-child runner, hex floats and the lazy TF import from tools/make_goldens.py.
"""
import argparse
import json
import os
import re
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_goldens import OPS as REGISTRY, fork_run, hexf, tf_mod  # noqa: E402  (the op registry, the CPU goldens'
#                                                                   child runner, hex floats, lazy TF)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TF_VERSION = "2.21.0"
SEMANTICS = "tf-cpu"
DEFINITION = ("FakeQuant in float16/bfloat16 is TF's float32 CPU kernel applied to the exact float32 value "
              "of each 16-bit input, each result rounded once (to nearest even) to the 16-bit type.")
F32 = np.float32
TYPES = (("float16", np.float16, "f16"), ("bfloat16", ml_dtypes.bfloat16, "bf16"))

ARGS, VARS, PC = "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel"
ARGSG, VARSG, PCG = ARGS + "Gradient", VARS + "Gradient", PC + "Gradient"
# op -> (input names in TF's order, output names, outputs that are float sums), from the op registry (make_goldens
# imports it: the tool runs from the repository root)
META = {op: (REGISTRY[op].input_names, REGISTRY[op].outputs, tuple(REGISTRY[op].sum_outputs))
        for op in (ARGS, VARS, PC, ARGSG, VARSG, PCG)}
OPS = tuple(META)
VALUE_TAGS = ("nan", "inf", "neg_zero", "subnormal", "tie", "subnormal_intermediate")


# ---------------------------------------------------------------------------------------------- encoding

def enc_array(dtype, arr):
    arr = np.asarray(arr)
    return {"dtype": dtype, "shape": [int(d) for d in arr.shape],
            "values": [hexf(v) for v in arr.astype(np.float64).ravel()]}


def dec_array(entry):
    assert entry["dtype"] == "float32", entry["dtype"]
    vals = [float("nan") if v in ("nan", "-nan") else float.fromhex(v) for v in entry["values"]]
    return np.array(vals, np.float64).astype(F32).reshape(entry["shape"])   # exact: float32 values


def to_16(a, T):
    """float32 -> the 16-bit type, round to nearest even (overflow to +-inf, NaN stays NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(a, F32).astype(T)


def attr_values(attrs):
    """The attrs as TF takes them: Args' min/max (float32 hex) as Python floats, the rest as written."""
    return {k: (float(F32(float(v) if v in ("nan", "inf", "-inf") else float.fromhex(v))) if k in ("min", "max")
                else v) for k, v in attrs.items()}


def value_tags(arrs, T):
    fin = ml_dtypes.finfo(T)
    out = []
    with np.errstate(invalid="ignore"):
        for tag, hit in (("nan", lambda a: np.isnan(a)), ("inf", lambda a: np.isinf(a)),
                         ("neg_zero", lambda a: (a == 0) & np.signbit(a)),
                         ("subnormal", lambda a: (a != 0) & (np.abs(a) < float(fin.tiny)))):
            if any(hit(a.astype(F32)).any() for a in arrs):
                out.append(tag)
    return out


# ----------------------------------------------------------------- running TF (only in forked children)

def run_case(job):
    """One call of the float32 eager CPU kernel: {"ok", "outputs" (float32 arrays) | "error"}."""
    op, attrs, inputs = job
    tf = tf_mod()
    try:
        with tf.device("/CPU:0"):
            res = getattr(tf.raw_ops, op)(**{n: tf.constant(a, tf.float32) for n, a in inputs.items()}, **attrs)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        return {"ok": True, "outputs": [np.asarray(r.numpy()) for r in res]}
    except Exception as e:  # noqa: BLE001
        msg = getattr(e, "message", None) or str(e)
        return {"ok": False, "error": "%s: %s" % (type(e).__name__, msg.strip().splitlines()[0] if msg.strip() else "")}


def run_batch(jobs):
    return [run_case(j) for j in jobs]


def run_all(jobs):
    res, err, status = fork_run(run_batch, jobs)
    if res is not None and os.WIFEXITED(status):
        return res
    print("batch child failed (%s); one child per case" % (err.strip().splitlines()[-1:] or ["?"])[0], flush=True)
    out = []
    for j in jobs:
        r, err, status = fork_run(run_case, j)
        if r is None or not os.WIFEXITED(status):
            m = re.search(r"(Check failed: [^\n]*)", err)
            r = {"ok": False, "error": "abort: %s" % (m.group(1) if m else "child died, status %d" % status)}
        out.append(r)
    return out


# ------------------------------------------------------------------------------------------- the cases

def source_cases(goldens_dir, op):
    with open(os.path.join(goldens_dir, op + ".json")) as fh:
        data = json.load(fh)
    assert data["op"] == op and data["tf_version"] == TF_VERSION, (op, data.get("tf_version"))
    return [c for c in data["cases"] if "outputs" in c["expect"] and not c.get("deviation")]


def derive(case, dtype, T, short):
    """(job for TF, the 16-bit case without outputs, its dedup key) of one float32 case."""
    op = case["op"]
    ins, _, _ = META[op]
    assert list(case["inputs"]) == [n for n in ins if n in case["inputs"]], (case["id"], list(case["inputs"]))
    f32 = {n: dec_array(e) for n, e in case["inputs"].items()}
    narrow = {n: to_16(a, T) for n, a in f32.items()}
    wide = {n: a.astype(F32) for n, a in narrow.items()}   # exact
    changed = sum(int(((a.view(np.uint32) != w.view(np.uint32)) & ~(np.isnan(a) & np.isnan(w))).sum())
                  for a, w in zip(f32.values(), wide.values()))
    inputs = {n: enc_array(dtype, a) for n, a in narrow.items()}
    tags = [t for t in case["tags"] if t not in VALUE_TAGS or (t in ("tie", "subnormal_intermediate") and not changed)]
    tags += value_tags(list(narrow.values()), T) + [dtype, "rounded" if changed else "exact"]
    note = "%s; %s" % (case["note"], "%d input value%s rounded to %s" % (changed, "s" * (changed != 1), dtype)
                       if changed else "inputs exact in %s" % dtype)
    new = {"id": "%s-%s" % (case["id"], short), "op": op, "attrs": case["attrs"], "inputs": inputs,
           "expect": None, "tags": list(dict.fromkeys(tags)), "note": note}
    if "sum_outputs" in case:
        new["sum_outputs"] = case["sum_outputs"]
    if op in (ARGS, ARGSG):
        top = float(ml_dtypes.finfo(T).max)
        at = attr_values(case["attrs"])
        bad = [k for k in ("min", "max") if k in at and abs(at[k]) > top]
        if bad:
            new["deviation"] = "range_not_representable"
            new["note"] += "; %s beyond %s's range: the package rejects the call" % (" and ".join(bad), dtype)
    key = json.dumps([case["attrs"], inputs], sort_keys=True)
    return (op, attr_values(case["attrs"]), wide), new, key


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--goldens", default=os.path.join(ROOT, "qdq_compiler", "goldens"),
                    help="the folder of the float32 tf-cpu goldens")
    ap.add_argument("--out", default=os.path.join(ROOT, "qdq_compiler", "goldens", "half"))
    args = ap.parse_args()
    t0 = time.time()
    jobs, cases, stats = [], [], {}
    for op in OPS:
        src = source_cases(args.goldens, op)
        for dtype, T, short in TYPES:
            seen = set()
            st = stats[(op, dtype)] = {"source": len(src), "duplicate": 0, "tf_error": [], "kept": 0}
            for c in src:
                job, new, key = derive(c, dtype, T, short)
                if key in seen:
                    st["duplicate"] += 1
                    continue
                seen.add(key)
                jobs.append(job)
                cases.append((new, T))
    tf = tf_mod()
    assert tf.__version__ == TF_VERSION, tf.__version__
    print("running %d cases in a child ..." % len(jobs), flush=True)
    t1 = time.time()
    results = run_all(jobs)
    t_tf = time.time() - t1
    final = {op: [] for op in OPS}
    for (new, T), r in zip(cases, results):
        dtype = new["inputs"]["inputs"]["dtype"]
        st = stats[(new["op"], dtype)]
        if not r["ok"]:
            st["tf_error"].append("%s: %s" % (new["id"], r["error"]))
            continue
        outs = META[new["op"]][1]
        assert len(r["outputs"]) == len(outs), (new["id"], len(r["outputs"]))
        for o in r["outputs"]:
            assert o.dtype == F32, (new["id"], o.dtype)
        new["expect"] = {"outputs": {n: enc_array(dtype, to_16(o, T)) for n, o in zip(outs, r["outputs"])}}
        final[new["op"]].append(new)
        st["kept"] += 1
    os.makedirs(args.out, exist_ok=True)
    total = 0
    for op, lst in final.items():
        path = os.path.join(args.out, op + ".json")
        with open(path, "w") as fh:
            fh.write('{"op": %s, "tf_version": %s, "semantics": %s, "definition": %s, "cases": [\n' % (
                json.dumps(op), json.dumps(TF_VERSION), json.dumps(SEMANTICS), json.dumps(DEFINITION)))
            fh.write(",\n".join(json.dumps(c, separators=(", ", ": ")) for c in lst))
            fh.write("\n]}\n")
        total += os.path.getsize(path)
    print("\n%-44s %-9s %6s %6s %6s %6s %6s" % ("op", "dtype", "f32", "dup", "tf_err", "kept", "dev"))
    for (op, dtype), st in stats.items():
        dev = sum(1 for c in final[op] if c["inputs"]["inputs"]["dtype"] == dtype and c.get("deviation"))
        print("%-44s %-9s %6d %6d %6d %6d %6d" % (op, dtype, st["source"], st["duplicate"], len(st["tf_error"]),
                                                   st["kept"], dev))
    for st in stats.values():
        for e in st["tf_error"]:
            print("dropped (TF raised):", e)
    print("bytes written: %d (%s); TF ran %.1f s, total %.1f s" % (total, args.out, t_tf, time.time() - t0))


if __name__ == "__main__":
    main()
