#!/usr/bin/env python3
"""Generate golden test vectors for TF's fake-quantization ops from TensorFlow 2.21.

TensorFlow is only a data-generation tool here: neither the qdq_compiler package nor its
tests import it.  This script writes ``tests/goldens/<OpName>.json`` (one file per raw op).

How to run (from the repository root; takes ~1-3 minutes on 2 cores)::

    python3 -m venv /work/tfvenv
    /work/tfvenv/bin/pip install tensorflow-cpu==2.21.0 numpy
    /work/tfvenv/bin/python tools/make_goldens.py            # writes tests/goldens/*.json
    /work/tfvenv/bin/python tools/make_goldens.py --check    # also compare TF with the numpy
                                                             # model of the spec (report only)

Options: ``--out DIR`` (default tests/goldens next to this file's repo),
``--spec PATH`` (default /work/shared/spec/tf_fake_quant_semantics.md; its section-6 table
gives the V01..V65 vectors, which are cross-checked against TF; if the file is missing the
vectors are skipped with a warning).

Determinism: all random inputs come from numpy's PCG64 with a fixed seed; TF's CPU kernels
are deterministic for these inputs (FakeQuant min/max gradient sums are designed to be exact).

How it works:
  * The parent process imports TensorFlow but never runs an op.  Every TF computation runs
    in a forked child: one child for the whole batch of expected-success cases, and one
    child per error case *per mode* (eager, then graph = ``tf.function`` with a fixed
    ``input_signature``), because some error cases abort the process (CHECK failure); an
    abort is recorded as kind "abort" with the "Check failed: ..." line from stderr.
  * The V1 op ``QuantizeAndDequantize`` is run by importing a GraphDef with
    ``versions.producer = 21`` into a ``tf.compat.v1.Session`` (mode "graph").

Output format: see tests/goldens/README.md.
"""

import argparse
import json
import math
import os
import pickle
import re
import sys
import tempfile
import traceback

import numpy as np

TF_VERSION = "2.21.0"
SEED = 20260121

F32 = np.float32
F64 = np.float64

# --------------------------------------------------------------------------------------
# Op catalogue
# --------------------------------------------------------------------------------------

OPS = {
    "QuantizeAndDequantize": ("QDQ1", ["input"]),
    "QuantizeAndDequantizeV2": ("QDQ2", ["input", "input_min", "input_max"]),
    "QuantizeAndDequantizeV3": ("QDQ3", ["input", "input_min", "input_max", "num_bits"]),
    "QuantizeAndDequantizeV4": ("QDQ4", ["input", "input_min", "input_max"]),
    "QuantizeAndDequantizeV4Grad": ("QDQ4G", ["gradients", "input", "input_min", "input_max"]),
    "FakeQuantWithMinMaxArgs": ("FQA", ["inputs"]),
    "FakeQuantWithMinMaxArgsGradient": ("FQAG", ["gradients", "inputs"]),
    "FakeQuantWithMinMaxVars": ("FQV", ["inputs", "min", "max"]),
    "FakeQuantWithMinMaxVarsGradient": ("FQVG", ["gradients", "inputs", "min", "max"]),
    "FakeQuantWithMinMaxVarsPerChannel": ("FQPC", ["inputs", "min", "max"]),
    "FakeQuantWithMinMaxVarsPerChannelGradient": ("FQPCG", ["gradients", "inputs", "min", "max"]),
}
OUTPUTS = {
    "QuantizeAndDequantize": ["output"],
    "QuantizeAndDequantizeV2": ["output"],
    "QuantizeAndDequantizeV3": ["output"],
    "QuantizeAndDequantizeV4": ["output"],
    "QuantizeAndDequantizeV4Grad": ["input_backprop", "input_min_backprop", "input_max_backprop"],
    "FakeQuantWithMinMaxArgs": ["outputs"],
    "FakeQuantWithMinMaxArgsGradient": ["backprops"],
    "FakeQuantWithMinMaxVars": ["outputs"],
    "FakeQuantWithMinMaxVarsGradient": ["backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"],
    "FakeQuantWithMinMaxVarsPerChannel": ["outputs"],
    "FakeQuantWithMinMaxVarsPerChannelGradient": ["backprops_wrt_input", "backprop_wrt_min",
                                                  "backprop_wrt_max"],
}
FLOAT_ATTRS = {"input_min", "input_max", "min", "max"}  # only for V1 and Args (attrs there)
NP_DTYPES = {"float32": F32, "float64": F64, "int32": np.int32, "int64": np.int64,
             "float16": np.float16, "bfloat16": F32}

# --------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------


