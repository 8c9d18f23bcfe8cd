"""Golden vectors of ONNX's QuantizeLinear and DequantizeLinear: qdq_compiler/goldens/onnx/<op>.json, each case
answered by the onnx package's reference implementation (semantics ``onnx``, opset 28) and by onnxruntime's CPU
kernels (semantics ``ort-cpu``, opset 25: its newest for these ops), or the error each gives.

Run in a virtualenv of its own (a reference framework is a tool for making test data, never a dependency):

    python3 -m venv /work/onnxvenv && /work/onnxvenv/bin/pip install onnx==1.23.2 onnxruntime==1.32.0 ml_dtypes
    /work/onnxvenv/bin/python -m tools.goldens.onnx_reference [--out DIR]      # about 20 s

Arrays are written as {"dtype", "shape", "codes"}: every storage type and float by its bit pattern (the code
ml_dtypes keeps in one or two bytes; float32 as its 32 bits), so a golden compares bit for bit. The pair
``QuantizeDequantizeLinear`` is the reference's DequantizeLinear of its own QuantizeLinear. Fixed seeds.
"""
from __future__ import annotations

import argparse
import json
import os

import ml_dtypes
import numpy as np
import onnx
import onnxruntime

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


def answer(v):
    return {"error": v} if isinstance(v, str) else {"y": enc(v)}


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
    # scales that are subnormal, zero, negative, NaN; -0 and NaN into fp8; empty tensors
    for st in ("int8", "uint8", "float8_e4m3fn", "float8_e5m2"):
        for s in (0.0, -0.0, -0.5, np.nan, np.inf, 1e-40, 1e-5):
            x = np.array([0.0, -0.0, 1.0, -1.0, 1e-39, 3e38, np.inf, np.nan], np.float32)
            out.append(dict(storage=st, dtype="float32", per_axis=False, x=x, scale=np.array(s, np.float32),
                            zp=np.array(0).astype(np_type(st)), attrs={}))
        out.append(dict(storage=st, dtype="float32", per_axis=False, x=np.zeros((0, 3), np.float32),
                        scale=np.array(0.5, np.float32), zp=np.array(0).astype(np_type(st)), attrs={}))
    return out


def run_all():
    rng = np.random.default_rng(24)
    files = {"QuantizeLinear": [], "DequantizeLinear": [], "QuantizeDequantizeLinear": []}
    for i, c in enumerate(cases(rng)):
        q = golden("QuantizeLinear", c["x"], c["scale"], c["zp"], c["attrs"])
        base = {"id": i, "storage": c["storage"], "dtype": c["dtype"], "per_axis": c["per_axis"],
                "attrs": c["attrs"], "inputs": {"x": enc(c["x"]), "scale": enc(c["scale"]), "zero_point": enc(c["zp"])}}
        files["QuantizeLinear"].append({**base, "onnx": answer(q["ref"]), "ort-cpu": answer(q["ort"])})
        dq_attrs = {k: v for k, v in c["attrs"].items() if k == "axis"}
        pair = {"onnx": {"error": q["ref"]}, "ort-cpu": {"error": q["ort"]}}
        for sem, key in (("onnx", "ref"), ("ort-cpu", "ort")):
            if not isinstance(q[key], str):
                d = golden("DequantizeLinear", q[key], c["scale"], c["zp"], dq_attrs)
                pair[sem] = answer(d[key])
        files["QuantizeDequantizeLinear"].append({**base, **pair})
        codes = np.random.default_rng(i).integers(0, 256, c["x"].shape).astype(np.uint8)
        bits = ml_dtypes.iinfo(np_type(c["storage"])).bits if not c["storage"].startswith("float") else \
            ml_dtypes.finfo(np_type(c["storage"])).bits
        codes = (codes & ((1 << bits) - 1)) if bits < 8 else codes
        if bits == 16:
            codes = np.random.default_rng(i).integers(0, 65536, c["x"].shape).astype(np.uint16)
        xq = codes.view(np_type(c["storage"]))
        d = golden("DequantizeLinear", xq, c["scale"], c["zp"], dq_attrs)
        files["DequantizeLinear"].append({**base, "attrs": dq_attrs, "inputs": {**base["inputs"], "x": enc(xq)},
                                          "onnx": answer(d["ref"]), "ort-cpu": answer(d["ort"])})
    return files


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=OUT)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    header = {"onnx_version": onnx.__version__, "onnxruntime_version": onnxruntime.__version__,
              "onnx_opset": 28, "onnxruntime_opset": 25}
    for op, records in run_all().items():
        path = os.path.join(args.out, f"{op}.json")
        with open(path, "w") as fh:
            fh.write(json.dumps({"op": op, **header})[:-1] + ', "cases": [\n')
            fh.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in records))
            fh.write("\n]}\n")
        print(f"{path}: {len(records)} cases, {os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()
