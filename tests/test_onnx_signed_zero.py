"""The sign of zero through ONNX's DequantizeLinear and the Q/DQ pair, exhaustively on the codes (issue 48.4):
every code of every storage type x scale type (float32, float16, bfloat16, float8_e8m0fnu) x output type x zero
point (none, 0, -0 for float4/float6, 1 for the integer types) x granularity, against the onnx reference's answers
(qdq_compiler/goldens/onnx/signed_zero.json, tools/goldens/onnx_signed_zero.py: each answer's SHA-256 and its
counts of zeros and of -0). The oracle answers all 2016 records; the compiled programs one type combination each
(every storage type, the scale and output types in turn), compiled together."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from qdq_compiler import onnx_ops, targets
from qdq_compiler.oracle import onnx_ops as onnx_oracle

from checks import compile_ahead
from targets_util import RUN_TARGETS, require
import tiers

FILE = Path(__file__).resolve().parent.parent / "qdq_compiler" / "goldens" / "onnx" / "signed_zero.json"
RECORDS = json.loads(FILE.read_text())["cases"]
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
TENSOR_PROTO = {"float32": 1, "float16": 10, "bfloat16": 16}
FINITE = ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
DQ_SCALES = {"float": ([0.75, -0.75, 0.0, -0.0], -0.75), "float8_e8m0fnu": ([0.5, 2.0, 2.0 ** -127, np.nan], 0.5)}
PAIR_SCALES = {"float": ([0.75, -0.75, 0.5, -2.0], -0.75), "float8_e8m0fnu": ([0.5, 2.0, 0.25, 4.0], 0.5)}
INT32_CODES = [0, 1, -1, 2, 2 ** 24 + 1, -(2 ** 24) - 1, 2 ** 31 - 1, -(2 ** 31)]


# -- the inputs, by the generator's rule (tools/goldens/onnx_signed_zero.py inputs()) -----------------------------

def _np(name):
    return NP.get(name) or getattr(ml_dtypes, name, None) or np.dtype(name).type


def _codes(t):
    if t == "int32":
        return np.array(INT32_CODES, np.int32)
    dt = np.dtype(_np(t))
    bits = (ml_dtypes.finfo(dt) if t.startswith("float") else ml_dtypes.iinfo(dt)).bits
    return np.arange(1 << bits).astype(np.uint8 if bits <= 8 else np.uint16).view(dt)


def _zp(t, kind, shape):
    if kind == "none":
        return None
    if kind == "negzero":
        return np.full(shape, -0.0, np.float32).astype(_np(t))
    return np.full(shape, 1 if kind == "one" else 0).astype(np.int32 if t == "int32" else _np(t))


def _scale(table, sdt, per_axis):
    vec, one = table["float8_e8m0fnu" if sdt == "float8_e8m0fnu" else "float"]
    return (np.array(vec, np.float32) if per_axis else np.array(one, np.float32)).astype(_np(sdt))


def call_of(r):
    """The record's call as keyword arguments of onnx_ops.<op>."""
    t, per_axis = r["storage"], r["per_axis"]
    shape = (4,) if per_axis else ()
    attrs = {"axis": 1} if per_axis else {}
    if r["op"] == "DequantizeLinear":
        c = _codes(t)
        x = np.repeat(c[:, None], 4, axis=1) if per_axis else c
        return {"x": x, "x_scale": _scale(DQ_SCALES, r["scale"], per_axis), "x_zero_point": _zp(t, r["zero_point"], shape),
                **attrs, "output_dtype": TENSOR_PROTO[r["output"]]}
    with np.errstate(all="ignore"):
        v = _codes(t).astype(np.float32)
    v = v[np.isfinite(v) & (np.abs(v) <= 40000)] * np.float32(0.75)
    x = np.concatenate([v, -v, [0.0, -0.0, 1e-30, -1e-30, 1e-6, -1e-6]]).astype(np.float32).astype(NP[r["output"]])
    x = np.repeat(x[:, None], 4, axis=1) if per_axis else x
    return {"x": x, "y_scale": _scale(PAIR_SCALES, r["scale"], per_axis), "y_zero_point": _zp(t, r["zero_point"], shape),
            **attrs, "output_dtype": np.dtype(_np(t))}


