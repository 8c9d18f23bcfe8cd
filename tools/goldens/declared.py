"""tf-cpu cases declared by hand rather than generated: the spec's V01..V65 vectors and the error cases.

The vectors come from the section-6 table of the spec (``--spec``) with the spec's own outputs, which the
runner compares with TF's; the error cases are the rows of edge_data.ERRORS, each of which TF is expected
to reject. Neither draws random numbers, so they cannot disturb the generators' streams.
"""
import re

import numpy as np

from qdq_compiler.ops import OPS

from . import edge_data as edge
from .caselib import (ARGS, F32, F64, NP_DTYPES, PC, V1, V2, V3, V4, V4G, VARS, dtname, mkcase, resolve_named,
                      scalar, tensor)
from .fmt import f32hex, unhex
from .gen_fq import fq_inputs


def error_cases(ops):
    """The cases of edge_data.ERRORS for the registered ``ops``."""
    out = []
    for group, base, rows in edge.ERRORS:
        for op in (op for op in group if op in ops):
            spec = OPS[op]
            for attrs, ins, note, *extra in rows:
                extra = dict(*extra)
                T = extra.pop("T", "float32")
                inputs = {}  # by role; "ones" (like the data) last
                for i in sorted(spec.inputs, key=lambda i: ins.get(i.role, base.get(i.role)) == "ones"):
                    dt, v = T if i.dtype == "T" else i.dtype, ins.get(i.role, base.get(i.role))
                    if isinstance(v, tuple):
                        dt, v = v
                    if i.role not in ins and op.startswith(PC) and i.role in ("min", "max"):
                        v = [v] * inputs["data"][1].shape[-1]  # a base range: once per channel
                    a = np.ones_like(inputs["data"][1]) if v == "ones" else resolve_named(v)
                    inputs[i.role] = (dt, tensor(v, NP_DTYPES[dt]) if a is None else np.asarray(a, NP_DTYPES[dt]))
                inputs = {i.name: inputs[i.role] for i in spec.inputs}
                at = {k: f32hex(scalar(v, F32)) if k in spec.attr_map and spec.attr_map[k].kind is float else v
                      for k, v in attrs.items()}
                out.append(mkcase(op, at, inputs, ["error"], note, expect_error=True, **extra))
    return out


# ------------------------------------------------------------------------- spec vectors (section 6)

def parse_spec_vectors(path):
    """The rows of the spec's section-6 table: id, op, attrs, inputs, the printed outputs, note."""
    rows = []
    with open(path) as fh:
        for line in fh:
            m = re.match(r"^\| (V\d\d) \| (.*)\|\s*$", line)
            if not m:
                continue
            cols = [c.strip() for c in m.group(2).split(" | ")]
            attrs = dict(p.split(": ", 1) for p in cols[1].split(", ") if ": " in p)
            ins = {}
            for part in cols[2].split("; "):
                name, shp, scal, vals = re.match(r"(\w+)(?:\[([\d, ]*)\]|\((scalar)\)): (.*)$", part.strip()).groups()
                ins[name] = ([] if scal else [int(d) for d in shp.split(",") if d.strip()],
                             [v.strip() for v in vals.split(",")])
            outs = [[(re.search(r"\[([^\]]+)\]", tok) or [None, tok.strip()])[1] for tok in
                     re.match(r"out(\d): (.*)$", part.strip()).group(2).split(", ")] for part in cols[3].split("; ")]
            rows.append(dict(id=m.group(1), op=cols[0], attrs={k.strip(): v.strip() for k, v in attrs.items()}, ins=ins,
                             outs=outs, note=cols[5] if len(cols) > 5 else ""))
    return rows


