"""Every code of every storage type through the onnx reference's DequantizeLinear, and the Q/DQ pair over the
values those codes stand for: qdq_compiler/goldens/onnx/signed_zero.json, one record per storage type x scale
type x output type (DequantizeLinear's output_dtype; the pair's x type) x zero point (none, 0, -0 for the
float4/float6 types, 1 for the integer types) x granularity (per tensor, per axis). A record holds the recipe of
its inputs (tests/test_onnx_signed_zero.py rebuilds them: ``inputs`` below is the rule) and the reference's
answer as its dtype, shape, SHA-256 of its bytes (the first 80 bits) and the count of its zeros and of its -0: the whole answer bit
for bit, in a file of a few hundred kilobytes, with the signs of zero readable (issue 48.4: a float6 -0 with no
zero point came back +0).

Run in the reference's virtualenv (see onnx_reference.py), from the repository root:

    /tmp/onnxvenv/bin/python -m tools.goldens.onnx_signed_zero [--out FILE]      # about a minute
"""
from __future__ import annotations

import argparse
import hashlib
import os

import ml_dtypes
import numpy as np
import onnx

from .fmt import write_file
from .onnx.reference_runner import golden
from .onnx_reference import FLOATS, OUT, QUANTIZED, np_type

SCALE_TYPES = ("float32", "float16", "bfloat16", "float8_e8m0fnu")
TENSOR_PROTO = {"float32": 1, "float16": 10, "bfloat16": 16}
FINITE = ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
FLOAT8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
# per-axis scales (4 channels) and the per-tensor one; DequantizeLinear's take zeros (its product has no int cast)
DQ_SCALES = {"float": ([0.75, -0.75, 0.0, -0.0], -0.75), "float8_e8m0fnu": ([0.5, 2.0, 2.0 ** -127, np.nan], 0.5)}
PAIR_SCALES = {"float": ([0.75, -0.75, 0.5, -2.0], -0.75), "float8_e8m0fnu": ([0.5, 2.0, 0.25, 4.0], 0.5)}
INT32_CODES = [0, 1, -1, 2, 2 ** 24 + 1, -(2 ** 24) - 1, 2 ** 31 - 1, -(2 ** 31)]


def bits_of(t: str) -> int:
    if t == "int32":
        return 32
    info = ml_dtypes.finfo(np_type(t)) if t.startswith("float") else ml_dtypes.iinfo(np_type(t))
    return info.bits


def zero_points(t: str) -> tuple[str, ...]:
    if t in FLOAT8 or t == "int32":
        return ("none", "zero")
    return ("none", "zero", "negzero") if t in FINITE else ("none", "zero", "one")


def codes_of(t: str) -> np.ndarray:
    """Every code of ``t`` (int32: a few), as an array of ``t``."""
    if t == "int32":
        return np.array(INT32_CODES, np.int32)
    n = 1 << bits_of(t)
    width = np.uint8 if bits_of(t) <= 8 else np.uint16
    return np.arange(n).astype(width).view(np_type(t))


def zp_value(t: str, kind: str, shape):
    if kind == "none":
        return None
    if kind == "negzero":
        return np.full(shape, -0.0, np.float32).astype(np_type(t))
    return np.full(shape, 1 if kind == "one" else 0).astype(np.int32 if t == "int32" else np_type(t))


def scales(table, sdt: str, per_axis: bool):
    vec, one = table["float8_e8m0fnu" if sdt == "float8_e8m0fnu" else "float"]
    ml = np_type(sdt) if sdt != "float32" else np.float32
    return (np.array(vec, np.float32) if per_axis else np.array(one, np.float32)).astype(ml)


def pair_x(t: str, dt: str, per_axis: bool) -> np.ndarray:
    """The values of every code of ``t`` up to 40000 in magnitude times 0.75, both signs, and zeros and tiny values of
    both signs (no quotient overflows, even float16's: the int32 cast of an infinity is onnx_text.py's matter)."""
    with np.errstate(all="ignore"):
        v = codes_of(t).astype(np.float32)
    v = v[np.isfinite(v) & (np.abs(v) <= 40000)] * np.float32(0.75)   # (every quotient finite in float16)
    x = np.concatenate([v, -v, [0.0, -0.0, 1e-30, -1e-30, 1e-6, -1e-6]]).astype(np.float32).astype(FLOATS[dt])
    return np.repeat(x[:, None], 4, axis=1) if per_axis else x


def inputs(op: str, t: str, sdt: str, out: str, zp: str, per_axis: bool):
    """(x, scale, zero point or None, attrs) of a record: the rule the tests rebuild."""
    shape = (4,) if per_axis else ()
    attrs = {"axis": 1} if per_axis else {}
    if op == "DequantizeLinear":
        c = codes_of(t)
        x = np.repeat(c[:, None], 4, axis=1) if per_axis else c
        return x, scales(DQ_SCALES, sdt, per_axis), zp_value(t, zp, shape), {**attrs, "output_dtype": TENSOR_PROTO[out]}
    q_type = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(np_type(t)))   # (no zero point: uint8 otherwise)
    return pair_x(t, out, per_axis), scales(PAIR_SCALES, sdt, per_axis), zp_value(t, zp, shape), \
        {**attrs, "output_dtype": q_type}


def summary(y) -> dict:
    y = np.ascontiguousarray(y)
    f = y.astype(np.float32)
    zero = f == 0
    return {"dtype": str(y.dtype), "shape": list(y.shape), "sha256": hashlib.sha256(y.tobytes()).hexdigest()[:20],
            "zeros": int(zero.sum()), "negative_zeros": int((zero & np.signbit(f)).sum())}


def answer(op, x, scale, zp, attrs, out):
    if op == "DequantizeLinear":
        return golden("DequantizeLinear", x, scale, zp, attrs)["ref"]
    q = golden("QuantizeLinear", x, scale, zp, attrs)["ref"]
    if isinstance(q, str):
        return q
    dq = {k: v for k, v in attrs.items() if k == "axis"}
    return golden("DequantizeLinear", q, scale, zp, {**dq, "output_dtype": TENSOR_PROTO[out]})["ref"]


def records():
    out = []
    for op in ("DequantizeLinear", "QuantizeDequantizeLinear"):
        for t in QUANTIZED + (("int32",) if op == "DequantizeLinear" else ()):
            for sdt in SCALE_TYPES:
                for o in ("float32", "float16", "bfloat16"):
                    for zp in zero_points(t):
                        for per_axis in (False, True):
                            x, scale, z, attrs = inputs(op, t, sdt, o, zp, per_axis)
                            y = answer(op, x, scale, z, attrs, o)
                            assert not isinstance(y, str), (op, t, sdt, o, zp, per_axis, y)
                            out.append({"id": len(out), "op": op, "storage": t, "scale": sdt, "output": o,
                                        "zero_point": zp, "per_axis": per_axis, "expect": summary(y)})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(OUT, "signed_zero.json"))
    args = p.parse_args()
    recs = records()
    header = {"reference": f"onnx {onnx.__version__} reference implementation", "opset": 28,
              "ml_dtypes": ml_dtypes.__version__, "numpy": np.__version__,
              "rule": "tools/goldens/onnx_signed_zero.py inputs(); tests/test_onnx_signed_zero.py rebuilds them"}
    write_file(args.out, header, recs, separators=(",", ":"))
    print(f"{args.out}: {len(recs)} records, {sum(r['expect']['negative_zeros'] for r in recs)} -0 in all")


if __name__ == "__main__":
    main()