def _check(r, y):
    y = np.ascontiguousarray(np.asarray(y))
    want = r["expect"]
    f = y.astype(np.float32)
    zeros, neg = int((f == 0).sum()), int(((f == 0) & np.signbit(f)).sum())
    assert (str(y.dtype), list(y.shape)) == (want["dtype"], want["shape"]), r["id"]
    assert (zeros, neg) == (want["zeros"], want["negative_zeros"]), (r, zeros, neg)
    assert hashlib.sha256(y.tobytes()).hexdigest()[:20] == want["sha256"], r


def test_oracle_every_record():
    """All 2016 records (DequantizeLinear: 15 storage types and int32; the pair: 15), bit for bit."""
    assert len(RECORDS) == 2016 and sum(r["expect"]["negative_zeros"] > 0 for r in RECORDS) > 1000
    for r in RECORDS:
        _check(r, getattr(onnx_oracle, r["op"])(**call_of(r)))


# The CI tier compiles these (the encodings with a -0, and one integer type each); the full tier every storage type.
CI_TYPES = {"DequantizeLinear": ("float8_e5m2fnuz", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "int8"),
            "QuantizeDequantizeLinear": ("float6_e3m2fn", "int8")}


def _compiled_records():
    """One per storage type and op: the scale and output types in turn, no zero point (where a -0 is lost if it is
    subtracted), per axis (scales of both signs and zero)."""
    out, seen = [], {}
    for r in RECORDS:
        key = (r["op"], r["storage"])
        if r["zero_point"] != "none" or not r["per_axis"]:
            continue
        k = seen.setdefault(key, len(seen))
        if (r["scale"], r["output"]) == (("float32", "float16", "bfloat16", "float8_e8m0fnu")[k % 4],
                                         ("float32", "float16", "bfloat16")[k % 3]):
            out.append(r)
    return out


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_compiled_one_combination_per_type(target):
    require(target)
    records = _compiled_records()
    assert len(records) == 31, len(records)
    if not tiers.full():
        records = [r for r in records if r["storage"] in CI_TYPES[r["op"]]]
        if target in tiers.SLOW_TARGETS:   # one in 3 there (tests/tiers.py)
            records = tiers.sample(records, every=3, key=lambda r: r["id"])
    compile_ahead(lambda r=r: getattr(onnx_ops, r["op"])(**call_of(r), target=target) for r in records)
    ftz = not targets.get(target).quirks.keeps_denormals
    flushed = 0
    for r in records:
        want = np.asarray(getattr(onnx_oracle, r["op"])(**call_of(r)))
        _check(r, want)                                          # the reference's answer, bit for bit
        got = np.asarray(getattr(onnx_ops, r["op"])(**call_of(r), target=target))
        assert got.dtype == want.dtype and got.shape == want.shape, r
        w = {2: np.uint16, 4: np.uint32}[want.itemsize]
        differ = got.view(w) != want.view(w)
        f = want.astype(np.float32)
        subnormal = (np.abs(f) < np.finfo(np.float32).tiny) & (f != 0)
        if ftz:   # IREE's CPU threads flush a subnormal result to zero of its sign (README: where it is not exact)
            assert np.array_equal(got[differ & subnormal].astype(np.float32), 0 * f[differ & subnormal]), r
            flushed += int((differ & subnormal).sum())
            differ &= ~subnormal
        assert not differ.any(), (r, got[differ][:5], want[differ][:5])
    assert flushed < 2000, flushed   # (e8m0's 2^-127 times the 16-bit codes: the subnormal products)


def test_float6_negative_zero_without_zero_point():
    """The issue's case: a float6_e3m2fn -0 with a bfloat16 scale, per axis, no zero point: -0 (the reference
    subtracts none); with a zero point of -0 given, +0 (it subtracts it: -0 - -0)."""
    x = np.array([[-0.0, 0.0]], np.float32).astype(ml_dtypes.float6_e3m2fn)
    s = np.array([0.5, 0.5], ml_dtypes.bfloat16)
    y = onnx_oracle.DequantizeLinear(x, s, axis=1)
    assert y.dtype == ml_dtypes.bfloat16 and np.signbit(y.astype(np.float32)).tolist() == [[True, False]]
    z = onnx_oracle.DequantizeLinear(x, s, np.array([-0.0, -0.0], np.float32).astype(ml_dtypes.float6_e3m2fn), axis=1)
    assert np.signbit(z.astype(np.float32)).tolist() == [[False, False]]
    fq = onnx_oracle.QuantizeDequantizeLinear(np.array([-0.0, 0.0], np.float32), np.float32(0.5),
                                              output_dtype=ml_dtypes.float6_e3m2fn)
    assert np.signbit(fq).tolist() == [True, False]