def hexf(v):
    """Exact value of a float as hex; trailing zeros of the mantissa removed."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    h = v.hex()  # e.g. -0x1.8000000000000p+2, 0x0.0p+0
    m = re.match(r"(-?0x[01])\.([0-9a-f]*)p([+-]\d+)$", h)
    frac = m.group(2).rstrip("0") or "0"
    return "%s.%sp%s" % (m.group(1), frac, m.group(3))


def enc_array(dtype, arr):
    arr = np.asarray(arr)
    if dtype in ("int32", "int64"):
        vals = [int(v) for v in arr.ravel()]
    else:
        vals = [hexf(v) for v in arr.ravel()]
    return {"dtype": dtype, "shape": [int(d) for d in arr.shape], "values": vals}


def f32hex(v):
    return hexf(F32(v))


# --------------------------------------------------------------------------------------
# numpy model of the spec (used to design inputs, and by --check)
# --------------------------------------------------------------------------------------


def is_sub(a):
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    tiny = np.finfo(a.dtype).tiny
    return (a != 0) & (np.abs(a) < tiny)


def flush(a):
    """Flush subnormals to zero of the same sign (models DAZ/FTZ)."""
    a = np.array(a, copy=True)
    s = is_sub(a)
    if s.any():
        a[s] = np.copysign(a.dtype.type(0), a[s])
    return a


def qdq_int_range(signed, bits, narrow):
    if signed:
        return -(1 << (bits - 1)) + (1 if narrow else 0), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def qdq_compute_range(T, qmin, qmax, lo, hi, ftz=False):
    fl = (lambda v: T(flush(np.array([v], T))[0])) if ftz else (lambda v: v)
    with np.errstate(all="ignore"):
        qminT, qmaxT = T(qmin), T(qmax)
        lo, hi = fl(T(lo)), fl(T(hi))
        big = np.finfo(T).max
        s_lo = fl(T(qminT / lo)) if fl(T(qminT * lo)) > 0 else T(big)
        s_hi = fl(T(qmaxT / hi)) if fl(T(qmaxT * hi)) > 0 else T(big)
        if s_lo < s_hi:
            scale = s_lo
            inv = fl(T(lo / qminT))
            hi = fl(T(qmaxT * inv))
        else:
            scale = s_hi
            inv = fl(T(hi / qmaxT))
            lo = fl(T(qminT * inv))
    return lo, hi, scale, inv


def qdq_elem(x, lo, hi, scale, inv, range_given, round_mode, T, ftz=False):
    fl = flush if ftz else (lambda a: a)
    with np.errstate(all="ignore"):
        x = fl(np.asarray(x, T))
        if range_given:
            x = np.where(hi < x, hi, x).astype(T)
            x = np.where(x < lo, lo, x).astype(T)
        v = fl((x * scale).astype(T))
        if round_mode == "HALF_UP":
            r = np.floor(fl((v + T(0.5)).astype(T)))
        else:
            r = np.rint(v)
        return fl((r * inv).astype(T))


def channel_view(shape, axis):
    outer = int(np.prod(shape[:axis])) if axis > 0 else 1
    C = shape[axis]
    inner = int(np.prod(shape[axis + 1:])) if axis + 1 < len(shape) else 1
    return outer, C, inner


def qdq_model(x, lo, hi, signed, bits, range_given, round_mode, narrow, axis, T, ftz=False):
    x = np.asarray(x, T)
    qmin, qmax = qdq_int_range(signed, bits, narrow)
    fl = flush if ftz else (lambda a: a)
    if axis == -1:
        xs = fl(x)
        if not range_given:
            if x.size == 0:
                return x.copy()
            lo, hi = np.min(xs), np.max(xs)
        l2, h2, s, i = qdq_compute_range(T, qmin, qmax, lo, hi, ftz)
        return qdq_elem(x, l2, h2, s, i, range_given, round_mode, T, ftz)
    outer, C, inner = channel_view(x.shape, axis)
    xv = x.reshape(outer, C, inner)
    out = np.empty_like(xv)
    for c in range(C):
        sl = xv[:, c, :]
        if range_given:
            lc, hc = np.asarray(lo).reshape(-1)[c], np.asarray(hi).reshape(-1)[c]
        else:
            if sl.size == 0:
                continue
            lc, hc = np.min(fl(sl)), np.max(fl(sl))
        l2, h2, s, i = qdq_compute_range(T, qmin, qmax, lc, hc, ftz)
        out[:, c, :] = qdq_elem(sl, l2, h2, s, i, range_given, round_mode, T, ftz)
    return out.reshape(x.shape)


def fq_nudge(mn, mx, bits, narrow, ftz=False):
    fl = (lambda v: F32(flush(np.array([v], F32))[0])) if ftz else (lambda v: v)
    with np.errstate(all="ignore"):
        mn, mx = fl(F32(mn)), fl(F32(mx))
        qmin = 1 if narrow else 0
        qmax = (1 << bits) - 1
        qminf, qmaxf = F32(qmin), F32(qmax)
        scale = fl(F32((mx - mn) / F32(qmaxf - qminf)))
        inv = fl(F32(F32(qmaxf - qminf) / (mx - mn)))
        zpf = fl(F32(qminf - fl(F32(mn / scale))))
        if zpf < qminf:
            zp = qmin
        elif zpf > qmaxf:
            zp = qmax
        elif np.isnan(zpf):
            zp = 0
        else:
            zp = int(math.floor(float(zpf) + 0.5))
        nmin = fl(F32(F32(qminf - F32(zp)) * scale))
        nmax = fl(F32(F32(qmaxf - F32(zp)) * scale))
    return nmin, nmax, scale, inv


def fq_elem(x, nmin, nmax, scale, inv, divide, ftz=False):
    fl = flush if ftz else (lambda a: a)
    with np.errstate(all="ignore"):
        x = fl(np.asarray(x, F32))
        qzero = np.floor(fl(F32(fl(F32(-nmin * inv)) + F32(0.5))))
        c = np.where(nmax < x, nmax, x).astype(F32)
        c = np.where(c < nmin, nmin, c).astype(F32)
        s = fl((c - nmin).astype(F32))
        t = fl((s / scale).astype(F32)) if divide else fl((s * inv).astype(F32))
        t = fl((t - qzero).astype(F32))
        t = fl((t + F32(0.5)).astype(F32))
        return fl((np.floor(t) * scale).astype(F32))


def fq_forward_model(op, x, mn, mx, bits, narrow, ftz=False):
    x = np.asarray(x, F32)
    if op == "FakeQuantWithMinMaxVarsPerChannel":
        d = x.shape[-1]
        if x.size == 0:
            return x.copy()
        xv = x.reshape(-1, d)
        out = np.empty_like(xv)
        for c in range(d):
            out[:, c] = fq_forward_model("FakeQuantWithMinMaxVars_pc", xv[:, c], mn[c], mx[c],
                                         bits, narrow, ftz)
        return out.reshape(x.shape)
    if op != "FakeQuantWithMinMaxArgs" and F32(mn) == 0 and F32(mx) == 0:
        return np.zeros_like(x)
    nmin, nmax, scale, inv = fq_nudge(mn, mx, bits, narrow, ftz)
    return fq_elem(x, nmin, nmax, scale, inv, op == "FakeQuantWithMinMaxVars", ftz)


def fq_grad_model(op, g, x, mn, mx, bits, narrow, ftz=False):
    fl = flush if ftz else (lambda a: a)
    g = fl(np.asarray(g, F32))
    x = fl(np.asarray(x, F32))
    if op == "FakeQuantWithMinMaxArgsGradient":
        nmin, nmax, _, _ = fq_nudge(mn, mx, bits, narrow, ftz)
        m = (x >= nmin) & (x <= nmax)
        with np.errstate(all="ignore"):
            return [fl((g * m.astype(F32)).astype(F32))]
    if op == "FakeQuantWithMinMaxVarsGradient":
        if F32(mn) == 0 and F32(mx) == 0:
            return [g.copy(), F32(0), F32(0)]
        nmin, nmax, _, _ = fq_nudge(mn, mx, bits, narrow, ftz)
        m = (x >= nmin) & (x <= nmax)
        # TF multiplies by the 0/1 mask, so NaN/inf gradients anywhere poison both sums
        with np.errstate(all="ignore"):
            dmin = fl(np.array([np.sum((g * (x < nmin).astype(F32)).astype(F64))], F32))[0]
            dmax = fl(np.array([np.sum((g * (x > nmax).astype(F32)).astype(F64))], F32))[0]
            return [fl((g * m.astype(F32)).astype(F32)), dmin, dmax]
    d = x.shape[-1]
    if x.size == 0:
        return [g.copy(), np.zeros(d, F32), np.zeros(d, F32)]
    gv, xv = g.reshape(-1, d), x.reshape(-1, d)
    dx = np.empty_like(gv)
    dmin = np.zeros(d, F32)
    dmax = np.zeros(d, F32)
    for c in range(d):
        r = fq_grad_model("FakeQuantWithMinMaxVarsGradient", gv[:, c], xv[:, c], mn[c], mx[c],
                          bits, narrow, ftz)
        dx[:, c], dmin[c], dmax[c] = r
    return [dx.reshape(x.shape), dmin, dmax]


def v4grad_model(g, x, mn, mx, axis, T, ftz=False):
    fl = flush if ftz else (lambda a: a)
    g = fl(np.asarray(g, T))
    x = fl(np.asarray(x, T))
    mn = fl(np.asarray(mn, T))
    mx = fl(np.asarray(mx, T))
    np.seterr(all="ignore")
    if axis == -1:
        m = (x >= mn) & (x <= mx)
        dx = fl((g * m.astype(T)).astype(T))
    else:
        outer, C, inner = channel_view(x.shape, axis)
        m = (x.reshape(outer, C, inner) >= mn.reshape(1, C, 1)) & \
            (x.reshape(outer, C, inner) <= mx.reshape(1, C, 1))
        dx = fl((g.reshape(outer, C, inner) * m.astype(T)).astype(T)).reshape(x.shape)
    return [dx, np.zeros(mn.shape, T), np.zeros(mn.shape, T)]


def model_outputs(case, ftz=False):
    """Spec model for a success case (returns list of arrays) or None if not modelled."""
    op, a, inp = case["op"], case["attrs"], case["inputs"]
    val = {k: v[1] for k, v in inp.items()}
    if op.startswith("QuantizeAndDequantizeV4Grad"):
        T = val["input"].dtype.type
        return v4grad_model(val["gradients"], val["input"], val["input_min"], val["input_max"],
                            a.get("axis", -1), T, ftz)
    if op.startswith("QuantizeAndDequantize"):
        x = val["input"]
        T = x.dtype.type
        signed = a.get("signed_input", True)
        if op == "QuantizeAndDequantizeV3":
            bits = int(val["num_bits"])
            rg = a.get("range_given", True)
        else:
            bits = a.get("num_bits", 8)
            rg = a.get("range_given", False)
        if op == "QuantizeAndDequantize":
            lo = T(F32(float.fromhex(a["input_min"]))) if "input_min" in a else T(0)
            hi = T(F32(float.fromhex(a["input_max"]))) if "input_max" in a else T(0)
            axis, narrow, rm = -1, False, "HALF_TO_EVEN"
        else:
            lo, hi = val["input_min"], val["input_max"]
            axis = a.get("axis", -1)
            narrow = a.get("narrow_range", False)
            rm = a.get("round_mode", "HALF_TO_EVEN")
            if axis == -1:
                lo, hi = T(np.asarray(lo).reshape(-1)[0]), T(np.asarray(hi).reshape(-1)[0])
        return [qdq_model(x, lo, hi, signed, bits, rg, rm, narrow, axis, T, ftz)]
    bits = a.get("num_bits", 8)
    narrow = a.get("narrow_range", False)
    if op in ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgsGradient"):
        mn = F32(float.fromhex(a["min"])) if "min" in a else F32(-6)
        mx = F32(float.fromhex(a["max"])) if "max" in a else F32(6)
    else:
        mn, mx = val["min"], val["max"]
    if op.endswith("Gradient"):
        return fq_grad_model(op, val["gradients"], val["inputs"], mn, mx, bits, narrow, ftz)
    return [fq_forward_model(op, val["inputs"], mn, mx, bits, narrow, ftz)]


# --------------------------------------------------------------------------------------
# Case construction helpers
# --------------------------------------------------------------------------------------


def mkcase(op, attrs, inputs, tags=(), note="", **extra):
    """inputs: dict name -> (dtype string, ndarray)."""
    c = {"op": op, "attrs": dict(attrs), "inputs": {}, "tags": list(tags), "note": note}
    for name in OPS[op][1]:
        if name in inputs:
            dt, arr = inputs[name]
            c["inputs"][name] = (dt, np.asarray(arr, NP_DTYPES[dt]))
    c.update(extra)
    return c


def nxt(x, T, n=1):
    x = T(x)
    for _ in range(abs(n)):
        x = np.nextafter(x, T(np.inf) if n > 0 else T(-np.inf))
    return T(x)


def subnormals(T, rng, k):
    tiny = np.finfo(T).tiny
    smallest = np.finfo(T).smallest_subnormal
    vals = [smallest, T(tiny / 2), T(tiny * T(0.75)), nxt(tiny, T, -1), T(smallest * 3)]
    out = [T(vals[int(rng.integers(len(vals)))]) * (T(1) if rng.random() < 0.5 else T(-1))
           for _ in range(k)]
    return [T(v) for v in out]


class Gen:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def mag(self, T, lo=-6, hi=6):
        return T(2.0 ** self.rng.uniform(lo, hi))

    def rand_shape(self, rank, maxel=48, min_dim=1):
        while True:
            s = [int(self.rng.integers(min_dim, 5)) for _ in range(rank)]
            if int(np.prod(s)) <= maxel:
                return s

    def rand_range(self, T, kind):
        r = self.rng
        if kind == "asym":
            a = self.mag(T)
            return T(-a * T(r.uniform(0.05, 1))), T(a * T(r.uniform(0.05, 1)))
        if kind == "sym":
            a = self.mag(T)
            return T(-a), T(a)
        if kind == "pow2":
            return T(-(2.0 ** int(r.integers(-4, 5)))), T(2.0 ** int(r.integers(-4, 5)))
        if kind == "pos":
            a = self.mag(T)
            b = T(a * T(r.uniform(1.05, 4)))
            return a, b
        if kind == "neg":
            a = self.mag(T)
            b = T(a * T(r.uniform(1.05, 4)))
            return T(-b), T(-a)
        if kind == "eq":
            a = self.mag(T) * (T(1) if r.random() < 0.6 else T(-1))
            return T(a), T(a)
        if kind == "zero_lo":
            return T(0), self.mag(T)
        if kind == "zero_hi":
            return T(-self.mag(T)), T(0)
        if kind == "tiny":
            e = -60 if T is F32 else -500
            a = T(2.0 ** r.uniform(e - 20, e))
            return T(-a * T(r.uniform(0.2, 1))), T(a)
        if kind == "huge":
            e = 60 if T is F32 else 600
            a = T(2.0 ** r.uniform(e, e + 20))
            return T(-a), T(a * T(r.uniform(0.2, 1)))
        if kind == "unit":
            return T(-1), T(1)
        raise ValueError(kind)

    def pick(self, items, p=None):
        return items[int(self.rng.choice(len(items), p=p))]


# ---------------- QDQ data design ----------------

TIE_FLAG = [False]  # set when a generator placed an input exactly on a rounding tie/switch


def qdq_tie_points(T, scale, q, round_mode):
    """Inputs x (type T) near the rounding boundary between q and q+1 after scaling."""
    out = []
    with np.errstate(all="ignore"):
        if not np.isfinite(scale) or scale == 0:
            return out
        v = T(T(q) + T(0.5))
        x0 = T(float(v) / float(scale))
        if not np.isfinite(x0):
            return out
        cands = [nxt(x0, T, k) for k in range(-6, 7)]
        hits = [c for c in cands if T(c * scale) == v]
        if hits:
            TIE_FLAG[0] = True
            x = hits[len(hits) // 2]
            out += [x, nxt(x, T, -1), nxt(x, T, 1)]
        else:
            out += [x0]
    return out


def qdq_channel_values(g, T, n, lo_raw, hi_raw, signed, bits, narrow, range_given, round_mode,
                       specials):
    """n values for one channel; if not range_given the data min/max are exactly lo/hi."""
    r = g.rng
    qmin, qmax = qdq_int_range(signed, bits, narrow)
    lo, hi, scale, inv = qdq_compute_range(T, qmin, qmax, lo_raw, hi_raw)
    vals = []
    if not range_given:
        vals += [lo_raw, hi_raw]
    qlo_eff = qmin if signed else 0
    with np.errstate(all="ignore"):
        # integer levels to probe: near zero, near the ends, random
        span = qmax - qlo_eff
        levels = set()
        for _ in range(max(2, n // 3)):
            k = r.random()
            if k < 0.35:
                levels.add(int(r.integers(-3, 3)))
            elif k < 0.55:
                levels.add(int(qmax - r.integers(0, 3)))
            elif k < 0.7:
                levels.add(int(qlo_eff + r.integers(0, 3)))
            else:
                levels.add(int(qlo_eff + int(r.random() * span)))
        if bits >= 25:
            # odd integers >= 2^23 where HALF_UP floor(v+0.5) rounds up (float32) / 2^52 (f64)
            e = 23 if T is F32 else 52
            if qmax > (1 << (e + 1)):
                levels.add((1 << e) + 1 + 2 * int(r.integers(0, 8)))
        for q in sorted(levels):
            if len(vals) >= n:
                break
            k = r.random()
            if k < 0.55:
                vals += qdq_tie_points(T, scale, q, round_mode)
            elif k < 0.8:
                vals.append(T(T(q) * inv))
            else:
                vals.append(T((float(q) + r.uniform(-0.5, 0.5)) * float(inv)))
        width = float(hi) - float(lo)
        while len(vals) < n:
            if range_given:
                a, b = float(lo) - 0.15 * abs(width), float(hi) + 0.15 * abs(width)
            else:
                a, b = float(min(lo_raw, hi_raw)), float(max(lo_raw, hi_raw))
            a, b = min(a, b), max(a, b)
            vals.append(T(r.uniform(a, b)) if np.isfinite(a) and np.isfinite(b) and b - a < 1e300
                        else T(0))
    vals = [T(v) for v in vals if np.isfinite(v) or not range_given]
    if not range_given:
        vals = [v for v in vals if lo_raw <= v <= hi_raw] or [lo_raw]
    vals = vals[:n] if len(vals) > n else vals
    while len(vals) < n:
        vals.append(vals[int(r.integers(len(vals)))] if vals else T(0))
    vals = list(vals)
    # specials replace random positions (but never remove the data min/max)
    protect = 2 if not range_given else 0
    for sv in specials:
        if len(vals) > protect:
            pos = int(r.integers(protect, len(vals))) if len(vals) > protect else 0
            vals[pos] = T(sv)
    if not range_given:
        # keep min/max at the front only for the generator; shuffle the rest
        pass
    arr = np.array(vals, T)
    perm = r.permutation(len(arr))
    return arr[perm]


# --------------------------------------------------------------------------------------
# Case generators
# --------------------------------------------------------------------------------------

RANGE_KINDS = ["asym", "asym", "asym", "sym", "pow2", "unit", "pos", "neg", "eq", "zero_lo",
               "zero_hi", "tiny", "huge"]


def gen_qdq_forward(g, op, count, start_tags=()):
    """Random+systematic cases for V2/V3/V4/V1 forward."""
    r = g.rng
    cases = []
    v1 = op == "QuantizeAndDequantize"
    v3 = op == "QuantizeAndDequantizeV3"
    # systematic sweep over num_bits x signedness
    combos = []
    for bits in range(1, 63):
        for signed in (True, False):
            if signed and bits > 61:
                continue
            combos.append((bits, signed))
    plan = []
    for bits, signed in combos:
        plan.append(dict(bits=bits, signed=signed))
    while len(plan) < count:
        bits = int(g.pick([1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 10, 12, 16, 16, 20, 24, 25, 30, 31,
                           32, 40, 53, 54, 61]))
        plan.append(dict(bits=bits, signed=bool(r.random() < 0.7)))
    plan = plan[:max(count, 0)] if len(plan) > count else plan
    for i, p in enumerate(plan):
        TIE_FLAG[0] = False
        bits, signed = p["bits"], p["signed"]
        T = F64 if r.random() < 0.3 else F32
        narrow = bool(r.random() < 0.35) and not v1
        rm = "HALF_UP" if (r.random() < 0.4 and not v1 and not v3) else "HALF_TO_EVEN"
        range_given = bool(r.random() < 0.55)
        rank = int(g.pick([0, 1, 1, 1, 2, 2, 3, 4, 5] if not v3 else [1, 1, 1, 2, 2, 3, 4, 5]))
        per_channel = (not v1) and rank >= 1 and r.random() < 0.35
        if per_channel and range_given and not v3:
            range_given = False  # V2/V4 reject given per-channel ranges (separate cases)
        axis = int(r.integers(0, rank)) if per_channel else -1
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(400 if big else 40))
        tags = list(start_tags)
        kind_set = RANGE_KINDS if range_given else [k for k in RANGE_KINDS]
        if per_channel:
            outer, C, inner = channel_view(shape, axis)
        else:
            outer, C, inner = 1, 1, int(np.prod(shape)) if shape else 1
        n = outer * inner
        data = np.empty((outer, C, inner), T)
        mins = np.empty(C, T)
        maxs = np.empty(C, T)
        for c in range(C):
            kind = g.pick(kind_set)
            lo, hi = g.rand_range(T, kind)
            if not signed and range_given and r.random() < 0.6 and kind in ("asym", "sym"):
                lo = T(0) if r.random() < 0.5 else lo
            if kind == "eq" and not range_given:
                tags.append("const_data")
            if kind in ("pos", "neg"):
                tags.append("range_excludes_zero")
            if kind == "eq":
                tags.append("min_eq_max")
            specials = []
            if r.random() < 0.25:
                specials += subnormals(T, r, 1 + int(r.integers(2)))
            if r.random() < 0.2:
                specials.append(T(-0.0))
            if range_given and r.random() < 0.2:
                specials.append(T(np.nan))
            if range_given and r.random() < 0.2:
                specials += [T(np.inf), T(-np.inf)]
            vals = qdq_channel_values(g, T, n, lo, hi, signed, bits, narrow, range_given, rm,
                                      specials)
            if not range_given:
                # data min/max must not be spoiled by specials; recompute raw range
                fin = vals[np.isfinite(vals)]
                lo, hi = (np.min(fin), np.max(fin)) if fin.size else (T(0), T(0))
                if fin.size and hi == 0 and np.any((vals == 0) & np.signbit(vals)) and \
                        np.any((vals == 0) & ~np.signbit(vals)):
                    # ambiguous sign of a zero data max: make all zeros positive
                    vals = np.where(vals == 0, T(0), vals).astype(T)
            data[:, c, :] = vals.reshape(outer, inner)
            mins[c], maxs[c] = lo, hi
        x = data.reshape(shape)
        dt = "float64" if T is F64 else "float32"
        attrs = {}
        if not (signed and r.random() < 0.3):
            attrs["signed_input"] = signed
        if v3:
            attrs_range_default = True
        else:
            attrs_range_default = False
            if not (bits == 8 and r.random() < 0.5):
                attrs["num_bits"] = bits
        if range_given != attrs_range_default or r.random() < 0.6:
            attrs["range_given"] = range_given
        if v1:
            if range_given:
                # V1's float attrs are float32; choose float32-representable bounds
                with np.errstate(all="ignore"):
                    lo32, hi32 = F32(mins[0]), F32(maxs[0])
                if not (lo32 <= hi32) or not np.isfinite(lo32) or not np.isfinite(hi32):
                    lo32, hi32 = F32(-1), F32(1)
                attrs["input_min"] = f32hex(lo32)
                attrs["input_max"] = f32hex(hi32)
            elif r.random() < 0.3:
                attrs["input_min"] = f32hex(F32(-3.5))
                attrs["input_max"] = f32hex(F32(2.25))
            inputs = {"input": (dt, x)}
        else:
            if narrow or r.random() < 0.3:
                attrs["narrow_range"] = narrow
            if not v3 and (rm != "HALF_TO_EVEN" or r.random() < 0.3):
                attrs["round_mode"] = rm
            if axis != -1 or r.random() < 0.2:
                attrs["axis"] = axis
            if per_channel:
                mn, mx = (mins, maxs) if range_given else (np.zeros(C, T) - T(1), np.ones(C, T))
            else:
                if range_given:
                    mn, mx = mins[0], maxs[0]
                    if mn > mx:
                        mn, mx = mx, mn
                else:
                    mn, mx = T(r.uniform(-2, 0)), T(r.uniform(0, 2))  # ignored by the kernel
            inputs = {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)}
            if v3:
                inputs["num_bits"] = ("int32", np.int32(bits))
        if per_channel:
            tags.append("per_channel")
        if big:
            tags.append("large")
        tags.append("random")
        if TIE_FLAG[0]:
            tags.append("tie")
        cases.append(mkcase(op, attrs, inputs, tags, "random around the quantisation grid"))
    return cases


def gen_qdq_special(g, op):
    """Hand-designed edge cases for the QDQ forward ops (V1..V4)."""
    r = g.rng
    v1 = op == "QuantizeAndDequantize"
    v3 = op == "QuantizeAndDequantizeV3"
    cases = []

    def add(T, x, lo, hi, signed=True, bits=8, rg=True, rm=None, narrow=None, axis=None,
            tags=(), note="", deviation=None, pass_min=None, pass_max=None):
        dt = "float64" if T is F64 else "float32"
        attrs = {}
        if v1:
            if rm not in (None, "HALF_TO_EVEN") or narrow or (axis not in (None, -1)):
                return
            attrs.update(signed_input=signed, num_bits=bits, range_given=rg)
            if rg and (F32(lo) != lo or F32(hi) != hi):
                return  # V1's range attrs are float32: not representable
            if rg:
                attrs["input_min"] = f32hex(lo)
                attrs["input_max"] = f32hex(hi)
            ins = {"input": (dt, np.asarray(x, T))}
        else:
            attrs["signed_input"] = signed
            if not v3:
                attrs["num_bits"] = bits
            attrs["range_given"] = rg
            if narrow is not None:
                attrs["narrow_range"] = narrow
            if rm is not None:
                if v3:
                    if rm != "HALF_TO_EVEN":
                        return
                else:
                    attrs["round_mode"] = rm
            if axis is not None:
                attrs["axis"] = axis
            mn = lo if pass_min is None else pass_min
            mx = hi if pass_max is None else pass_max
            ins = {"input": (dt, np.asarray(x, T)), "input_min": (dt, np.asarray(mn, T)),
                   "input_max": (dt, np.asarray(mx, T))}
            if v3:
                ins["num_bits"] = ("int32", np.int32(bits))
        c = mkcase(op, attrs, ins, tags, note)
        if deviation:
            c["deviation"] = deviation
        if v3 and np.ndim(x) == 0:
            c["expect_error"] = True  # V3 rejects rank-0 inputs (axis -1 < -rank)
            c["tags"].append("error")
        cases.append(c)

    for T in (F32, F64):
        tiny = np.finfo(T).tiny
        sm = np.finfo(T).smallest_subnormal
        inf, nan = T(np.inf), T(np.nan)
        for rm in ("HALF_TO_EVEN", "HALF_UP"):
            # exact ties with scale 1 (8-bit, [-128,127]) and scale 2^k
            xt = [T(v) for v in np.arange(-128.5, 128, 1.0)][::8] + [T(-0.5), T(0.5), T(1.5), T(-1.5),
                                                                       T(2.5), T(-2.5)]
            add(T, xt, T(-128), T(127), rm=rm, tags=["tie"], note="scale=1: exact ties")
            add(T, [T(v / 64) for v in np.arange(-4.5, 5, 1.0)], T(-2), T(127 / 64), rm=rm,
                tags=["tie"], note="scale=64: ties at k+0.5")
            add(T, [T(v) for v in np.arange(-8.5, 8, 1.0)], T(-8), T(7), bits=4, rm=rm,
                narrow=True, tags=["tie", "narrow"], note="4-bit narrow, ties")
            add(T, [T(v) for v in np.arange(-0.5, 256, 17.0)] + [T(0.5), T(1.5), T(254.5)],
                T(0), T(255), signed=False, rm=rm, tags=["tie", "unsigned"], note="unsigned ties")
            # data range with ties (V03-like)
            d = [T(-4), T(3.96875)] + [T(k / 64) for k in range(-9, 10, 2)]
            add(T, d, 0, 0, rg=False, rm=rm, tags=["tie"], note="data range, scale=32, ties")
            # specials with a given range
            add(T, [nan, inf, -inf, T(0), T(-0.0), sm, -sm, tiny, -tiny, T(0.5)], T(-1), T(1),
                rm=rm, tags=["nan", "inf", "neg_zero", "subnormal"], note="specials, given range")
            add(T, [inf, T(1), T(-2)], 0, 0, rg=False, rm=rm, tags=["inf"],
                note="data range with +inf: scale 0, inv inf -> NaN")
            add(T, [-inf, T(1), T(-2)], 0, 0, rg=False, rm=rm, tags=["inf"],
                note="data range with -inf")
            add(T, [T(-0.0), T(-0.0), T(0.5), T(-0.25)], 0, 0, rg=False, rm=rm,
                tags=["neg_zero"], note="signed zeros in data with nonzero range")
        # min == max, min > max handled, ranges excluding zero
        for lo, hi, nt in [(1, 1, "min==max>0"), (-1, -1, "min==max<0"), (0, 0, "min==max==0"),
                           (-0.0, 0, "-0..0"), (0.5, 1, "range excludes zero (pos)"),
                           (-2, -0.5, "range excludes zero (neg)"), (0, 1, "lo=0"),
                           (-1, 0, "hi=0"), (-1, -0.0, "hi=-0")]:
            for signed in (True, False):
                for narrow in (False, True):
                    add(T, [T(0.3), T(-0.2), T(2), T(-2), T(0), T(-0.0), T(0.75), T(-0.75)],
                        T(lo), T(hi), signed=signed, narrow=narrow,
                        tags=["min_eq_max" if lo == hi else "range_excludes_zero"],
                        note=nt)
        # data-range degenerate data
        for data, nt in [([T(2)] * 4, "constant positive data"), ([T(-2)] * 4, "constant negative"),
                         ([T(-1), T(-2), T(-1e-30)], "all negative (unsigned garbage)"),
                         ([T(0.5), T(1), T(3)], "all positive data")]:
            for signed in (True, False):
                add(T, data, 0, 0, rg=False, signed=signed, tags=["const_data"], note=nt)
        # all-zero data with a data range: sign of zeros is reduction-order dependent
        for data in ([T(0), T(-0.0), T(0)], [T(-0.0)] * 3, [T(0)] * 5, [T(0), T(-0.0)]):
            for signed in (True, False):
                add(T, data, 0, 0, rg=False, signed=signed, tags=["neg_zero"],
                    note="all-zero data", deviation="zero_sign")
        # NaN inside a data range: position dependent in TF
        for data in ([T(np.nan), T(1), T(-1), T(0.3)], [T(1), T(-1), T(0.3), T(np.nan)],
                     [T(1), T(np.nan), T(-1), T(0.3)] + [T(0.1)] * 13 + [T(np.nan)]):
            add(T, data, 0, 0, rg=False, tags=["nan"], note="NaN in data range",
                deviation="nan_in_data_range")
        # subnormal handling (DAZ/FTZ)
        if T is F32:
            # unsigned 62-bit, max=2^-64 -> scale 2^126, inv 2^-126 (normal); subnormal inputs
            add(T, [T(3 * 2.0 ** -128), T(2.0 ** -127), T(2.0 ** -126), T(2.0 ** -120),
                    T(-3 * 2.0 ** -128)], T(0), T(2.0 ** -64), signed=False, bits=62,
                tags=["subnormal"], note="DAZ probe: subnormal x times 2^126 would give levels 1..2")
            # inverse scale subnormal: hi=2^-88, 40-bit -> scale 2^127, inv 2^-127
            add(T, [T(2.0 ** -100), T(2.0 ** -88), T(-(2.0 ** -90)), T(0)], T(-(2.0 ** -88)),
                T(2.0 ** -88), bits=40, tags=["subnormal_intermediate"],
                note="inv = 2^-127 is subnormal")
            add(T, [T(2.0 ** -100), T(2.0 ** -88), T(-(2.0 ** -90)), T(2.0 ** -95)], 0, 0,
                rg=False, bits=40, tags=["subnormal_intermediate"],
                note="data range: inv subnormal")
            add(T, [T(1e-39), T(-3e-39), T(5e-40), T(2e-39)], 0, 0, rg=False,
                tags=["subnormal"], note="all-subnormal data range")
        else:
            add(T, [T(3 * 2.0 ** -1024), T(2.0 ** -1023), T(2.0 ** -1022), T(2.0 ** -1000),
                    T(-3 * 2.0 ** -1024)], T(0), T(2.0 ** -960), signed=False, bits=62,
                tags=["subnormal"], note="DAZ probe (f64): scale 2^1022, inv 2^-1022")
            add(T, [T(2.0 ** -1000), T(2.0 ** -984), T(-(2.0 ** -990)), T(0)], T(-(2.0 ** -984)),
                T(2.0 ** -984), bits=40, tags=["subnormal_intermediate"],
                note="f64: inv = 2^-1023 is subnormal")
            add(T, [T(1e-310), T(-3e-310), T(5e-311), T(2e-310)], 0, 0, rg=False,
                tags=["subnormal"], note="all-subnormal data range (f64)")
        # 1-bit and large bits
        for signed in (True, False):
            for narrow in (False, True):
                add(T, [T(0.3), T(-0.7), T(1), T(-1), T(0)], T(-1), T(1), signed=signed, bits=1,
                    narrow=narrow, tags=["narrow"] if narrow else [], note="num_bits=1")
                add(T, [T(0.3), T(-0.7), T(1), T(0.0)], 0, 0, rg=False, signed=signed, bits=1,
                    narrow=narrow, note="num_bits=1, data range")
        for rm in ("HALF_TO_EVEN", "HALF_UP"):
            if T is F32:
                xs = [T(8388609), T(8388611), T(-8388609), T(2.5), T(16777215), T(-2.5)]
                add(T, xs, T(-536870912), T(536870912), bits=30, rm=rm, tags=["tie"],
                    note="num_bits=30: HALF_UP odd integers >= 2^23")
            else:
                xs = [T(2.0 ** 52 + 1), T(2.0 ** 52 + 3), T(-(2.0 ** 52 + 1)), T(2.5), T(-2.5)]
                add(T, xs, T(-(2.0 ** 60)), T(2.0 ** 60), bits=61, rm=rm, tags=["tie"],
                    note="f64 num_bits=61: HALF_UP odd integers >= 2^52")
            for bits, signed in ((61, True), (62, False), (24, True), (25, True), (53, True),
                                 (54, True)):
                add(T, [T(0.1), T(-0.3), T(0.999), T(1), T(-1), T(1.0 / 3)], T(-1), T(1),
                    signed=signed, bits=bits, rm=rm, note="large num_bits")
        # empty tensors and ranks
        for shape in ([0], [2, 0], [0, 3], [3, 0, 2]):
            add(T, np.zeros(shape, T), T(-1), T(1), tags=["empty"], note="empty")
            add(T, np.zeros(shape, T), 0, 0, rg=False, tags=["empty"], note="empty, data range")
            if not v1:
                for ax in range(len(shape)):
                    C = shape[ax]
                    add(T, np.zeros(shape, T), np.zeros(C, T) - 1, np.ones(C, T), rg=False, axis=ax,
                        tags=["empty", "per_channel"], note="empty per-channel")
                    if v3:
                        add(T, np.zeros(shape, T), np.zeros(C, T) - 1, np.ones(C, T), rg=True,
                            axis=ax, tags=["empty", "per_channel"], note="empty per-channel given")
        add(T, T(0.3), T(-1), T(1), tags=["rank0"], note="rank 0")
        add(T, T(-0.7), 0, 0, rg=False, tags=["rank0"], note="rank 0, data range")
        # per-channel on every axis of ranks 1..5
        if not v1:
            for rank in range(1, 6):
                shape = [2, 3, 2, 2, 2][:rank]
                shape = [3] if rank == 1 else shape
                for ax in range(rank):
                    outer, C, inner = channel_view(shape, ax)
                    x = T(r.uniform(-2, 2, size=shape)).astype(T)
                    x = np.round(x * 16) / 16
                    x = x.astype(T)
                    for rm in ("HALF_TO_EVEN", "HALF_UP"):
                        add(T, x, np.zeros(C, T) - 1, np.ones(C, T), rg=False, axis=ax, rm=rm,
                            tags=["per_channel"], note="per-channel, data range, rank %d" % rank)
                    mn = np.array([-(1.0 + c) for c in range(C)], T)
                    mx = np.array([0.5 + c for c in range(C)], T)
                    if v3:
                        add(T, x, mn, mx, rg=True, axis=ax, tags=["per_channel"],
                            note="V3 per-channel given range, rank %d" % rank)
            # per-channel degenerate channels
            x = np.array([[0.3, -0.2, 2, -2], [0.1, 0.5, -0.5, 0.0], [1, 1, 1, 1]], T).T
            if v3:
                add(T, x, np.array([1, 0, 0.5], T), np.array([1, 0, 0.25], T), axis=1,
                    tags=["per_channel", "min_eq_max", "min_gt_max"],
                    note="V3 per-channel: min==max and min>max channels (unchecked)")
                add(T, x, np.array([-1, -2, 0.5], T), np.array([1, -1, 2], T), axis=1,
                    tags=["per_channel", "range_excludes_zero"], note="V3 per-channel excl. zero")
            add(T, np.array([[0, 1], [0, -1], [0, 2]], T), np.zeros(2, T), np.zeros(2, T),
                rg=False, axis=1, tags=["per_channel"],
                note="per-channel data range: an all-(+0) channel")
            # per-channel with given range on V2/V4: TF rejects (deviation)
            if not v3:
                pass  # recorded as error cases
        # float64-specific precision: values that differ from the float32 computation
        if T is F64:
            add(T, [T(0.3), T(-0.7), T(1 / 3), T(0.003937007874015748)], T(-1), T(1),
                note="float64 whole computation")
    return cases


def gen_v4grad(g, count):
    r = g.rng
    op = "QuantizeAndDequantizeV4Grad"
    cases = []

    def add(T, gr, x, mn, mx, axis=None, tags=(), note=""):
        dt = "float64" if T is F64 else "float32"
        attrs = {} if axis is None else {"axis": axis}
        cases.append(mkcase(op, attrs, {"gradients": (dt, np.asarray(gr, T)),
                                        "input": (dt, np.asarray(x, T)),
                                        "input_min": (dt, np.asarray(mn, T)),
                                        "input_max": (dt, np.asarray(mx, T))}, tags, note))

    for T in (F32, F64):
        sm = np.finfo(T).smallest_subnormal
        tiny = np.finfo(T).tiny
        inf, nan = T(np.inf), T(np.nan)
        xs = [nxt(-1, T, -1), T(-1), nxt(-1, T, 1), T(0), T(-0.0), nxt(1, T, -1), T(1),
              nxt(1, T, 1), nan, inf, -inf]
        gs = [T(2.0 ** k) for k in range(len(xs))]
        add(T, gs, xs, T(-1), T(1), tags=["nan", "inf"], note="inclusive mask on raw min/max")
        add(T, gs, xs, T(1), T(-1), tags=["min_gt_max"], note="min>max: all masked")
        add(T, gs, xs, T(0.5), T(0.5), tags=["min_eq_max"], note="min==max")
        add(T, gs, xs, T(0), T(0), tags=["min_eq_max"], note="min==max==0 (x=+-0 pass)")
        add(T, gs, xs, T(-0.0), T(-0.0), tags=["min_eq_max", "neg_zero"], note="min==max==-0")
        add(T, gs, xs, T(nan), T(1), tags=["nan"], note="NaN min")
        add(T, gs, xs, -inf, inf, tags=["inf"], note="infinite range")
        add(T, [T(-1), T(2), nan, inf, -inf, T(-0.0), T(0), T(3)],
            [T(5), T(5), T(5), T(5), T(5), T(5), T(5), T(0)], T(-1), T(1),
            tags=["nan", "inf", "neg_zero"], note="masked special gradients: g*0")
        add(T, [T(-1), T(2), nan, inf, -inf, T(-0.0), T(0), T(3)],
            [T(0)] * 8, T(-1), T(1), tags=["nan", "inf"], note="passed special gradients")
        add(T, [sm, -sm, tiny, -tiny, nxt(tiny, T, -1), T(1)],
            [T(0)] * 6, T(-1), T(1), tags=["subnormal"], note="subnormal gradients times 1.0")
        add(T, [T(1)] * 6, [-sm, sm, -nxt(tiny, T, -1), T(0), tiny, -tiny], T(0), T(1),
            tags=["subnormal"], note="subnormal inputs vs min=0 (DAZ probe)")
        add(T, [T(1)] * 4, [T(0), sm, T(2 * sm), T(1)], sm, T(1), tags=["subnormal"],
            note="subnormal min (DAZ probe)")
        for shape in ([0], [2, 0], [0, 3]):
            add(T, np.zeros(shape, T), np.zeros(shape, T), T(-1), T(1), tags=["empty"], note="empty")
            for ax in range(len(shape)):
                C = shape[ax]
                add(T, np.zeros(shape, T), np.zeros(shape, T), -np.ones(C, T), np.ones(C, T),
                    axis=ax, tags=["empty", "per_channel"], note="empty per-channel")
        add(T, T(3), T(0.5), T(-1), T(1), tags=["rank0"], note="rank 0")
        add(T, T(3), T(1.5), T(-1), T(1), tags=["rank0"], note="rank 0 masked")
    # per-channel on every axis for ranks 1..5, random
    for rank in range(1, 6):
        for ax in range(rank):
            for T in (F32, F64):
                shape = g.rand_shape(rank, maxel=48)
                C = shape[ax]
                mn = np.array([g.pick([-1.0, -0.5, 0.0, 0.25, -2.0, 1.0]) for _ in range(C)], T)
                mx = np.array([m + g.pick([0.0, 0.5, 1.0, 2.0, -0.5]) for m in mn], T)
                x = np.round(r.uniform(-2.5, 2.5, size=shape) * 4).astype(T) / T(4)
                gr = r.integers(-8, 9, size=shape).astype(T)
                add(T, gr, x.astype(T), mn, mx, axis=ax, tags=["per_channel"],
                    note="per-channel mask, rank %d axis %d" % (rank, ax))
    # random per-tensor
    while len(cases) < count:
        T = F64 if r.random() < 0.3 else F32
        rank = int(g.pick([0, 1, 1, 2, 3, 4, 5]))
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(300 if big else 48))
        lo, hi = g.rand_range(T, g.pick(RANGE_KINDS))
        if r.random() < 0.1:
            lo, hi = hi, lo
        n = int(np.prod(shape)) if shape else 1
        cand = [lo, hi, nxt(lo, T, -1), nxt(lo, T, 1), nxt(hi, T, -1), nxt(hi, T, 1)]
        l_, h_ = min(float(lo), float(hi)), max(float(lo), float(hi))
        x = [cand[int(r.integers(6))] if r.random() < 0.4 else
             T(r.uniform(l_ - (h_ - l_) * 0.3 - 1e-3, h_ + (h_ - l_) * 0.3 + 1e-3))
             for _ in range(n)]
        x = np.array(x, T).reshape(shape)
        gr = (r.integers(-16, 17, size=shape) * 2.0 ** r.integers(-3, 4, size=shape)).astype(T)
        tags = ["random"] + (["large"] if big else []) + (["min_gt_max"] if lo > hi else [])
        add(T, gr, x, lo, hi, axis=(-1 if r.random() < 0.3 else None), tags=tags,
            note="random mask test")
    return cases


# ---------------- FakeQuant ----------------

FQ_RANGE_KINDS = ["asym", "asym", "asym", "sym", "pow2", "unit", "pos", "neg", "zero_lo",
                  "zero_hi", "tiny", "huge", "default"]


def fq_range(g, kind):
    if kind == "default":
        return F32(-6), F32(6)
    if kind in ("tiny", "huge"):
        r = g.rng
        e = -30 if kind == "tiny" else 30
        a = F32(2.0 ** r.uniform(e - 10, e + 10 if kind == "huge" else e))
        return F32(-a * F32(r.uniform(0.1, 1))), F32(a)
    return g.rand_range(F32, kind)


def fq_boundary_points(op_kind, nmin, nmax, scale, inv, k, divide):
    """Float32 inputs where the quantised level switches from k-1 to k (exact, via model)."""
    out = []
    with np.errstate(all="ignore"):
        if not (np.isfinite(scale) and scale > 0 and np.isfinite(inv)):
            return out
        x0 = F32(float(nmin) + (k - 0.5) * float(scale))
        if not np.isfinite(x0):
            return out

        def lev(x):
            return float(fq_elem(np.array([x], F32), nmin, nmax, scale, inv, divide)[0])

        target = float(F32(F32(k) * scale)) if False else None
        base = lev(x0)
        # find the first x (going up from below) whose output differs from the one below
        x = x0
        lo_out = lev(nxt(x0, F32, -1))
        steps = 0
        if base == lo_out:
            # walk both ways to the nearest switch
            up, dn = x0, x0
            for steps in range(64):
                nu = nxt(up, F32, 1)
                if lev(nu) != lev(up):
                    TIE_FLAG[0] = True
                    out += [up, nu]
                    break
                nd = nxt(dn, F32, -1)
                if lev(nd) != lev(dn):
                    TIE_FLAG[0] = True
                    out += [nd, dn]
                    break
                up, dn = nu, nd
            else:
                out.append(x0)
        else:
            TIE_FLAG[0] = True
            out += [nxt(x0, F32, -1), x0]
    return out


def fq_values(g, n, mn, mx, bits, narrow, divide, specials, grad=False):
    r = g.rng
    nmin, nmax, scale, inv = fq_nudge(mn, mx, bits, narrow)
    qmin = 1 if narrow else 0
    qmax = (1 << bits) - 1
    vals = []
    if grad:
        vals += [nmin, nmax, nxt(nmin, F32, -1), nxt(nmax, F32, 1), nxt(nmin, F32, 1),
                 nxt(nmax, F32, -1)]
    span = qmax - qmin
    with np.errstate(all="ignore"):
        while len(vals) < n:
            k = r.random()
            if k < 0.25:
                lvl = int(r.integers(1, span + 1)) if r.random() < 0.6 else \
                    int(g.pick([1, 2, span, span - 1, max(1, span // 2)]))
                vals += fq_boundary_points(None, nmin, nmax, scale, inv, lvl, divide)
            elif k < 0.45:
                lvl = int(r.integers(0, span + 1))
                vals.append(F32(float(nmin) + lvl * float(scale)))
            elif k < 0.55:
                vals += [nmin, nmax, nxt(nmin, F32, -1), nxt(nmax, F32, 1)][int(r.integers(4)):][:1]
            else:
                w = float(nmax) - float(nmin)
                if not np.isfinite(w) or w <= 0:
                    w = abs(float(mx) - float(mn)) + 1.0
                vals.append(F32(r.uniform(float(nmin) - 0.1 * w, float(nmax) + 0.1 * w)))
    vals = [F32(v) if np.isfinite(v) else F32(0) for v in vals][:n]
    for sv in specials:
        if vals:
            vals[int(r.integers(len(vals)))] = F32(sv)
    return np.array(vals, F32)[r.permutation(len(vals))]


def fq_specials(g):
    r = g.rng
    sp = []
    if r.random() < 0.2:
        sp.append(F32(np.nan))
    if r.random() < 0.2:
        sp += [F32(np.inf), F32(-np.inf)]
    if r.random() < 0.2:
        sp.append(F32(-0.0))
    if r.random() < 0.2:
        sp += subnormals(F32, r, 1)
    return sp


def int_grads(g, shape, allow_special=False):
    r = g.rng
    gr = (r.integers(-8, 9, size=shape) * 2.0 ** r.integers(-2, 3, size=shape)).astype(F32)
    return gr


def gen_fq(g, op, count):
    r = g.rng
    cases = []
    is_args = op.startswith("FakeQuantWithMinMaxArgs")
    is_pc = "PerChannel" in op
    is_grad = op.endswith("Gradient")
    divide = op == "FakeQuantWithMinMaxVars"
    bits_plan = [b for b in range(2, 17)] * 3
    i = 0
    while len(cases) < count:
        bits = bits_plan[i] if i < len(bits_plan) else int(g.pick(
            [2, 3, 4, 5, 7, 8, 8, 8, 8, 10, 12, 14, 16, 16]))
        i += 1
        TIE_FLAG[0] = False
        narrow = bool(r.random() < 0.35)
        if is_pc:
            rank = int(g.pick([1, 2, 2, 3, 4] + ([] if is_grad else [5])))
        else:
            rank = int(g.pick([0, 1, 1, 1, 2, 2, 3, 4, 5]))
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(300 if big else 40))
        tags = ["random"] + (["large"] if big else [])
        specials = fq_specials(g)
        attrs = {}
        if bits != 8 or r.random() < 0.5:
            attrs["num_bits"] = bits
        if narrow or r.random() < 0.3:
            attrs["narrow_range"] = narrow
        if is_pc:
            d = shape[-1]
            mins, maxs = np.empty(d, F32), np.empty(d, F32)
            cols = []
            n = int(np.prod(shape)) // d
            for c in range(d):
                kind = g.pick(FQ_RANGE_KINDS + ["zero", "eq", "gt"])
                if kind == "zero":
                    mn, mx = F32(0), F32(0)
                    tags.append("min_eq_max")
                elif kind == "eq":
                    mn = mx = g.mag(F32) * F32(g.pick([1, -1]))
                    tags.append("min_eq_max")
                elif kind == "gt":
                    a, b = fq_range(g, "asym")
                    mn, mx = b, a
                    tags.append("min_gt_max")
                else:
                    mn, mx = fq_range(g, kind)
                mins[c], maxs[c] = mn, mx
                sp = specials if c == 0 else []
                if mn < mx:
                    col = fq_values(g, n, mn, mx, bits, narrow, False, sp, grad=is_grad)
                else:
                    col = np.array([F32(r.uniform(-3, 3)) for _ in range(n)], F32)
                cols.append(col)
            x = np.stack(cols, axis=-1).reshape(shape)
            inputs = {"inputs": ("float32", x), "min": ("float32", mins), "max": ("float32", maxs)}
            tags.append("per_channel")
        else:
            n = int(np.prod(shape)) if shape else 1
            kind = g.pick(FQ_RANGE_KINDS)
            if not is_args and r.random() < 0.12:
                kind = g.pick(["zero", "eq", "gt", "negzero"])
            if kind == "zero":
                mn, mx = F32(0), F32(0)
            elif kind == "negzero":
                mn, mx = F32(-0.0), F32(g.pick([0.0, -0.0]))
            elif kind == "eq":
                mn = mx = g.mag(F32) * F32(g.pick([1, -1]))
            elif kind == "gt":
                a, b = fq_range(g, "asym")
                mn, mx = b, a
            else:
                mn, mx = fq_range(g, kind)
            if kind in ("zero", "negzero", "eq"):
                tags.append("min_eq_max")
            if kind == "gt":
                tags.append("min_gt_max")
            if kind in ("pos", "neg"):
                tags.append("range_excludes_zero")
            if mn < mx:
                x = fq_values(g, n, mn, mx, bits, narrow, divide, specials, grad=is_grad)
            else:
                x = np.array([F32(r.uniform(-3, 3)) for _ in range(n)], F32)
            x = x.reshape(shape)
            if is_args:
                if kind == "default" and r.random() < 0.5:
                    pass  # rely on the default min/max attrs
                else:
                    attrs["min"] = f32hex(mn)
                    attrs["max"] = f32hex(mx)
                inputs = {"inputs": ("float32", x)}
            else:
                inputs = {"inputs": ("float32", x), "min": ("float32", mn), "max": ("float32", mx)}
        if is_grad:
            inputs["gradients"] = ("float32", int_grads(g, shape))
        if TIE_FLAG[0]:
            tags.append("tie")
        c = mkcase(op, attrs, inputs, tags, "random around the nudged grid")
        if op in ("FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient"):
            c["sum_outputs"] = ["backprop_wrt_min", "backprop_wrt_max"]
        cases.append(c)
    return cases


def gen_fq_special(g, op):
    r = g.rng
    cases = []
    is_args = op.startswith("FakeQuantWithMinMaxArgs")
    is_pc = "PerChannel" in op
    is_grad = op.endswith("Gradient")
    nan, inf = F32(np.nan), F32(np.inf)
    sm, tiny = np.finfo(F32).smallest_subnormal, np.finfo(F32).tiny

    def add(x, mn, mx, bits=None, narrow=None, gr=None, tags=(), note=""):
        x = np.asarray(x, F32)
        attrs = {}
        if bits is not None:
            attrs["num_bits"] = bits
        if narrow is not None:
            attrs["narrow_range"] = narrow
        if is_pc:
            if x.ndim == 0:
                return
            d = x.shape[-1]
            inputs = {"inputs": ("float32", x), "min": ("float32", np.full(d, mn, F32)),
                      "max": ("float32", np.full(d, mx, F32))}
        elif is_args:
            if not (F32(mn) < F32(mx)):
                return
            attrs["min"] = f32hex(mn)
            attrs["max"] = f32hex(mx)
            inputs = {"inputs": ("float32", x)}
        else:
            inputs = {"inputs": ("float32", x), "min": ("float32", F32(mn)),
                      "max": ("float32", F32(mx))}
        if is_grad:
            if gr is None:
                gr = (2.0 ** (np.arange(x.size) % 12)).astype(F32).reshape(x.shape)
            inputs["gradients"] = ("float32", np.asarray(gr, F32).reshape(x.shape))
        c = mkcase(op, attrs, inputs, tags, note)
        if op in ("FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient"):
            c["sum_outputs"] = ["backprop_wrt_min", "backprop_wrt_max"]
        cases.append(c)

    sp = [nan, inf, -inf, F32(0), F32(-0.0), sm, -sm, tiny, -tiny, F32(0.5), F32(-0.5), F32(3)]
    for bits in (2, 8, 16):
        for narrow in (False, True):
            add(sp, -1, 1, bits, narrow, tags=["nan", "inf", "neg_zero", "subnormal"],
                note="special values")
    # ties in level space (scale 1)
    t = [F32(v) for v in np.arange(-128.5, 128, 1.0)][::5] + [F32(v) for v in
                                                              (-2.5, -1.5, -0.5, 0.5, 1.5, 2.5)]
    for mn, mx in ((-128, 127), (-127.5, 127.5), (0, 255), (-255, 0)):
        add(t, mn, mx, 8, tags=["tie"], note="scale 1 ties")
    add([F32(v) for v in np.arange(-8.5, 8, 1.0)], -8, 7, 4, tags=["tie"], note="4-bit ties")
    add([F32(v) for v in np.arange(-8.5, 8, 1.0)], -7, 7, 4, True, tags=["tie", "narrow"],
        note="4-bit narrow ties")
    # zero-point rounding cases
    for mn, mx in ((-1, 1), (-6, 6), (-127.5, 127.5), (-0.5, 0.5), (-3, 1), (-1, 3), (1, 6),
                   (-6, -1), (0.001, 0.002), (-1e-3, 5e-4), (-65535, 0), (0, 65535)):
        for bits in (2, 8, 16):
            x = [F32(mn) + (F32(mx) - F32(mn)) * F32(k / 10) for k in range(-2, 13)]
            add(x, mn, mx, bits, tags=["range_excludes_zero"] if mn > 0 or mx < 0 else [],
                note="zero-point nudging")
    # degenerate ranges for Vars/PerChannel
    for mn, mx, nt in ((0, 0, "min==max==0"), (-0.0, 0, "-0,0"), (0, -0.0, "0,-0"),
                       (-0.0, -0.0, "-0,-0"), (1, 1, "min==max>0"), (-2, -2, "min==max<0"),
                       (1, -1, "min>max"), (nan, 1, "NaN min"), (-1, nan, "NaN max"),
                       (-inf, 1, "-inf min"), (-1, inf, "inf max"), (-inf, inf, "inf range")):
        add([F32(0.3), F32(-5), nan, F32(2), F32(0), F32(-0.0), F32(-1), F32(1)], mn, mx,
            tags=["min_eq_max" if mn == mx else "min_gt_max" if mn > mx else "inf"], note=nt)
    # subnormal handling probes
    add([F32(2.0 ** -125), F32(2.0 ** -130), F32(-(2.0 ** -128)), F32(0), F32(2.0 ** -121)],
        -(2.0 ** -120), 2.0 ** -120, tags=["subnormal_intermediate"],
        note="tiny range: scale 2^-119/255 is subnormal")
    add([F32(2.0 ** -100), F32(2.0 ** -99), F32(-(2.0 ** -101)), F32(0), F32(3 * 2.0 ** -102)],
        -(2.0 ** -100), 2.0 ** -100, 2, tags=["subnormal"], note="small normal range")
    add([sm, F32(5 * sm), -sm, tiny, F32(0)], -1, 1, 16, gr=[F32(1)] * 5,
        tags=["subnormal"], note="subnormal inputs, 16-bit")
    add([F32(0), F32(0), F32(5), F32(5), F32(-5), F32(-5)], -1, 1,
        gr=[sm, -sm, F32(1.5 * tiny), -tiny, F32(3 * sm), tiny], tags=["subnormal"],
        note="subnormal gradients (pass-through and sums)")
    if is_grad:
        add([F32(0), F32(0.5), F32(5), F32(-5), F32(0.25), F32(5)], -1, 1,
            gr=[nan, inf, F32(1), F32(2), -inf, F32(4)], tags=["nan", "inf"],
            note="NaN/inf gradients inside the range: are they excluded from the sums?")
        add([F32(0), F32(5), F32(5), F32(-5), F32(-5), F32(0.5)], -1, 1,
            gr=[F32(1), nan, F32(2), inf, F32(3), F32(-0.0)], tags=["nan", "inf"],
            note="NaN/inf gradients outside the range (summed)")
    # empty tensors and ranks
    for shape in ([0], [2, 0], [0, 3], [3, 0, 2], [0, 0]):
        add(np.zeros(shape, F32), -1, 1, tags=["empty"], note="empty")
    add(F32(0.3), -1, 1, tags=["rank0"], note="rank 0")
    for rank in range(1, 6 if not (is_pc and is_grad) else 5):
        shape = [2, 3, 1, 2, 2][:rank]
        x = np.round(r.uniform(-1.5, 1.5, size=shape) * 32).astype(F32) / F32(32)
        add(x, -1, 1, 8, tags=["rank%d" % rank], note="rank %d" % rank)
    if is_pc:
        # different range per channel incl. degenerate ones, rank 1..4/5
        mins = np.array([-1, 0, -0.5, 1, 0.5, -2, -0.0], F32)
        maxs = np.array([1, 0, 0.5, 4, 0.5, -3, 0.0], F32)
        for rank in range(1, 6 if not is_grad else 5):
            shape = [2, 1, 2, 2][:rank - 1] + [7]
            x = np.round(r.uniform(-4, 4, size=shape) * 8).astype(F32) / F32(8)
            x.reshape(-1, 7)[0, :] = [nan, -inf, 0.3, inf, -0.0, 1.0, sm][:7]
            inputs = {"inputs": ("float32", x), "min": ("float32", mins),
                      "max": ("float32", maxs)}
            if is_grad:
                inputs["gradients"] = ("float32", int_grads(g, shape))
            c = mkcase(op, {"num_bits": 5}, inputs,
                       ["per_channel", "min_eq_max", "min_gt_max", "nan", "inf"],
                       "degenerate channels rank %d" % rank)
            if is_grad:
                c["sum_outputs"] = ["backprop_wrt_min", "backprop_wrt_max"]
            cases.append(c)
    return cases


def gen_fq_pairs(g, count):
    """Same inputs through Args, Vars and PerChannel (exposes Vars dividing vs multiplying)."""
    r = g.rng
    out = {"FakeQuantWithMinMaxArgs": [], "FakeQuantWithMinMaxVars": [],
           "FakeQuantWithMinMaxVarsPerChannel": []}
    for i in range(count):
        bits = int(g.pick([8, 12, 14, 16, 16]))
        mn = F32(-r.uniform(0.05, 2))
        mx = F32(r.uniform(0.05, 2))
        nmin, nmax, scale, inv = fq_nudge(mn, mx, bits, False)
        # search for x where Vars and Args differ
        xs = []
        for _ in range(4000):
            x = F32(r.uniform(float(nmin), float(nmax)))
            a = fq_elem(np.array([x]), nmin, nmax, scale, inv, False)[0]
            b = fq_elem(np.array([x]), nmin, nmax, scale, inv, True)[0]
            if a != b:
                xs.append(x)
                if len(xs) >= 6:
                    break
        while len(xs) < 8:
            xs.append(F32(r.uniform(float(nmin), float(nmax))))
        x = np.array(xs, F32)
        tags = ["vars_vs_args"]
        out["FakeQuantWithMinMaxArgs"].append(mkcase(
            "FakeQuantWithMinMaxArgs", {"min": f32hex(mn), "max": f32hex(mx), "num_bits": bits},
            {"inputs": ("float32", x)}, tags, "paired with Vars/PerChannel: multiply by inv"))
        out["FakeQuantWithMinMaxVars"].append(mkcase(
            "FakeQuantWithMinMaxVars", {"num_bits": bits},
            {"inputs": ("float32", x), "min": ("float32", mn), "max": ("float32", mx)}, tags,
            "paired with Args/PerChannel: Vars divides by scale"))
        out["FakeQuantWithMinMaxVarsPerChannel"].append(mkcase(
            "FakeQuantWithMinMaxVarsPerChannel", {"num_bits": bits},
            {"inputs": ("float32", x.reshape(-1, 1)), "min": ("float32", np.array([mn])),
             "max": ("float32", np.array([mx]))}, tags + ["per_channel"],
            "paired with Args/Vars: multiply by inv"))
    return out


# --------------------------------------------------------------------------------------
# Error cases (spec section 5)
# --------------------------------------------------------------------------------------


def gen_errors():
    E = []
    f = lambda *a: np.array(a, F32)  # noqa: E731
    x23 = np.arange(6, dtype=F32).reshape(2, 3) / F32(4) - F32(0.5)
    s = F32

    def add(op, attrs, inputs, note, **kw):
        c = mkcase(op, attrs, inputs, ["error"], note, expect_error=True, **kw)
        E.append(c)

    fl = lambda a: ("float32", np.asarray(a, F32))  # noqa: E731
    # ---- V1
    add("QuantizeAndDequantize", {}, {"input": fl(f(0.5, -0.25))},
        "V1 in a modern graph (producer >= 22)", v1_mode="modern")
    for nb, sg in ((0, True), (-1, True), (62, True), (63, False), (100, False)):
        add("QuantizeAndDequantize", {"num_bits": nb, "signed_input": sg},
            {"input": fl(f(0.5, -0.25))}, "V1 num_bits out of range")
    add("QuantizeAndDequantize", {"range_given": True, "input_min": f32hex(1), "input_max": f32hex(0)},
        {"input": fl(f(0.5, -0.25))}, "V1 range_given, input_min > input_max")
    add("QuantizeAndDequantize", {"range_given": True, "input_min": f32hex(1),
                                  "input_max": f32hex(np.nan)},
        {"input": fl(f(0.5, -0.25))}, "V1 range_given, NaN input_max")
    add("QuantizeAndDequantize", {}, {"input": ("float16", np.array([0.5], np.float16))},
        "V1 half")
    # ---- V2 / V4
    for op in ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4"):
        def q(attrs, x, mn, mx, note, op=op):
            dt = "float64" if np.asarray(x).dtype == F64 else "float32"
            add(op, attrs, {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)}, note)
        for nb, sg in ((0, True), (-1, True), (62, True), (63, False), (64, False), (100, True)):
            q({"num_bits": nb, "signed_input": sg, "range_given": True}, x23, s(-1), s(1),
              "num_bits out of range")
        q({"axis": -2}, x23, s(-1), s(1), "axis < -1, scalar min/max")
        q({"axis": -2}, x23, f(-1, -1), f(1, 1), "axis < -1, rank-1 min/max")
        q({"axis": -5}, x23, f(-1, -1, -1), f(1, 1, 1), "axis -5")
        q({"axis": 2}, x23, f(-1, -1), f(1, 1), "axis >= rank")
        q({"axis": 2}, x23, s(-1), s(1), "axis >= rank, scalar min/max")
        q({"axis": 0}, s(0.5), f(-1), f(1), "axis 0 on a rank-0 input")
        q({"axis": 5}, np.zeros([1, 2, 1, 2, 1], F32), f(0, 0), f(1, 1), "axis 5 on rank 5")
        q({"range_given": True}, x23, f(-1), s(1), "range_given, input_min shape [1]")
        q({"range_given": True}, x23, s(-1), f(1), "range_given, input_max shape [1]")
        q({"range_given": True}, x23, f(-1, -1), f(1, 1), "range_given, rank-1 min/max axis -1")
        c = len(E)
        q({"range_given": True, "axis": 1}, x23, f(-1, -1, -1), f(1, 1, 1),
          "per-channel given range (TF 2.21 rejects every such call)")
        q({"range_given": True, "axis": 0}, x23, f(-1, -0.5), f(1, 0.5),
          "per-channel given range axis 0")
        q({"range_given": True, "axis": 0, "num_bits": 4}, np.zeros([2, 0], F32), f(-1, -0.5),
          f(1, 0.5), "per-channel given range, empty input")
        q({"range_given": True, "axis": 1}, x23, s(-1), s(1),
          "per-channel given range with scalar min/max")
        for e in E[c:]:
            e["deviation"] = "per_channel_given_range"
        q({"range_given": True}, x23, s(1), s(0), "min > max")
        q({"range_given": True}, x23, s(np.nan), s(1), "NaN min")
        q({"range_given": True}, x23, s(-1), s(np.nan), "NaN max")
        q({"range_given": True, "signed_input": False}, x23, s(2), s(1),
          "unsigned, min > max")
        q({"range_given": True}, x23.astype(F64), F64(0.5), F64(0.25), "float64 min > max")
        q({"range_given": False}, x23, f(-1), f(1), "data range, rank-1 min/max with axis -1 "
          "(shape fn only)")
        q({"range_given": False, "axis": 0}, x23, s(-1), s(1),
          "data range per-channel, scalar min/max (shape fn only)")
        q({"range_given": False, "axis": 0}, x23, f(-1, -1), f(1, 1, 1),
          "min/max shapes differ (shape fn only)")
        q({"range_given": False, "axis": 0}, x23, f(-1, -1, -1), f(1, 1, 1),
          "min dim != input dim (shape fn only)")
        q({"round_mode": "HALF_AWAY"}, x23, s(-1), s(1), "invalid round_mode")
        q({"round_mode": "half_up"}, x23, s(-1), s(1), "round_mode is case sensitive")
        add(op, {}, {"input": ("float16", np.array([0.5], np.float16)),
                     "input_min": ("float16", np.float16(-1)),
                     "input_max": ("float16", np.float16(1))}, "half: no kernel")
        add(op, {}, {"input": ("bfloat16", f(0.5)), "input_min": ("bfloat16", s(-1)),
                     "input_max": ("bfloat16", s(1))}, "bfloat16: no kernel")
        add(op, {}, {"input": ("float32", f(0.5)), "input_min": ("float64", F64(-1)),
                     "input_max": ("float64", F64(1))}, "mixed dtypes")
        add(op, {}, {"input": ("int32", np.array([1], np.int32)),
                     "input_min": ("int32", np.int32(-1)),
                     "input_max": ("int32", np.int32(1))}, "int32 input")
    # ---- V3
    op = "QuantizeAndDequantizeV3"

    def q3(attrs, x, mn, mx, nb, note, nbdt="int32"):
        dt = "float64" if np.asarray(x).dtype == F64 else "float32"
        add(op, attrs, {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx),
                        "num_bits": (nbdt, np.asarray(nb, NP_DTYPES[nbdt]))}, note)

    q3({"axis": 2}, x23, f(-1, -1), f(1, 1), 8, "axis >= rank")
    q3({"axis": -3}, x23, s(-1), s(1), 8, "axis < -rank")
    q3({"axis": -2}, x23, f(-1, -1), f(1, 1), 8, "-rank <= axis <= -2 (CHECK failure)")
    q3({"axis": -2}, np.zeros([2, 2, 2], F32), f(-1, -1), f(1, 1), 8,
       "axis -2 on rank 3 (CHECK failure)")
    q3({"axis": -3}, np.zeros([2, 2, 2], F32), f(-1, -1), f(1, 1), 8, "axis -3 on rank 3")
    q3({}, x23, s(-1), s(1), np.array([8], np.int32), "num_bits tensor shape [1]")
    q3({}, x23, s(-1), s(1), np.array([8, 8], np.int32), "num_bits tensor shape [2]")
    for nb, sg in ((0, True), (-5, True), (62, True), (63, False), (64, False)):
        q3({"signed_input": sg}, x23, s(-1), s(1), nb, "num_bits value out of range")
    q3({}, x23, s(1), s(0), 8, "min > max")
    q3({}, x23, s(np.nan), s(0), 8, "NaN min")
    q3({"range_given": True}, x23, f(-1, -1), f(1, 1), 8,
       "axis -1, min/max with 2 elements (CHECK failure)")
    q3({"range_given": True}, x23, s(-1), f(1, 1), 8, "axis -1, max with 2 elements")
    q3({"range_given": True, "axis": 1}, x23, f(-1), f(1), 8, "per-channel, wrong min length")
    q3({"range_given": True, "axis": 1}, x23, f(-1, -1, -1), f(1, 1), 8,
       "per-channel, wrong max length")
    q3({"range_given": True, "axis": 1}, x23, s(-1), s(1), 8, "per-channel, scalar min/max")
    q3({"range_given": False}, x23, f(-1, -1), f(1, 1), 8,
       "data range, rank-1 min/max axis -1 (shape fn only?)")
    q3({"range_given": False, "axis": 1}, x23, s(-1), s(1), 8,
       "data range per-channel, scalar min/max (shape fn only?)")
    q3({}, x23, s(-1), s(1), 8, "num_bits int64", nbdt="int64")
    add(op, {}, {"input": ("float16", np.array([0.5], np.float16)),
                 "input_min": ("float16", np.float16(-1)), "input_max": ("float16", np.float16(1)),
                 "num_bits": ("int32", np.int32(8))}, "half: no kernel")
    # ---- V4Grad
    op = "QuantizeAndDequantizeV4Grad"

    def qg(attrs, gr, x, mn, mx, note):
        add(op, attrs, {"gradients": ("float32", gr), "input": ("float32", x),
                        "input_min": ("float32", mn), "input_max": ("float32", mx)}, note)

    qg({"axis": -2}, x23, x23, s(-1), s(1), "axis < -1")
    qg({"axis": -2}, x23, x23, f(-1, -1), f(1, 1), "axis < -1, rank-1 min")
    qg({"axis": 1}, f(1, 2), f(1, 2), f(-1), f(1), "axis >= rank (rank 1)")
    qg({"axis": 2}, x23, x23, f(-1, -1, -1), f(1, 1, 1), "axis >= rank (rank 2)")
    qg({"axis": 0}, s(1), s(1), f(-1), f(1), "axis 0, rank-0 input")
    qg({}, x23, x23.T.copy(), s(-1), s(1), "gradients/input shapes differ")
    qg({}, f(1, 2), f(1, 2, 3), s(-1), s(1), "gradients/input sizes differ")
    qg({}, x23, x23, np.zeros([1, 1], F32), s(1), "min rank 2")
    qg({}, x23, x23, s(-1), np.zeros([1, 1], F32), "max rank 2")
    qg({"axis": 1}, x23, x23, f(-1, -1), f(1, 1, 1), "per-channel, wrong min length")
    qg({"axis": 1}, x23, x23, f(-1, -1, -1), f(1, 1), "per-channel, wrong max length")
    qg({"axis": 1}, x23, x23, s(-1), s(1), "per-channel, scalar min/max")
    qg({}, x23, x23, f(-1), s(1), "axis -1 and min shape [1]")
    qg({}, x23, x23, s(-1), f(1, 1), "axis -1 and max shape [2]")
    add(op, {}, {"gradients": ("float16", np.array([1], np.float16)),
                 "input": ("float16", np.array([0.5], np.float16)),
                 "input_min": ("float16", np.float16(-1)), "input_max": ("float16", np.float16(1))},
        "half: no kernel")
    # ---- FakeQuant
    fq_inputs = {
        "FakeQuantWithMinMaxArgs": lambda x: {"inputs": fl(x)},
        "FakeQuantWithMinMaxArgsGradient": lambda x: {"gradients": fl(np.ones_like(x)),
                                                      "inputs": fl(x)},
        "FakeQuantWithMinMaxVars": lambda x: {"inputs": fl(x), "min": fl(s(-1)), "max": fl(s(1))},
        "FakeQuantWithMinMaxVarsGradient": lambda x: {"gradients": fl(np.ones_like(x)),
                                                      "inputs": fl(x), "min": fl(s(-1)),
                                                      "max": fl(s(1))},
        "FakeQuantWithMinMaxVarsPerChannel": lambda x: {"inputs": fl(x), "min": fl(f(-1, -1, -1)),
                                                        "max": fl(f(1, 1, 1))},
        "FakeQuantWithMinMaxVarsPerChannelGradient": lambda x: {
            "gradients": fl(np.ones_like(x)), "inputs": fl(x), "min": fl(f(-1, -1, -1)),
            "max": fl(f(1, 1, 1))},
    }
    for op, mk in fq_inputs.items():
        for nb in (0, 1, 17, 32):
            add(op, {"num_bits": nb}, mk(x23), "num_bits out of [2,16]")
        ins = mk(x23)
        ins = {k: (("float64", v[1].astype(F64))) for k, v in ins.items()}
        add(op, {}, ins, "float64 inputs (FakeQuant is float32 only)")
    for op in ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgsGradient"):
        mk = fq_inputs[op]
        for mn, mx, nt in ((1, 1, "min == max"), (1, 0, "min > max"), (0, 0, "min == max == 0"),
                           (np.nan, 1, "NaN min"), (-1, np.nan, "NaN max"),
                           (2.0 ** -149, 2.0 ** -149, "min == max subnormal"),
                           (-(2.0 ** -149), 2.0 ** -149, "min < max, both subnormal (DAZ?)"),
                           (0, 2.0 ** -130, "min 0 < max subnormal (DAZ?)")):
            add(op, {"min": f32hex(mn), "max": f32hex(mx)}, mk(x23), nt)
    op = "FakeQuantWithMinMaxArgsGradient"
    add(op, {}, {"gradients": fl(np.ones([1, 2], F32)), "inputs": fl(f(0.5, 0.25))},
        "gradients/inputs shapes differ (same size)")
    add(op, {}, {"gradients": fl(np.ones([2, 3], F32)), "inputs": fl(x23.T.copy())},
        "gradients/inputs shapes differ (transposed)")
    add(op, {}, {"gradients": fl(np.ones([3], F32)), "inputs": fl(f(0.5, 0.25))},
        "gradients/inputs sizes differ")
    for op in ("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsGradient"):
        base = fq_inputs[op](x23)
        for k in ("min", "max"):
            ins = dict(base)
            ins[k] = fl(f(1 if k == "max" else -1))
            add(op, {}, ins, "%s shape [1]" % k)
            ins = dict(base)
            ins[k] = fl(np.zeros([1, 1], F32) + (1 if k == "max" else -1))
            add(op, {}, ins, "%s rank 2" % k)
    for op in ("FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient"):
        base = fq_inputs[op](x23)
        ins = dict(base)
        ins["gradients"] = fl(np.ones([3, 2], F32))
        add(op, {}, ins, "gradients/inputs shapes differ")
        ins = dict(base)
        ins["gradients"] = fl(np.ones([2, 4], F32))
        add(op, {}, ins, "gradients/inputs sizes differ")
    for op in ("FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannelGradient"):
        base = fq_inputs[op](x23)
        for k in ("min", "max"):
            ins = dict(base)
            ins[k] = fl(s(1 if k == "max" else -1))
            add(op, {}, ins, "%s rank 0" % k)
            ins = dict(base)
            ins[k] = fl(np.zeros([1, 3], F32) + (1 if k == "max" else -1))
            add(op, {}, ins, "%s rank 2" % k)
            ins = dict(base)
            ins[k] = fl(f(1 if k == "max" else -1))
            add(op, {}, ins, "len(%s) != last dim" % k)
            ins = dict(base)
            ins[k] = fl(np.zeros([4], F32) + (1 if k == "max" else -1))
            add(op, {}, ins, "len(%s) 4 != last dim 3" % k)
        ins = dict(base)
        ins["inputs"] = fl(s(0.5))
        if "gradients" in ins:
            ins["gradients"] = fl(s(1))
        ins["min"], ins["max"] = fl(f(-1)), fl(f(1))
        add(op, {}, ins, "rank-0 inputs (CHECK failure)")
    op = "FakeQuantWithMinMaxVarsPerChannelGradient"
    x5 = (np.arange(24, dtype=F32).reshape(1, 2, 2, 2, 3) / F32(8) - F32(1.5))
    add(op, {}, {"gradients": fl(np.ones_like(x5)), "inputs": fl(x5), "min": fl(f(-1, -1, -1)),
                 "max": fl(f(1, 1, 1))}, "rank 5 (shape fn only)",
        sum_outputs=["backprop_wrt_min", "backprop_wrt_max"])
    x6 = np.zeros([1, 1, 2, 1, 1, 3], F32)
    add(op, {}, {"gradients": fl(np.ones_like(x6)), "inputs": fl(x6), "min": fl(f(-1, -1, -1)),
                 "max": fl(f(1, 1, 1))}, "rank 6 (shape fn only)",
        sum_outputs=["backprop_wrt_min", "backprop_wrt_max"])
    return E


# --------------------------------------------------------------------------------------
# Spec vectors (section 6)
# --------------------------------------------------------------------------------------


def split_top(s, sep):
    return [p.strip() for p in s.split(sep)]


def parse_spec_vectors(path):
    rows = []
    with open(path) as fh:
        for line in fh:
            m = re.match(r"^\| (V\d\d) \| (.*)\|\s*$", line)
            if not m:
                continue
            cols = [c.strip() for c in m.group(2).split(" | ")]
            vid = m.group(1)
            op, attrs_s, ins_s, outs_s = cols[0], cols[1], cols[2], cols[3]
            attrs = {}
            for part in attrs_s.split(", "):
                if ": " in part:
                    k, v = part.split(": ", 1)
                    attrs[k.strip()] = v.strip()
            ins = {}
            for part in ins_s.split("; "):
                mm = re.match(r"(\w+)(?:\[([\d, ]*)\]|\((scalar)\)): (.*)$", part.strip())
                name, shp, scal, vals = mm.groups()
                shape = [] if scal else [int(d) for d in shp.split(",") if d.strip()]
                ins[name] = (shape, [v.strip() for v in vals.split(",")])
            outs = []
            for part in outs_s.split("; "):
                mm = re.match(r"out(\d): (.*)$", part.strip())
                items = []
                for tok in mm.group(2).split(", "):
                    tok = tok.strip()
                    hm = re.search(r"\[([^\]]+)\]", tok)
                    items.append(hm.group(1) if hm else tok)
                outs.append(items)
            rows.append(dict(id=vid, op=op, attrs=attrs, ins=ins, outs=outs, ref=cols[4],
                             note=cols[5] if len(cols) > 5 else ""))
    return rows


def spec_cases(path):
    rows = parse_spec_vectors(path)
    cases = []
    skipped = []
    for row in rows:
        vid, op, a = row["id"], row["op"], row["attrs"]
        T = F64 if a.get("T") == "float64" else F32
        dt = "float64" if T is F64 else "float32"

        def arr(name, T=T):
            shape, vals = row["ins"][name]
            return np.array([T(float(v)) for v in vals], T).reshape(shape)

        def boolv(k):
            return a[k] == "True"

        expect = [[(float.fromhex(h) if h not in ("nan", "inf", "-inf") else float(h))
                   for h in o] for o in row["outs"]]
        note = row["note"]
        base_tags = ["spec"]

        def qdq_attrs(with_bits=True, with_round=True):
            at = {}
            for k in ("signed_input", "range_given", "narrow_range"):
                if k in a:
                    at[k] = boolv(k)
            if with_bits and "num_bits" in a:
                at["num_bits"] = int(a["num_bits"])
            if with_round and "round_mode" in a:
                at["round_mode"] = a["round_mode"]
            if "axis" in a:
                at["axis"] = int(a["axis"])
            return at

        if op in ("QuantizeAndDequantizeV4", "QuantizeAndDequantizeV2"):
            at = qdq_attrs()
            x = arr("input")
            ax = at.get("axis", -1)
            if ax >= 0:
                C = x.shape[ax]
                mn, mx = np.zeros(C, T), np.zeros(C, T)
            else:
                mn = T(float(a["min"])) if "min" in a else T(0)
                mx = T(float(a["max"])) if "max" in a else T(0)
            c = mkcase(op, at, {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)},
                       base_tags, note, id=vid, spec_expect=expect)
            if vid == "V19":
                c["deviation"] = "zero_sign"
            cases.append(c)
        elif op == "QuantizeAndDequantizeV3":
            at = qdq_attrs(with_bits=False, with_round=False)
            x = arr("input")
            if "input_min" in row["ins"]:
                mn, mx = arr("input_min"), arr("input_max")
            else:
                mn, mx = T(float(a["min"])) if "min" in a else T(-1), \
                    T(float(a["max"])) if "max" in a else T(1)
            cases.append(mkcase(op, at, {"input": (dt, x), "input_min": (dt, mn),
                                         "input_max": (dt, mx),
                                         "num_bits": ("int32", np.int32(int(a["num_bits"])))},
                                base_tags, note, id=vid, spec_expect=expect))
        elif op == "QuantizeAndDequantize(V1)":
            at = qdq_attrs()
            if "input_min" in a:
                at["input_min"] = f32hex(float(a["input_min"]))
                at["input_max"] = f32hex(float(a["input_max"]))
            cases.append(mkcase("QuantizeAndDequantize", at, {"input": (dt, arr("input"))},
                                base_tags, note, id=vid, spec_expect=expect))
        elif op == "QuantizeAndDequantizeV4Grad":
            at = {"axis": int(a["axis"])} if "axis" in a else {}
            cases.append(mkcase(op, at, {k: (dt, arr(k)) for k in row["ins"]}, base_tags, note,
                                id=vid, spec_expect=expect))
        elif op.startswith("FakeQuantWithMinMax"):
            at = {}
            if "num_bits" in a:
                at["num_bits"] = int(a["num_bits"])
            if "narrow_range" in a:
                at["narrow_range"] = boolv("narrow_range")
            ins = {k: ("float32", arr(k, F32)) for k in row["ins"]}
            if op.startswith("FakeQuantWithMinMaxArgs"):
                if "min" in a:
                    at["min"] = f32hex(float(a["min"]))
                    at["max"] = f32hex(float(a["max"]))
            elif "min" not in ins:
                ins["min"] = ("float32", F32(float(a["min"])))
                ins["max"] = ("float32", F32(float(a["max"])))
            c = mkcase(op, at, ins, base_tags, note, id=vid, spec_expect=expect)
            if op in ("FakeQuantWithMinMaxVarsGradient",
                      "FakeQuantWithMinMaxVarsPerChannelGradient"):
                c["sum_outputs"] = ["backprop_wrt_min", "backprop_wrt_max"]
            cases.append(c)
        elif op.startswith("tf.quantization.quantize_and_dequantize_v2"):
            # wrapper + tape.gradient -> forward V4 op, then V4Grad with g = ones
            x = arr("input")
            mn, mx = T(float(a["input_min"])), T(float(a["input_max"]))
            at = {"range_given": boolv("range_given")}
            cases.append(mkcase("QuantizeAndDequantizeV4", at,
                                {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)},
                                base_tags + ["wrapper"], "forward of " + op + ": " + note,
                                id=vid + "-fwd", spec_expect=[expect[0]]))
            cases.append(mkcase("QuantizeAndDequantizeV4Grad", {},
                                {"gradients": (dt, np.ones_like(x)), "input": (dt, x),
                                 "input_min": (dt, mn), "input_max": (dt, mx)},
                                base_tags + ["wrapper"], "gradient of " + op + " (g = ones): " + note,
                                id=vid + "-grad", spec_expect=[expect[1]]))
        elif op.startswith("tf.quantization.quantize_and_dequantize+"):
            x = arr("input")
            mn, mx = T(float(a["input_min"])), T(float(a["input_max"]))
            cases.append(mkcase("QuantizeAndDequantizeV2", {"range_given": boolv("range_given")},
                                {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)},
                                base_tags + ["wrapper"],
                                "forward of " + op + " (its gradient is straight-through, no op)",
                                id=vid + "-fwd", spec_expect=[expect[0]]))
        elif op.startswith("tf.quantization.fake_quant_with_min_max_vars+"):
            x = arr("inputs")
            mn, mx = F32(float(a["min"])), F32(float(a["max"]))
            cases.append(mkcase("FakeQuantWithMinMaxVars", {},
                                {"inputs": ("float32", x), "min": ("float32", mn),
                                 "max": ("float32", mx)}, base_tags + ["wrapper"],
                                "forward of " + op, id=vid + "-fwd", spec_expect=[expect[0]]))
            c = mkcase("FakeQuantWithMinMaxVarsGradient", {},
                       {"gradients": ("float32", np.ones_like(x)), "inputs": ("float32", x),
                        "min": ("float32", mn), "max": ("float32", mx)}, base_tags + ["wrapper"],
                       "gradient of " + op + " (g = ones)", id=vid + "-grad",
                       spec_expect=expect[1:])
            c["sum_outputs"] = ["backprop_wrt_min", "backprop_wrt_max"]
            cases.append(c)
        else:
            skipped.append(vid)
    return cases, skipped


# --------------------------------------------------------------------------------------
# Running TensorFlow (only ever inside forked children)
# --------------------------------------------------------------------------------------

_tf = None


def tf_mod():
    global _tf
    if _tf is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf  # noqa: F401
        _tf = tf
    return _tf


def to_tensor(dt, arr):
    tf = tf_mod()
    if dt == "bfloat16":
        return tf.cast(tf.constant(np.asarray(arr, F32)), tf.bfloat16)
    return tf.constant(np.asarray(arr, NP_DTYPES[dt]))


def tf_dtype(dt):
    tf = tf_mod()
    return {"float32": tf.float32, "float64": tf.float64, "int32": tf.int32, "int64": tf.int64,
            "float16": tf.float16, "bfloat16": tf.bfloat16}[dt]


def call_attrs(case):
    at = {}
    for k, v in case["attrs"].items():
        if k in FLOAT_ATTRS and isinstance(v, str):
            at[k] = float(F32(float.fromhex(v) if v not in ("nan", "inf", "-inf") else float(v)))
        else:
            at[k] = v
    return at


def outputs_to_np(op, res):
    if not isinstance(res, (list, tuple)):
        res = [res]
    return [np.asarray(t.numpy() if hasattr(t, "numpy") else t) for t in res]


def run_eager(case):
    tf = tf_mod()
    op = case["op"]
    if op == "QuantizeAndDequantize" and case.get("v1_mode") != "modern":
        return run_v1_session(case)
    kw = {k: to_tensor(dt, a) for k, (dt, a) in case["inputs"].items()}
    res = getattr(tf.raw_ops, op)(**kw, **call_attrs(case))
    return outputs_to_np(op, res)


def run_graph(case):
    tf = tf_mod()
    op = case["op"]
    if op == "QuantizeAndDequantize" and case.get("v1_mode") != "modern":
        return run_v1_session(case)
    names = list(case["inputs"])
    sig = [tf.TensorSpec(case["inputs"][n][1].shape, tf_dtype(case["inputs"][n][0])) for n in names]
    at = call_attrs(case)

    @tf.function(input_signature=sig, autograph=False)
    def fn(*args):
        return getattr(tf.raw_ops, op)(**dict(zip(names, args)), **at)

    res = fn(*[to_tensor(*case["inputs"][n]) for n in names])
    return outputs_to_np(op, res)


def run_v1_session(case):
    tf = tf_mod()
    from tensorflow.core.framework import graph_pb2, types_pb2
    dt, x = case["inputs"]["input"]
    tenum = {"float32": types_pb2.DT_FLOAT, "float64": types_pb2.DT_DOUBLE,
             "float16": types_pb2.DT_HALF, "bfloat16": types_pb2.DT_BFLOAT16}[dt]
    gd = graph_pb2.GraphDef()
    gd.versions.producer = 21
    n = gd.node.add()
    n.name, n.op = "x", "Placeholder"
    n.attr["dtype"].type = tenum
    q = gd.node.add()
    q.name, q.op = "q", "QuantizeAndDequantize"
    q.input.append("x")
    q.attr["T"].type = tenum
    for k, v in call_attrs(case).items():
        if isinstance(v, bool):
            q.attr[k].b = v
        elif isinstance(v, int):
            q.attr[k].i = v
        else:
            q.attr[k].f = v
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(gd, name="")
    with tf.compat.v1.Session(graph=graph) as sess:
        out = sess.run("q:0", feed_dict={"x:0": np.asarray(x, NP_DTYPES[dt])})
    return [np.asarray(out)]


def clean_message(kind, msg):
    """TF's own message, without node names, stack context or nondeterministic attr lists."""
    m = msg
    m = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", m)
    m = re.sub(r"\s*\[Op:[^\]]*\]( name: .*)?$", "", m, flags=re.S)
    m = re.sub(r"^Graph execution error:\s*", "", m)
    m = re.sub(r"^Detected at node .*?\(most recent call last\):\n", "", m)
    m = re.sub(r"^Node: '[^']*'\n", "", m)
    m = re.sub(r"\n+\t? *\[\[.*$", "", m, flags=re.S)              # [[{{node q}}]]
    m = re.sub(r"\n\t; NodeDef: .*$", "", m, flags=re.S)             # attr-value errors
    m = re.sub(r": <tf\.Tensor: .*$", "", m, flags=re.S)             # tensor reprs
    m = re.sub(r" with these attrs: \[.*$", "", m, flags=re.S)       # unordered attr list
    m = re.sub(r"(Could not find device for node: \{\{node \w+\}\}) = .*$", r"\1", m,
               flags=re.S)
    m = re.sub(r" for '\{\{node [^}]*\}\} = .*$", "", m, flags=re.S)  # shape-fn context
    return m.strip()