def spec_cases(path):
    """Cases from the spec's V01..V65 table, with the spec's outputs to compare with TF's."""
    cases, skipped = [], []
    for row in parse_spec_vectors(path):
        vid, op, a, note = row["id"], row["op"], row["attrs"], row["note"]
        T = F64 if a.get("T") == "float64" else F32
        dt = dtname(T)
        expect = [[unhex(h) for h in o] for o in row["outs"]]

        def arr(name, T=T):
            shape, vals = row["ins"][name]
            return np.array([T(float(v)) for v in vals], T).reshape(shape)

        def num(k, default, T=T):
            return T(float(a[k])) if k in a else T(default)

        def add(op_, attrs, ins, tags=("spec",), note=note, suffix="", outs=slice(None)):
            cases.append(mkcase(op_, attrs, ins, list(tags), note, id=vid + suffix, spec_expect=expect[outs]))
            return cases[-1]

        qa = {k: a[k] == "True" for k in ("signed_input", "range_given", "narrow_range") if k in a}
        qa.update({k: a[k] if k == "round_mode" else int(a[k]) for k in ("num_bits", "round_mode", "axis") if k in a})
        if op in (V4, V2):
            x = arr("input")
            C = x.shape[qa["axis"]] if qa.get("axis", -1) >= 0 else None
            mn, mx = (np.zeros(C, T), np.zeros(C, T)) if C is not None else (num("min", 0), num("max", 0))
            c = add(op, qa, {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)})
            if vid == "V19":
                c["deviation"] = "zero_sign"
        elif op == V3:
            given = "input_min" in row["ins"]
            mn, mx = (arr("input_min"), arr("input_max")) if given else (num("min", -1), num("max", 1))
            add(op, {k: v for k, v in qa.items() if k not in ("num_bits", "round_mode")},
                {"input": (dt, arr("input")), "input_min": (dt, mn), "input_max": (dt, mx),
                 "num_bits": ("int32", int(a["num_bits"]))})
        elif op == V1 + "(V1)":
            rng = {k: f32hex(float(a[k])) for k in ("input_min", "input_max") if "input_min" in a}
            add(V1, dict(qa, **rng), {"input": (dt, arr("input"))})
        elif op == V4G:
            add(op, {"axis": int(a["axis"])} if "axis" in a else {}, {k: (dt, arr(k)) for k in row["ins"]})
        elif op.startswith("FakeQuantWithMinMax"):
            at = {k: int(a[k]) if k == "num_bits" else a[k] == "True" for k in ("num_bits", "narrow_range") if k in a}
            ins = {k: ("float32", arr(k, F32)) for k in row["ins"]}
            if op.startswith(ARGS) and "min" in a:
                at.update(min=f32hex(float(a["min"])), max=f32hex(float(a["max"])))
            elif not op.startswith(ARGS) and "min" not in ins:
                ins.update(min=("float32", num("min", 0, F32)), max=("float32", num("max", 0, F32)))
            add(op, at, ins)
        elif op.startswith("tf.quantization.quantize_and_dequantize_v2+"):  # forward V4, then V4Grad with g = ones
            x, mn, mx = arr("input"), num("input_min", 0), num("input_max", 0)
            ins = {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)}
            add(V4, {"range_given": a["range_given"] == "True"}, ins, ["spec", "wrapper"],
                "forward of %s: %s" % (op, note), "-fwd", slice(0, 1))
            add(V4G, {}, dict(ins, gradients=(dt, np.ones_like(x))), ["spec", "wrapper"],
                "gradient of %s (g = ones): %s" % (op, note), "-grad", slice(1, 2))
        elif op.startswith("tf.quantization.quantize_and_dequantize+"):
            ins = {"input": (dt, arr("input")), "input_min": (dt, num("input_min", 0)),
                   "input_max": (dt, num("input_max", 0))}
            add(V2, {"range_given": a["range_given"] == "True"}, ins, ["spec", "wrapper"],
                "forward of %s (its gradient is straight-through, no op)" % op, "-fwd", slice(0, 1))
        elif op.startswith("tf.quantization.fake_quant_with_min_max_vars+"):
            x = arr("inputs")
            ins = fq_inputs(x, num("min", 0, F32), num("max", 0, F32))
            add(VARS, {}, ins, ["spec", "wrapper"], "forward of " + op, "-fwd", slice(0, 1))
            add(VARS + "Gradient", {}, dict(ins, gradients=("float32", np.ones_like(x))), ["spec", "wrapper"],
                "gradient of %s (g = ones)" % op, "-grad", slice(1, None))
        else:
            skipped.append(vid)
    return cases, skipped

