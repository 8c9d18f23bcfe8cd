"""Golden vectors of ONNX's QuantizeLinear and DequantizeLinear: qdq_compiler/goldens/onnx/<op>.json, each case
answered by the onnx package's reference implementation (semantics ``onnx``, opset 28) and by onnxruntime's CPU
kernels (semantics ``ort-cpu``, opset 25: its newest for these ops), or the error each gives.

Run in a virtualenv of its own (a reference framework is a tool for making test data, never a dependency):

    python3 -m venv /work/onnxvenv && /work/onnxvenv/bin/pip install onnx==1.23.2 onnxruntime==1.32.0 \
        ml_dtypes==0.6.0 numpy==2.4.6
    /work/onnxvenv/bin/python -m tools.goldens.onnx_reference [--out DIR]      # about 20 s

ml_dtypes decides some of the reference's answers: it converts bfloat16 to int32, and that cast of NaN, +-inf or a
value beyond int32 is undefined. 0.6.0 gives INT32_MIN, as NumPy does for float32 on x86 (the committed files, and
the oracle's rule for every x type); 0.7.0 gives 0, which changes 51 QuantizeLinear cases and their 51 pairs (329
elements: 96 NaN, 96 infinities, 137 finite values beyond int32), measured 2026-12-07. Each file's header records
both versions; goldens/README.md has the table.

Arrays are written as {"dtype", "shape", "codes"}: every storage type and float by its bit pattern (the code
ml_dtypes keeps in one or two bytes; float32 as its 32 bits), so a golden compares bit for bit. The pair
``QuantizeDequantizeLinear`` is each one's DequantizeLinear of its own QuantizeLinear. onnx's answers go to
goldens/onnx/<op>.json, onnxruntime's to goldens/onnx/ort/<op>.json, the same cases in the same order; the
record layout is the other sets' ({"id", "op", "attrs", "inputs", "expect", "tags", "note"}). Fixed seeds.
"""
from __future__ import annotations

import argparse
import json
import os

import ml_dtypes
import numpy as np
import onnx
import onnxruntime

from . import onnx_text
from .onnx.reference_runner import golden

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "qdq_compiler", "goldens", "onnx")
FLOATS = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
QUANTIZED = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2", "float8_e4m3fn",
             "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
FLOAT8 = QUANTIZED[8:12]


def np_type(name):
    return FLOATS.get(name) or getattr(ml_dtypes, name, None) or np.dtype(name).type


def enc(a):
    a = np.ascontiguousarray(a)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    return {"dtype": str(a.dtype), "shape": list(a.shape), "codes": [int(v) for v in a.view(width).ravel()]}


def expect(v):
    return {"error": v} if isinstance(v, str) else {"outputs": {"y": enc(v)}}


SUBNORMAL_NOTE = ("a subnormal result (of a subnormal scale): cpu and vmvx flush it (IREE's CPU threads run with "
                  "FTZ/DAZ); exact on Vulkan. qdqc validate leaves it out; tests/test_onnx.py counts it")


def with_deviation(record, v):
    """A float result with a float32 subnormal element is the one stated deviation (on FTZ targets)."""
    if not isinstance(v, str) and np.asarray(v).dtype.name in ("float32", "bfloat16"):
        f = np.asarray(v).astype(np.float32)
        if np.any((np.abs(f) < np.finfo(np.float32).tiny) & (f != 0)):
            record["deviation"] = SUBNORMAL_NOTE
    return record


def special_x(rng, n, dt, step, top):
    """Ties, quant-range edges, specials and random values around a grid of ``step``."""
    ties = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 127.5, -128.5, 255.5, 7.5, -8.5, 1.5, -1.5], np.float64) * step
    spec = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-30, -1e-30, 3e9, -3e9, top, -top,
                     top * 1.0625, -top * 1.0625, top * 1.1, 2 * top], np.float64)
    rand = rng.standard_normal(n) * step * rng.choice([1, 8, 64], n)
    x = np.concatenate([ties, spec, rand]).astype(dt)
    return x