def exc_info(e):
    kind = type(e).__name__
    raw = getattr(e, "message", None) or str(e)
    return {"kind": kind, "message": clean_message(kind, raw), "raw_message": raw[:3000]}


def child_probe(case, mode, outpath):
    """Run in a forked child: write a pickle with the result."""
    try:
        res = run_eager(case) if mode == "eager" else run_graph(case)
        r = {"ok": True, "outputs": res}
    except Exception as e:  # noqa: BLE001
        r = {"ok": False, "error": exc_info(e)}
    with open(outpath, "wb") as fh:
        pickle.dump(r, fh)


def fork_run(fn, *args, timeout_note=""):
    """Fork; child runs fn(*args, outpath) with stderr captured. Returns (result|None, stderr, status)."""
    fd, outpath = tempfile.mkstemp(suffix=".pkl")
    os.close(fd)
    efd, errpath = tempfile.mkstemp(suffix=".err")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(efd, 2)
            fn(*args, outpath)
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(0)
    os.close(efd)
    _, status = os.waitpid(pid, 0)
    res = None
    try:
        if os.path.getsize(outpath) > 0:
            with open(outpath, "rb") as fh:
                res = pickle.load(fh)
    except Exception:  # noqa: BLE001
        res = None
    with open(errpath, errors="replace") as fh:
        err = fh.read()
    os.unlink(outpath)
    os.unlink(errpath)
    return res, err, status


