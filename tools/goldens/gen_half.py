"""The half set's cases (float16, bfloat16 FakeQuant, semantics tf-cpu), derived from the float32 tf-cpu files.

TF has no 16-bit FakeQuant kernel, so there is nothing to generate: every float32 success case without a
"deviation" is taken once per 16-bit type, its float inputs rounded to the type. A case whose rounded
inputs and attrs repeat an earlier one of the same op and type is dropped. Args/ArgsGradient cases whose
float32 min or max is beyond the type's range are kept, marked ``"deviation": "range_not_representable"``:
the package rejects those calls (its grid ends would be infinities in the storage type).
"""
import json
import os

import ml_dtypes
import numpy as np

from qdq_compiler.ops import OPS

from .caselib import ARGS, ARGSG, F32, PC, PCG, VARS, VARSG, attr, value_tags
from .child import TF_VERSION
from .fmt import dec_array, enc_array

OPS_16 = (ARGS, VARS, PC, ARGSG, VARSG, PCG)  # the ops whose 16-bit form is "widen, float32 kernel, round"
TYPES = {"float16": (np.float16, "f16"), "bfloat16": (ml_dtypes.bfloat16, "bf16")}
VALUE_TAGS = ("nan", "inf", "neg_zero", "subnormal", "tie", "subnormal_intermediate")


def to_16(a, T):
    """float32 -> the 16-bit type, round to nearest even (overflow to +-inf, NaN stays NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(a, F32).astype(T)


def source_cases(goldens_dir, op):
    """The float32 success cases of one op's tf-cpu file that carry no deviation."""
    with open(os.path.join(goldens_dir, op + ".json")) as fh:
        data = json.load(fh)
    assert data["op"] == op and data["tf_version"] == TF_VERSION, (op, data.get("tf_version"))
    return [c for c in data["cases"] if "outputs" in c["expect"] and not c.get("deviation")]


def derive(case, dtype):
    """(the 16-bit case, its dedup key) of one float32 case; ``case["wide"]`` holds the exact float32 values
    of its rounded inputs, what TF runs on."""
    op, (T, short) = case["op"], TYPES[dtype]
    assert list(case["inputs"]) == [n for n in OPS[op].input_names if n in case["inputs"]], case["id"]
    for e in case["inputs"].values():
        assert e["dtype"] == "float32", (case["id"], e["dtype"])
    f32 = {n: dec_array(e) for n, e in case["inputs"].items()}
    narrow = {n: to_16(a, T) for n, a in f32.items()}
    wide = {n: a.astype(F32) for n, a in narrow.items()}   # exact
    changed = sum(int(((a.view(np.uint32) != w.view(np.uint32)) & ~(np.isnan(a) & np.isnan(w))).sum())
                  for a, w in zip(f32.values(), wide.values()))
    tags = [t for t in case["tags"] if t not in VALUE_TAGS or (t in ("tie", "subnormal_intermediate") and not changed)]
    tags += value_tags([a.astype(F32) for a in narrow.values()], tiny=float(ml_dtypes.finfo(T).tiny), empty=False)
    tags += [dtype, "rounded" if changed else "exact"]
    note = "%s; %s" % (case["note"], "%d input value%s rounded to %s" % (changed, "s" * (changed != 1), dtype)
                       if changed else "inputs exact in %s" % dtype)
    new = {"id": "%s-%s" % (case["id"], short), "op": op, "attrs": case["attrs"], "dtype": dtype,
           "inputs": {n: (dtype, a) for n, a in narrow.items()}, "wide": wide,
           "tags": list(dict.fromkeys(tags)), "note": note}
    if "sum_outputs" in case:
        new["sum_outputs"] = case["sum_outputs"]
    if op in (ARGS, ARGSG):
        top = float(ml_dtypes.finfo(T).max)
        bad = [k for k in ("min", "max") if k in case["attrs"] and abs(attr(new, k)) > top]
        if bad:
            new["deviation"] = "range_not_representable"
            new["note"] += "; %s beyond %s's range: the package rejects the call" % (" and ".join(bad), dtype)
    key = json.dumps([case["attrs"], {n: enc_array(dtype, a) for n, a in narrow.items()}], sort_keys=True)
    return new, key


def candidates(goldens_dir, ops, dtypes):
    """Every op's 16-bit cases, type by type, duplicates dropped; and per (op, dtype) counts."""
    cases, stats = [], {}
    for op in ops:
        src = source_cases(goldens_dir, op)
        for dtype in dtypes:
            seen = set()
            st = stats[(op, dtype)] = {"source": len(src), "duplicate": 0, "tf_error": [], "kept": 0}
            for c in src:
                new, key = derive(c, dtype)
                if key in seen:
                    st["duplicate"] += 1
                    continue
                seen.add(key)
                cases.append(new)
    return cases, stats