def cases(rng):
    out = []
    for st in QUANTIZED:
        t = np_type(st)
        is_float = st.startswith("float")
        top = float(ml_dtypes.finfo(t).max) if is_float else float(ml_dtypes.iinfo(t).max)
        zp_values = [0] if st in FLOAT8 else ([0.0, -0.0, 0.5] if is_float else
                                                 sorted({0, int(ml_dtypes.iinfo(t).min), int(ml_dtypes.iinfo(t).max),
                                                         int(ml_dtypes.iinfo(t).max) // 3}))
        for dt in ("float32", "float16", "bfloat16"):
            for per_axis in (False, True):
                for zpv in zp_values:
                    step = 0.25 if not is_float else 1.0
                    scale_vals = np.array([step, 0.1, -0.3] if per_axis else [step], np.float64)
                    x = special_x(rng, 64, FLOATS[dt], step, top * step)
                    if per_axis:
                        x = np.resize(x, (2, 3, 16)).astype(FLOATS[dt])
                        scale = scale_vals.astype(FLOATS[dt])
                        zp = np.full(3, zpv).astype(t)
                    else:
                        scale = np.array(scale_vals[0]).astype(FLOATS[dt])
                        zp = np.array(zpv).astype(t)
                    for sat in ((1, 0) if st in FLOAT8 else (1,)):
                        attrs = {"axis": 1} if per_axis else {}
                        if st in FLOAT8:
                            attrs["saturate"] = sat
                        out.append(dict(storage=st, dtype=dt, per_axis=per_axis, x=x, scale=scale, zp=zp,
                                        attrs=attrs))
    # blocked along an axis, ragged last blocks included
    for st in ("int8", "uint4", "int2", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "float6_e3m2fn", "uint16"):
        t = np_type(st)
        is_float = st.startswith("float")
        for dt in ("float32", "float16"):
            for shape, axis, bs in (((3, 7, 5), 1, 3), ((4, 10), -1, 4), ((6, 8), 0, 2), ((2, 3, 70), 2, 32)):
                x = (rng.standard_normal(shape) * 4).astype(FLOATS[dt])
                sshape = list(shape)
                sshape[axis] = -(-shape[axis] // bs)
                scale = rng.uniform(0.05, 0.5, sshape).astype(FLOATS[dt])
                if is_float:
                    zp = np.zeros(sshape).astype(t)
                else:
                    info = ml_dtypes.iinfo(t)
                    zp = rng.integers(int(info.min), int(info.max) + 1, sshape).astype(t)
                for sat in ((1, 0) if st in FLOAT8 else (1,)):
                    attrs = {"axis": axis, "block_size": bs}
                    if st in FLOAT8:
                        attrs["saturate"] = sat
                    out.append(dict(storage=st, dtype=dt, per_axis=True, x=x, scale=scale, zp=zp, attrs=attrs))
    # precision=FLOAT (opset 23): a 16-bit x and scale divided in float32, the quotient not rounded to their type
    for st in ("int8", "uint4", "float8_e4m3fn", "float4_e2m1fn"):
        t = np_type(st)
        for dt in ("float16", "bfloat16"):
            # quotients up to about 60, where a 16-bit rounding of the quotient moves many off their float32 tie side
            x = (rng.standard_normal(512) * 20).astype(FLOATS[dt])
            scale = np.array(0.3).astype(FLOATS[dt])   # 0.3 is inexact in both: quotients land between their values
            out.append(dict(storage=st, dtype=dt, per_axis=False, x=x, scale=scale, zp=np.array(0).astype(t),
                            attrs={"precision": 1}))
    # scales that are subnormal, zero, negative, NaN; -0 and NaN into fp8; empty tensors
    for st in ("int8", "uint8", "float8_e4m3fn", "float8_e5m2"):
        for s in (0.0, -0.0, -0.5, np.nan, np.inf, 1e-40, 1e-5):
            x = np.array([0.0, -0.0, 1.0, -1.0, 1e-39, 3e38, np.inf, np.nan], np.float32)
            out.append(dict(storage=st, dtype="float32", per_axis=False, x=x, scale=np.array(s, np.float32),
                            zp=np.array(0).astype(np_type(st)), attrs={}))
        out.append(dict(storage=st, dtype="float32", per_axis=False, x=np.zeros((0, 3), np.float32),
                        scale=np.array(0.5, np.float32), zp=np.array(0).astype(np_type(st)), attrs={}))
    out += mixed_cases(rng)
    return out


TENSOR_PROTO = {"float32": 1, "float16": 10, "bfloat16": 16}
E8M0 = ml_dtypes.float8_e8m0fnu


def mixed_cases(rng):
    """Scales of another type than x (opset 23: float32/float16/bfloat16, opset 24: float8_e8m0fnu), DequantizeLinear's
    output_dtype, precision narrower than x, int32 data into DequantizeLinear, and float4/float6 sums near their
    midpoints with a 16-bit x (the reference adds the zero point in float32)."""
    out = []
    scales = {"float32": (0.475, [0.475, 3.1, 0.0123]), "float16": (0.475, [0.475, 3.1, 0.0123]),
              "bfloat16": (0.475, [0.475, 3.1, 0.0123]), "float8_e8m0fnu": (0.125, [0.125, 4.0, 2.0 ** -127])}
    for st in ("int8", "uint4", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "float6_e2m3fn"):
        t = np_type(st)
        is_float = st.startswith("float")
        top = float(ml_dtypes.finfo(t).max) if is_float else float(ml_dtypes.iinfo(t).max)
        for dt in ("float32", "float16", "bfloat16"):
            for sdt in ("float32", "float16", "bfloat16", "float8_e8m0fnu"):
                if sdt == dt:
                    continue
                for per_axis in (False, True):
                    one, vec = scales[sdt]
                    x = special_x(rng, 64, FLOATS[dt], one, top * one)
                    if per_axis:
                        x = np.resize(x, (2, 3, 16)).astype(FLOATS[dt])
                        scale = np.array(vec).astype(np_type(sdt))
                        zp = np.zeros(3).astype(t)
                    else:
                        scale = np.array(one).astype(np_type(sdt))
                        zp = np.array(0).astype(t)
                    attrs = {"axis": 1} if per_axis else {}
                    out.append(dict(storage=st, dtype=dt, per_axis=per_axis, x=x, scale=scale, zp=zp, attrs=attrs,
                                    dq_attrs={"output_dtype": TENSOR_PROTO[dt]}, scale_dtype=sdt))
    # precision narrower than x (float16, bfloat16: x and the scale rounded to it, the quotient too)
    for st in ("int8", "float8_e4m3fn", "float4_e2m1fn"):
        for dt, prec in (("float32", 10), ("float32", 16), ("bfloat16", 10), ("float16", 16)):
            x = (rng.standard_normal(256) * 20).astype(FLOATS[dt])
            out.append(dict(storage=st, dtype=dt, per_axis=False, x=x, scale=np.array(0.3).astype(FLOATS[dt]),
                            zp=np.array(0).astype(np_type(st)), attrs={"precision": prec},
                            ops=("QuantizeLinear", "DequantizeLinear")))   # the pair refuses a rounded scale
    # DequantizeLinear of int32 (a bias, an accumulator): no zero point, or 0 (the spec's "supposed to be 0")
    big = np.array([1, -3, 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24) - 1, 2 ** 25 + 2, 2 ** 25 + 6, 2 ** 31 - 1, -2 ** 31,
                    50331651, 123456789, 0], np.int64)
    for sdt in ("float32", "float16", "bfloat16"):
        for per_axis in (False, True):
            xq = np.concatenate([big, rng.integers(-2 ** 31, 2 ** 31, 36)]).astype(np.int32)
            if per_axis:
                xq = xq.reshape(4, 12)
                scale = np.array([0.1, 1.0, 3e-5, 7.0]).astype(np_type(sdt))
                zp = np.zeros(4, np.int32)
            else:
                scale = np.array(0.1).astype(np_type(sdt))
                zp = np.array(0, np.int32)
            out.append(dict(storage="int32", dtype=sdt, per_axis=per_axis, x=None, xq=xq, scale=scale, zp=zp,
                            attrs={"axis": 0} if per_axis else {}, ops=("DequantizeLinear",)))
    # float4/float6 with a 16-bit x and a zero point: q + zp is summed in float32 (NumPy promotes), so a quotient
    # just below a midpoint of the type, minus the zero point, is not rounded onto it first
    for st in ("float4_e2m1fn", "float6_e3m2fn"):
        t = np_type(st)
        vals = np.unique(np.arange(256).astype(np.uint8).view(t).astype(np.float64))
        vals = vals[np.isfinite(vals) & (vals >= 0)]
        mids = (vals[1:] + vals[:-1]) / 2
        for dt in ("float16", "bfloat16"):
            for zpv in (0.5, 1.0):
                q = (mids - zpv).astype(FLOATS[dt])
                x = np.concatenate([np.nextafter(q.astype(np.float32), np.float32(-np.inf)).astype(FLOATS[dt]),
                                    np.nextafter(q.astype(np.float32), np.float32(np.inf)).astype(FLOATS[dt]), q])
                ulp = FLOATS[dt](2.0 ** -13 if dt == "float16" else 2.0 ** -10)
                x = np.concatenate([x, (q.astype(np.float32) - np.float32(ulp)).astype(FLOATS[dt]),
                                    (q.astype(np.float32) + np.float32(ulp)).astype(FLOATS[dt])]).astype(FLOATS[dt])
                out.append(dict(storage=st, dtype=dt, per_axis=False, x=x, scale=np.array(1.0).astype(FLOATS[dt]),
                                zp=np.array(zpv).astype(t), attrs={}))
    return out


def _inputs(op, x, scale, zp):
    names = ("x", "x_scale", "x_zero_point") if op == "DequantizeLinear" else ("x", "y_scale", "y_zero_point")
    return dict(zip(names, (enc(x), enc(scale), enc(zp))))


def run_all():
    """{semantics: {op: [case records]}}: the same cases answered by the reference ("onnx") and by onnxruntime
    ("ort-cpu"); a record says its storage type and dtype in "tags"."""
    rng = np.random.default_rng(24)
    sems = {"onnx": "ref", "ort-cpu": "ort"}
    files = {sem: {op: [] for op in ("QuantizeLinear", "DequantizeLinear", "QuantizeDequantizeLinear")}
             for sem in sems}
    for i, c in enumerate(cases(rng)):
        tags = [c["storage"], c["dtype"], "per-axis" if c["per_axis"] else "per-tensor"]
        if "block_size" in c["attrs"]:
            tags[2] = "blocked"
        if "scale_dtype" in c:
            tags.append("scale " + c["scale_dtype"])
        wanted = c.get("ops", ("QuantizeLinear", "DequantizeLinear", "QuantizeDequantizeLinear"))
        dq_attrs = {k: v for k, v in c["attrs"].items() if k in ("axis", "block_size")}   # DQ has no precision
        dq_attrs.update(c.get("dq_attrs", {}))
        if "xq" in c:
            xq = c["xq"]
        else:
            codes = np.random.default_rng(i).integers(0, 65536, c["x"].shape)
            t = np_type(c["storage"])
            bits = (ml_dtypes.finfo(t) if c["storage"].startswith("float") else ml_dtypes.iinfo(t)).bits
            xq = (codes & ((1 << bits) - 1)).astype(np.uint8 if bits <= 8 else np.uint16).view(t)
        d = golden("DequantizeLinear", xq, c["scale"], c["zp"], dq_attrs)
        q = golden("QuantizeLinear", c["x"], c["scale"], c["zp"], c["attrs"]) if "QuantizeLinear" in wanted else None
        for sem, key in sems.items():
            base = {"id": i, "tags": tags, "note": ""}
            if q is not None:
                files[sem]["QuantizeLinear"].append({**base, "op": "QuantizeLinear", "attrs": c["attrs"],
                                                     "inputs": _inputs("QuantizeLinear", c["x"], c["scale"], c["zp"]),
                                                     "expect": expect(q[key])})
            if q is not None and "QuantizeDequantizeLinear" in wanted:
                y = q[key] if isinstance(q[key], str) else golden("DequantizeLinear", q[key], c["scale"], c["zp"],
                                                                   dq_attrs)[key]
                files[sem]["QuantizeDequantizeLinear"].append(with_deviation(
                    {**base, "op": "QuantizeDequantizeLinear", "attrs": c["attrs"],
                     "inputs": _inputs("QuantizeDequantizeLinear", c["x"], c["scale"], c["zp"]), "expect": expect(y)},
                    y))
            files[sem]["DequantizeLinear"].append(with_deviation(
                {**base, "op": "DequantizeLinear", "attrs": dq_attrs,
                 "inputs": _inputs("DequantizeLinear", xq, c["scale"], c["zp"]), "expect": expect(d[key])}, d[key]))
    return files


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=OUT)
    args = p.parse_args()
    versions = {"ml_dtypes": ml_dtypes.__version__, "numpy": np.__version__}
    headers = {"onnx": {"semantics": "onnx", "reference": f"onnx {onnx.__version__} reference implementation",
                        "opset": 28, **versions},
               "ort-cpu": {"semantics": "ort-cpu", "reference": f"onnxruntime {onnxruntime.__version__} CPU kernels",
                           "opset": 25, **versions}}
    files = run_all()
    # the reference's departures from the operator's text: marked, the text's answer beside them (onnx_text.py)
    onnx_text.mark(files["onnx"]["QuantizeLinear"], files["onnx"]["QuantizeDequantizeLinear"], enc)
    for sem, ops in files.items():
        folder = os.path.join(args.out, "" if sem == "onnx" else "ort")
        os.makedirs(folder, exist_ok=True)
        for op, records in ops.items():
            path = os.path.join(folder, f"{op}.json")
            with open(path, "w") as fh:
                fh.write(json.dumps({"op": op, **headers[sem]})[:-1] + ', "cases": [\n')
                fh.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in records))
                fh.write("\n]}\n")
            print(f"{path}: {len(records)} cases, {os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()