def probe(case, mode):
    res, err, status = fork_run(child_probe, case, mode)
    if res is not None and os.WIFEXITED(status):
        return res
    m = re.search(r"(Check failed: [^\n]*)", err)
    msg = m.group(1).strip() if m else err.strip().splitlines()[-1:] or ["<no stderr>"]
    if isinstance(msg, list):
        msg = msg[0]
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return {"ok": False, "error": {"kind": "abort", "message": msg, "signal": sig,
                                   "raw_message": err[-3000:]}}


def child_batch(cases, outpath):
    results = []
    for c in cases:
        try:
            results.append({"ok": True, "outputs": run_eager(c)})
        except Exception as e:  # noqa: BLE001
            results.append({"ok": False, "error": exc_info(e)})
    graph = []
    for i, c in enumerate(cases):
        if not c.get("graph_check"):
            graph.append(None)
            continue
        try:
            graph.append({"ok": True, "outputs": run_graph(c)})
        except Exception as e:  # noqa: BLE001
            graph.append({"ok": False, "error": exc_info(e)})
    with open(outpath, "wb") as fh:
        pickle.dump({"eager": results, "graph": graph}, fh)


# --------------------------------------------------------------------------------------
# Comparison helpers
# --------------------------------------------------------------------------------------


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    an, bn = np.isnan(a), np.isnan(b)
    if not np.array_equal(an, bn):
        return False
    a2, b2 = a[~an], b[~bn]
    return bool(np.all(a2 == b2) and np.all(np.signbit(a2) == np.signbit(b2)))


def zero_sign_ambiguous(case):
    """Data-range QDQ case whose data max (after DAZ) is 0 while both zero signs occur:
    TF's reduction order decides the sign of hi and so of zero outputs."""
    op, a = case["op"], case["attrs"]
    if not op.startswith("QuantizeAndDequantize") or op.endswith("Grad"):
        return False
    if a.get("range_given", op == "QuantizeAndDequantizeV3"):
        return False
    x = flush(case["inputs"]["input"][1])
    axis = a.get("axis", -1) if op != "QuantizeAndDequantize" else -1
    if x.size == 0:
        return False
    if axis == -1:
        slices = [x.ravel()]
    else:
        outer, C, inner = channel_view(x.shape, axis)
        slices = [x.reshape(outer, C, inner)[:, c, :].ravel() for c in range(C)]
    for sl in slices:
        z = sl[sl == 0]
        if np.nanmax(sl) == 0 if not np.isnan(sl).all() else False:
            if np.signbit(z).any() and (~np.signbit(z)).any():
                return True
    return False


def auto_tags(case):
    tags = list(case["tags"])
    vals = [a for dt, a in case["inputs"].values() if np.asarray(a).dtype.kind == "f"]
    if any(np.isnan(v).any() for v in vals):
        tags.append("nan")
    if any(np.isinf(v).any() for v in vals):
        tags.append("inf")
    if any(((v == 0) & np.signbit(v)).any() for v in vals):
        tags.append("neg_zero")
    if any(is_sub(v).any() for v in vals if v.dtype in (F32, F64)):
        tags.append("subnormal")
    if any(np.asarray(a).size == 0 for dt, a in case["inputs"].values()):
        tags.append("empty")
    a = case["attrs"]
    if a.get("narrow_range"):
        tags.append("narrow")
    if a.get("signed_input") is False:
        tags.append("unsigned")
    if a.get("round_mode") == "HALF_UP":
        tags.append("half_up")
    if isinstance(a.get("axis"), int) and a["axis"] >= 0:
        tags.append("per_channel")
    if case["op"].startswith("QuantizeAndDequantize") and case["op"] != "QuantizeAndDequantizeV4Grad":
        rg = a.get("range_given", case["op"] == "QuantizeAndDequantizeV3")
        tags.append("range_given" if rg else "data_range")
    main = case["inputs"].get("input") or case["inputs"].get("inputs")
    if main is not None:
        if main[0] == "float64":
            tags.append("float64")
        tags.append("rank%d" % np.asarray(main[1]).ndim)
    seen = []
    for t in tags:
        if t not in seen:
            seen.append(t)
    return seen


def enc_case(case, expect):
    out = {"id": case["id"], "op": case["op"], "attrs": case["attrs"],
           "inputs": {k: enc_array(dt, a) for k, (dt, a) in case["inputs"].items()},
           "expect": expect, "tags": auto_tags(case), "note": case.get("note", "")}
    if case.get("sum_outputs") and "outputs" in expect:
        out["sum_outputs"] = case["sum_outputs"]
    if case.get("deviation"):
        out["deviation"] = case["deviation"]
    for k in ("graph_error", "eager_outputs", "eager_error"):
        if k in case:
            out[k] = case[k]
    return out


def enc_outputs(case, outs):
    names = OUTPUTS[case["op"]]
    d = {}
    for name, arr in zip(names, outs):
        arr = np.asarray(arr)
        dt = {np.dtype(F32): "float32", np.dtype(F64): "float64"}.get(arr.dtype, str(arr.dtype))
        d[name] = enc_array(dt, arr)
    return {"outputs": d}


def err_dict(e, mode):
    d = {"kind": e["kind"], "message": e["message"], "mode": mode}
    if e["kind"] == "abort" and e.get("signal") is not None:
        d["signal"] = e["signal"]
    return d


# --------------------------------------------------------------------------------------
# Subnormal experiment summary
# --------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(here), "tests", "goldens"))
    ap.add_argument("--spec", default="/work/shared/spec/tf_fake_quant_semantics.md")
    ap.add_argument("--check", action="store_true",
                    help="compare every success case with the numpy model of the spec")
    args = ap.parse_args()

    tf = tf_mod()
    assert tf.__version__ == TF_VERSION, tf.__version__

    g = Gen(SEED)
    cases = []
    # spec vectors first
    skipped_spec = []
    if os.path.exists(args.spec):
        sc, skipped_spec = spec_cases(args.spec)
        cases += sc
    else:
        print("WARNING: spec not found, V-vectors skipped", file=sys.stderr)
    for op in ("QuantizeAndDequantizeV4", "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3",
               "QuantizeAndDequantize"):
        cases += gen_qdq_special(g, op)
    cases += gen_qdq_forward(g, "QuantizeAndDequantizeV4", 330)
    cases += gen_qdq_forward(g, "QuantizeAndDequantizeV2", 180)
    cases += gen_qdq_forward(g, "QuantizeAndDequantizeV3", 240)
    cases += gen_qdq_forward(g, "QuantizeAndDequantize", 160)
    cases += gen_v4grad(g, 200)
    for op, n in (("FakeQuantWithMinMaxArgs", 220), ("FakeQuantWithMinMaxArgsGradient", 140),
                  ("FakeQuantWithMinMaxVars", 220), ("FakeQuantWithMinMaxVarsGradient", 160),
                  ("FakeQuantWithMinMaxVarsPerChannel", 170),
                  ("FakeQuantWithMinMaxVarsPerChannelGradient", 150)):
        cases += gen_fq_special(g, op)
        cases += gen_fq(g, op, n)
    for op, lst in gen_fq_pairs(g, 30).items():
        cases += lst
    errors = gen_errors()
    errors += [c for c in cases if c.get("expect_error")]
    cases = [c for c in cases if not c.get("expect_error")]
    for c in cases:
        if zero_sign_ambiguous(c) and not c.get("deviation"):
            c["deviation"] = "zero_sign"
            c["note"] += " (data max is a zero of either sign after DAZ)"

    # every 7th non-V1 case is also run in graph mode and compared bit for bit
    for i, c in enumerate(cases):
        c["graph_check"] = (i % 7 == 0) or c.get("id", "").startswith("V")

    print("running %d success candidates in a child ..." % len(cases), flush=True)

    def batch(outpath):
        child_batch(cases, outpath)

    res, err, status = fork_run(lambda op: child_batch(cases, op))
    if res is None:
        print(err[-5000:])
        raise SystemExit("batch child failed")

    final = {op: [] for op in OPS}
    problems = []
    n_graph_checked = 0
    n_spec_checked = 0
    for c, r, gr in zip(cases, res["eager"], res["graph"]):
        if not r["ok"]:
            c["expect_error"] = True
            c["tags"] = c["tags"] + ["error"]
            errors.append(c)
            problems.append("unexpected eager error %s %s: %s" % (c["op"], c.get("id"),
                                                                  r["error"]["message"]))
            continue
        c["result"] = r["outputs"]
        if gr is not None:
            n_graph_checked += 1
            if not gr["ok"]:
                problems.append("graph mode failed for success case %s %s: %s" % (
                    c["op"], c.get("id"), gr["error"]["message"]))
            elif not all(same_bits(a, b) for a, b in zip(r["outputs"], gr["outputs"])):
                problems.append("graph/eager mismatch %s %s" % (c["op"], c.get("id")))
        if "spec_expect" in c:
            n_spec_checked += 1
            names = OUTPUTS[c["op"]]
            for k, (exp, got) in enumerate(zip(c["spec_expect"], r["outputs"])):
                got = np.asarray(got).ravel()
                exp = np.array(exp, got.dtype)
                if not same_bits(exp, got) and c.get("deviation") == "zero_sign":
                    problems.append("info: %s zero signs: spec %s tf %s" % (
                        c["id"], [hexf(v) for v in exp], [hexf(v) for v in got]))
                elif not same_bits(exp, got):
                    problems.append("SPEC MISMATCH %s %s output %s: spec %s tf %s" % (
                        c["id"], c["op"], names[k], [hexf(v) for v in exp],
                        [hexf(v) for v in got]))

    # error probes (each mode in its own forked process)
    print("probing %d error cases ..." % len(errors), flush=True)
    for c in errors:
        e = probe(c, "eager")
        gmode = probe(c, "graph") if not (c["op"] == "QuantizeAndDequantize"
                                          and c.get("v1_mode") != "modern") else None
        if not e["ok"]:
            mode = "graph" if (c["op"] == "QuantizeAndDequantize"
                               and c.get("v1_mode") != "modern") else "eager"
            c["expect"] = {"error": err_dict(e["error"], mode)}
            if gmode is not None:
                if gmode["ok"]:
                    c["graph_error"] = None
                    problems.append("graph mode succeeds where eager fails: %s (%s)" % (
                        c["op"], c["note"]))
                else:
                    c["graph_error"] = err_dict(gmode["error"], "graph")
        elif gmode is not None and not gmode["ok"]:
            c["expect"] = {"error": err_dict(gmode["error"], "graph")}
            c["eager_outputs"] = enc_outputs(c, e["outputs"])["outputs"]
            c["tags"] = c["tags"] + ["graph_only"]
        else:
            problems.append("declared error case succeeds in both modes: %s (%s)" % (
                c["op"], c["note"]))
            c["result"] = e["outputs"]
            c.pop("expect_error", None)
            c["tags"] = [t for t in c["tags"] if t != "error"]
            cases.append(c)
            continue
        if c["expect"]["error"]["kind"] == "abort":
            c["tags"] = c["tags"] + ["abort"]

    # assign ids and encode
    counters = {op: 0 for op in OPS}
    for c in cases + errors:
        if "result" not in c and "expect" not in c:
            continue
        if not c.get("id"):
            counters[c["op"]] += 1
            c["id"] = "%s-%04d" % (OPS[c["op"]][0], counters[c["op"]])
    counts = {op: [0, 0] for op in OPS}
    seen_ids = set()
    for c in cases:
        if "result" not in c:
            continue
        assert c["id"] not in seen_ids, c["id"]
        seen_ids.add(c["id"])
        final[c["op"]].append(enc_case(c, enc_outputs(c, c["result"])))
        counts[c["op"]][0] += 1
    for c in errors:
        if "expect" not in c:
            continue
        assert c["id"] not in seen_ids, c["id"]
        seen_ids.add(c["id"])
        final[c["op"]].append(enc_case(c, c["expect"]))
        counts[c["op"]][1] += 1

    os.makedirs(args.out, exist_ok=True)
    total = 0
    for op, lst in final.items():
        path = os.path.join(args.out, op + ".json")
        with open(path, "w") as fh:
            fh.write('{"op": %s, "tf_version": %s, "cases": [\n' % (json.dumps(op),
                                                                   json.dumps(TF_VERSION)))
            fh.write(",\n".join(json.dumps(c, separators=(", ", ": ")) for c in lst))
            fh.write("\n]}\n")
        total += os.path.getsize(path)
    print("\n%-44s %8s %8s" % ("op", "success", "errors"))
    for op, (s_, e_) in counts.items():
        print("%-44s %8d %8d" % (op, s_, e_))
    print("%-44s %8d %8d" % ("TOTAL", sum(v[0] for v in counts.values()),
                            sum(v[1] for v in counts.values())))
    print("bytes written: %d; graph-mode cross-checked success cases: %d" % (total,
                                                                            n_graph_checked))
    print("spec vector cases compared with the spec's hex values: %d" % n_spec_checked)
    if skipped_spec:
        print("spec vectors not converted:", skipped_spec)
    for p in problems:
        print("NOTE:", p)

    if args.check:
        mism = {}
        for c in cases:
            if "result" not in c or c.get("deviation"):
                continue
            for ftz in (False, True):
                try:
                    mo = model_outputs(c, ftz)
                except Exception as e:  # noqa: BLE001
                    mo = None
                    print("model error", c["id"], e)
                ok = mo is not None and all(
                    same_bits(np.asarray(m, np.asarray(t).dtype).reshape(np.asarray(t).shape), t)
                    for m, t in zip(mo, c["result"]))
                mism.setdefault((c["op"], ftz), []).append(None if ok else c["id"])
        print("\nmodel check (mismatching ids):")
        for (op, ftz), lst in sorted(mism.items()):
            bad = [i for i in lst if i]
            print("  %-44s flush=%-5s %4d/%4d mismatches %s" % (op, ftz, len(bad), len(lst),
                                                                 bad[:12]))


if __name__ == "__main__":
    main()
