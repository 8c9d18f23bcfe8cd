#!/usr/bin/env python3
"""Regenerate the golden vectors of qdq_compiler/goldens/ (one ``<OpName>.json`` per raw op) with TF 2.21.

TensorFlow is a data-generation tool only: the package and its tests never import it and it is no
dependency. Run this by hand from the repository root, in a virtualenv of its own (~1 min on 2 cores):

    python3 -m venv /work/tfvenv && /work/tfvenv/bin/pip install tensorflow-cpu==2.21.0 numpy
    /work/tfvenv/bin/python tools/make_goldens.py --out qdq_compiler/goldens
    /work/tfvenv/bin/python tools/make_goldens.py --out qdq_compiler/goldens --check  # + numpy model vs TF
    python tools/make_goldens.py --list cases.json    # no TF: every case (id, op, attrs, inputs, tags)

``--spec PATH`` (default /work/shared/spec/tf_fake_quant_semantics.md): its section-6 table gives the
V01..V65 vectors, checked against TF's results (skipped with a warning when the file is missing).

Where the cases come from:
  * ops, their inputs (order, dtypes), attrs with defaults, outputs: the package's op registry, imported
    from this checkout (only numpy is needed besides TF);
  * hand-written edge and error cases: tools/golden_cases.py (data);
  * random cases around the quantisation grid: the generators below (numpy PCG64, fixed seed), designed
    with an independent numpy model of TF's kernels (a deliberate second opinion, not the package's
    oracle) that ``--check`` compares with TF. The output is byte-identical from run to run.

How TF is run: the parent imports TF but never runs an op. All success cases run in one forked child;
each error case runs in its own child per mode (eager, then graph = ``tf.function`` with a fixed input
signature), because some abort the process (a CHECK failure, recorded as kind "abort" with the "Check
failed" line). V1 ``QuantizeAndDequantize`` runs from a GraphDef with ``versions.producer = 21`` in a
``tf.compat.v1.Session``. Output format: qdq_compiler/goldens/README.md.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tools")]
from qdq_compiler.ops import OPS  # noqa: E402  (the op registry: names, inputs, attrs, outputs)
import golden_cases as data  # noqa: E402

TF_VERSION = "2.21.0"
SEED = 20260121
F32, F64 = np.float32, np.float64
NP_DTYPES = {"float32": F32, "float64": F64, "int32": np.int32, "int64": np.int64, "float16": np.float16,
             "bfloat16": F32}
V1, V2, V3, V4, V4G = ("QuantizeAndDequantize", "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3",
                       "QuantizeAndDequantizeV4", "QuantizeAndDequantizeV4Grad")
ARGS, VARS, PC = "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel"
# random cases per op, in generation order (the order of the case ids)
QDQ_RANDOM = ((V4, 330), (V2, 180), (V3, 240), (V1, 160))
FQ_RANDOM = ((ARGS, 220), (ARGS + "Gradient", 140), (VARS, 220), (VARS + "Gradient", 160), (PC, 170),
             (PC + "Gradient", 150))
assert {V4G} | {op for op, _ in QDQ_RANDOM + FQ_RANDOM} == set(OPS), "the registry's ops changed"


def id_prefix(op):
    """The prefix of generated case ids: QDQ1..QDQ4, QDQ4G, FQA, FQAG, FQV, FQVG, FQPC, FQPCG."""
    v, g, kind, pc, fg = re.fullmatch(r"QuantizeAndDequantize(?:V(\d))?(Grad)?|"
                                      r"FakeQuantWithMinMax(Args|Vars)(PerChannel)?(Gradient)?", op).groups()
    return "QDQ%s%s" % (v or 1, "G" * bool(g)) if kind is None else "FQ%s%s" % ("PC" if pc else kind[0], "G" * bool(fg))


def attr(case, name, fallback=None):
    """An attr of a case: as passed, else the registry's default (float attrs, float32 hex here, as numbers)."""
    a = OPS[case["op"]].attr_map.get(name)
    v = case["attrs"].get(name, a.default if a else fallback)
    if isinstance(v, str) and a and a.kind is float:
        return float(F32(float(v) if v in ("nan", "inf", "-inf") else float.fromhex(v)))
    return v


# ---------------------------------------------------------------------------------------------- encoding

def hexf(v):
    """Exact value of a float as hex; trailing zeros of the mantissa removed."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    m = re.match(r"(-?0x[01])\.([0-9a-f]*)p([+-]\d+)$", v.hex())
    return "%s.%sp%s" % (m.group(1), m.group(2).rstrip("0") or "0", m.group(3))


def f32hex(v):
    return hexf(F32(v))


def enc_array(dtype, arr):
    arr = np.asarray(arr)
    vals = [int(v) for v in arr.ravel()] if dtype in ("int32", "int64") else [hexf(v) for v in arr.ravel()]
    return {"dtype": dtype, "shape": [int(d) for d in arr.shape], "values": vals}


# ------------------------------------------------- numpy model of TF 2.21 (designs inputs; --check)

def is_sub(a):
    a = np.asarray(a)
    return (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny) if a.dtype.kind == "f" else np.zeros(a.shape, bool)


def flush(a):
    """Flush subnormals to zero of the same sign (models DAZ/FTZ)."""
    a = np.array(a, copy=True)
    s = is_sub(a)
    if s.any():
        a[s] = np.copysign(a.dtype.type(0), a[s])
    return a


def _flushers(ftz, T):
    return (flush, lambda v: T(flush(np.array([v], T))[0])) if ftz else ((lambda a: a), (lambda v: v))


def qdq_int_range(signed, bits, narrow):
    return (-(1 << (bits - 1)) + (1 if narrow else 0), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def qdq_compute_range(T, qmin, qmax, lo, hi, ftz=False):
    fl = _flushers(ftz, T)[1]
    with np.errstate(all="ignore"):
        qminT, qmaxT = T(qmin), T(qmax)
        lo, hi = fl(T(lo)), fl(T(hi))
        s_lo = fl(T(qminT / lo)) if fl(T(qminT * lo)) > 0 else T(np.finfo(T).max)
        s_hi = fl(T(qmaxT / hi)) if fl(T(qmaxT * hi)) > 0 else T(np.finfo(T).max)
        if s_lo < s_hi:
            scale, inv = s_lo, fl(T(lo / qminT))
            hi = fl(T(qmaxT * inv))
        else:
            scale, inv = s_hi, fl(T(hi / qmaxT))
            lo = fl(T(qminT * inv))
    return lo, hi, scale, inv


def qdq_elem(x, lo, hi, scale, inv, range_given, round_mode, T, ftz=False):
    fl = _flushers(ftz, T)[0]
    with np.errstate(all="ignore"):
        x = fl(np.asarray(x, T))
        if range_given:
            x = np.where(hi < x, hi, x).astype(T)
            x = np.where(x < lo, lo, x).astype(T)
        v = fl((x * scale).astype(T))
        r = np.floor(fl((v + T(0.5)).astype(T))) if round_mode == "HALF_UP" else np.rint(v)
        return fl((r * inv).astype(T))


def channel_view(shape, axis):
    return int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))


def qdq_model(x, lo, hi, signed, bits, range_given, round_mode, narrow, axis, T, ftz=False):
    x = np.asarray(x, T)
    qmin, qmax = qdq_int_range(signed, bits, narrow)
    fl = _flushers(ftz, T)[0]
    outer, C, inner = channel_view(x.shape, axis) if axis != -1 else (1, 1, x.size)
    xv = x.reshape(outer, C, inner)
    out = np.empty_like(xv) if axis != -1 else x.copy().reshape(outer, C, inner)
    for c in range(C):
        sl = xv[:, c, :]
        if range_given:
            lc, hc = (lo, hi) if axis == -1 else (np.asarray(lo).reshape(-1)[c], np.asarray(hi).reshape(-1)[c])
        elif sl.size == 0:
            continue
        else:
            lc, hc = np.min(fl(sl)), np.max(fl(sl))
        out[:, c, :] = qdq_elem(sl, *qdq_compute_range(T, qmin, qmax, lc, hc, ftz), range_given, round_mode, T, ftz)
    return out.reshape(x.shape)


def fq_nudge(mn, mx, bits, narrow, ftz=False):
    fl = _flushers(ftz, F32)[1]
    with np.errstate(all="ignore"):
        mn, mx = fl(F32(mn)), fl(F32(mx))
        qmin, qmax = (1 if narrow else 0), (1 << bits) - 1
        qminf, qmaxf = F32(qmin), F32(qmax)
        scale = fl(F32((mx - mn) / F32(qmaxf - qminf)))
        inv = fl(F32(F32(qmaxf - qminf) / (mx - mn)))
        zpf = fl(F32(qminf - fl(F32(mn / scale))))
        zp = qmin if zpf < qminf else qmax if zpf > qmaxf else 0 if np.isnan(zpf) else int(math.floor(float(zpf) + 0.5))
        return fl(F32(F32(qminf - F32(zp)) * scale)), fl(F32(F32(qmaxf - F32(zp)) * scale)), scale, inv


def fq_elem(x, nmin, nmax, scale, inv, divide, ftz=False):
    fl = _flushers(ftz, F32)[0]
    with np.errstate(all="ignore"):
        x = fl(np.asarray(x, F32))
        qzero = np.floor(fl(F32(fl(F32(-nmin * inv)) + F32(0.5))))
        c = np.where(nmax < x, nmax, x).astype(F32)
        s = fl((np.where(c < nmin, nmin, c).astype(F32) - nmin).astype(F32))
        t = fl((s / scale).astype(F32)) if divide else fl((s * inv).astype(F32))
        t = fl((fl((t - qzero).astype(F32)) + F32(0.5)).astype(F32))
        return fl((np.floor(t) * scale).astype(F32))


def fq_forward_model(op, x, mn, mx, bits, narrow, ftz=False):
    x = np.asarray(x, F32)
    if op == PC:
        if x.size == 0:
            return x.copy()
        xv = x.reshape(-1, x.shape[-1])
        return np.stack([fq_forward_model(None, xv[:, c], mn[c], mx[c], bits, narrow, ftz)
                         for c in range(x.shape[-1])], -1).reshape(x.shape)
    if op != ARGS and F32(mn) == 0 and F32(mx) == 0:
        return np.zeros_like(x)
    return fq_elem(x, *fq_nudge(mn, mx, bits, narrow, ftz), op == VARS, ftz)


def fq_grad_model(op, g, x, mn, mx, bits, narrow, ftz=False):
    fl = _flushers(ftz, F32)[0]
    g, x = fl(np.asarray(g, F32)), fl(np.asarray(x, F32))
    if op == PC + "Gradient":
        d = x.shape[-1]
        if x.size == 0:
            return [g.copy(), np.zeros(d, F32), np.zeros(d, F32)]
        gv, xv, dx = g.reshape(-1, d), x.reshape(-1, d), np.empty((x.size // d, d), F32)
        dmin, dmax = np.zeros(d, F32), np.zeros(d, F32)
        for c in range(d):
            dx[:, c], dmin[c], dmax[c] = fq_grad_model(VARS + "Gradient", gv[:, c], xv[:, c], mn[c], mx[c], bits,
                                                       narrow, ftz)
        return [dx.reshape(x.shape), dmin, dmax]
    if op == VARS + "Gradient" and F32(mn) == 0 and F32(mx) == 0:
        return [g.copy(), F32(0), F32(0)]
    nmin, nmax, _, _ = fq_nudge(mn, mx, bits, narrow, ftz)
    with np.errstate(all="ignore"):
        dx = fl((g * ((x >= nmin) & (x <= nmax)).astype(F32)).astype(F32))
        if op == ARGS + "Gradient":
            return [dx]
        # TF multiplies by the 0/1 mask, so NaN/inf gradients anywhere poison both sums
        side = [fl(np.array([np.sum((g * m.astype(F32)).astype(F64))], F32))[0] for m in (x < nmin, x > nmax)]
        return [dx] + side


def v4grad_model(g, x, mn, mx, axis, T, ftz=False):
    fl = _flushers(ftz, T)[0]
    g, x, mn, mx = (fl(np.asarray(a, T)) for a in (g, x, mn, mx))
    with np.errstate(all="ignore"):
        if axis == -1:
            dx = fl((g * ((x >= mn) & (x <= mx)).astype(T)).astype(T))
        else:
            outer, C, inner = channel_view(x.shape, axis)
            xv = x.reshape(outer, C, inner)
            m = (xv >= mn.reshape(1, C, 1)) & (xv <= mx.reshape(1, C, 1))
            dx = fl((g.reshape(outer, C, inner) * m.astype(T)).astype(T)).reshape(x.shape)
    return [dx, np.zeros(mn.shape, T), np.zeros(mn.shape, T)]


def model_outputs(case, ftz=False):
    """The numpy model's outputs for a success case."""
    op, spec = case["op"], OPS[case["op"]]
    val = {i.role: case["inputs"][i.name][1] for i in spec.inputs}
    if op == V4G:
        return v4grad_model(val["grad"], val["data"], val["min"], val["max"], attr(case, "axis"),
                            val["data"].dtype.type, ftz)
    if op.startswith("QuantizeAndDequantize"):
        x = val["data"]
        T = x.dtype.type
        bits = int(val["num_bits"]) if "num_bits" in val else attr(case, "num_bits")
        axis = attr(case, "axis", -1)
        if op == V1:
            lo, hi = T(attr(case, "input_min")), T(attr(case, "input_max"))
        else:
            lo, hi = val["min"], val["max"]
            if axis == -1:
                lo, hi = T(np.asarray(lo).reshape(-1)[0]), T(np.asarray(hi).reshape(-1)[0])
        return [qdq_model(x, lo, hi, attr(case, "signed_input"), bits, attr(case, "range_given"),
                          attr(case, "round_mode", "HALF_TO_EVEN"), attr(case, "narrow_range", False), axis, T, ftz)]
    mn, mx = (F32(attr(case, "min")), F32(attr(case, "max"))) if op.startswith(ARGS) else (val["min"], val["max"])
    bits, narrow = attr(case, "num_bits"), attr(case, "narrow_range")
    if "grad" in val:
        return fq_grad_model(op, val["grad"], val["data"], mn, mx, bits, narrow, ftz)
    return [fq_forward_model(op, val["data"], mn, mx, bits, narrow, ftz)]


# ---------------------------------------------------------------------------------------- case helpers

def mkcase(op, attrs, inputs, tags=(), note="", **extra):
    """inputs: name -> (dtype string, array), put in the op's input order."""
    spec = OPS[op]
    c = {"op": op, "attrs": dict(attrs), "note": note, "tags": list(tags),
         "inputs": {n: (inputs[n][0], np.asarray(inputs[n][1], NP_DTYPES[inputs[n][0]]))
                    for n in spec.input_names if n in inputs}}
    if spec.sum_outputs:
        c["sum_outputs"] = list(spec.sum_outputs)
    c.update(extra)
    return c


def dtname(T):
    return "float64" if T is F64 else "float32"


def nxt(x, T, n=1):
    x = T(x)
    for _ in range(abs(n)):
        x = np.nextafter(x, T(np.inf) if n > 0 else T(-np.inf))
    return T(x)


def scalar(v, T):
    """A value of golden_cases.py as a T: a number, or "nan", "-sm", "1.5tiny", "1<", "-tiny>", ..."""
    if not isinstance(v, str):
        return T(v)
    step = {"<": -1, ">": 1}.get(v[-1], 0)
    m = re.fullmatch(r"(-?)([\d.]*)(nan|inf|sm|tiny)", v[:-1] if step else v)
    if m:
        base = {"nan": np.nan, "inf": np.inf, "sm": float(np.finfo(T).smallest_subnormal),
                "tiny": float(np.finfo(T).tiny)}[m.group(3)]
        x = T((-1 if m.group(1) else 1) * float(m.group(2) or 1) * base)
    else:
        x = T(float(v[:-1] if step else v))
    return nxt(x, T, step) if step else x


def tensor(v, T):
    if isinstance(v, np.ndarray):
        return v.astype(T)
    return np.array([tensor(e, T) for e in v], T) if isinstance(v, list) else np.asarray(scalar(v, T), T)


x23 = np.arange(6, dtype=F32).reshape(2, 3) / F32(4) - F32(0.5)
NAMED = {"x23": x23, "x23T": x23.T.copy(), "x5": np.arange(24, dtype=F32).reshape(1, 2, 2, 2, 3) / F32(8) - F32(1.5)}


def subnormals(T, rng, k):
    tiny, smallest = np.finfo(T).tiny, np.finfo(T).smallest_subnormal
    vals = [smallest, T(tiny / 2), T(tiny * T(0.75)), nxt(tiny, T, -1), T(smallest * 3)]
    return [T(T(vals[int(rng.integers(len(vals)))]) * (T(1) if rng.random() < 0.5 else T(-1))) for _ in range(k)]


class Gen:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.tie = False  # set when a generator placed an input exactly on a rounding tie/switch

    def mag(self, T, lo=-6, hi=6):
        return T(2.0 ** self.rng.uniform(lo, hi))

    def rand_shape(self, rank, maxel=48):
        while True:
            s = [int(self.rng.integers(1, 5)) for _ in range(rank)]
            if int(np.prod(s)) <= maxel:
                return s

    def rand_range(self, T, kind):
        r = self.rng
        if kind in ("asym", "sym"):
            a = self.mag(T)
            return (T(-a * T(r.uniform(0.05, 1))), T(a * T(r.uniform(0.05, 1)))) if kind == "asym" else (T(-a), T(a))
        if kind == "pow2":
            return T(-(2.0 ** int(r.integers(-4, 5)))), T(2.0 ** int(r.integers(-4, 5)))
        if kind in ("pos", "neg"):
            a = self.mag(T)
            b = T(a * T(r.uniform(1.05, 4)))
            return (a, b) if kind == "pos" else (T(-b), T(-a))
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
        assert kind == "unit", kind
        return T(-1), T(1)

    def pick(self, items, p=None):
        return items[int(self.rng.choice(len(items), p=p))]


# ---------------------------------------------------------------------- QuantizeAndDequantize V1..V4

RANGE_KINDS = ["asym", "asym", "asym", "sym", "pow2", "unit", "pos", "neg", "eq", "zero_lo", "zero_hi", "tiny", "huge"]


def qdq_tie_points(g, T, scale, q):
    """Inputs x (type T) at the rounding boundary between q and q+1 after scaling, and either side."""
    with np.errstate(all="ignore"):
        if not np.isfinite(scale) or scale == 0:
            return []
        v = T(T(q) + T(0.5))
        x0 = T(float(v) / float(scale))
        if not np.isfinite(x0):
            return []
        hits = [c for c in (nxt(x0, T, k) for k in range(-6, 7)) if T(c * scale) == v]
        if not hits:
            return [x0]
        g.tie = True
        x = hits[len(hits) // 2]
        return [x, nxt(x, T, -1), nxt(x, T, 1)]


def qdq_channel_values(g, T, n, lo_raw, hi_raw, signed, bits, narrow, range_given, specials):
    """n values for one channel; without range_given the data min/max are exactly lo/hi."""
    r = g.rng
    qmin, qmax = qdq_int_range(signed, bits, narrow)
    lo, hi, scale, inv = qdq_compute_range(T, qmin, qmax, lo_raw, hi_raw)
    vals = [] if range_given else [lo_raw, hi_raw]
    qlo = qmin if signed else 0
    with np.errstate(all="ignore"):
        levels = set()  # integer levels to probe: near zero, near the ends, random
        for _ in range(max(2, n // 3)):
            k = r.random()
            levels.add(int(r.integers(-3, 3)) if k < 0.35 else int(qmax - r.integers(0, 3)) if k < 0.55 else
                       int(qlo + r.integers(0, 3)) if k < 0.7 else int(qlo + int(r.random() * (qmax - qlo))))
        e = 23 if T is F32 else 52
        if bits >= 25 and qmax > (1 << (e + 1)):  # odd integers >= 2^23 (2^52) where HALF_UP rounds up
            levels.add((1 << e) + 1 + 2 * int(r.integers(0, 8)))
        for q in sorted(levels):
            if len(vals) >= n:
                break
            k = r.random()
            vals += (qdq_tie_points(g, T, scale, q) if k < 0.55 else [T(T(q) * inv)] if k < 0.8 else
                     [T((float(q) + r.uniform(-0.5, 0.5)) * float(inv))])
        width = float(hi) - float(lo)
        while len(vals) < n:
            a, b = ((float(lo) - 0.15 * abs(width), float(hi) + 0.15 * abs(width)) if range_given else
                    (float(min(lo_raw, hi_raw)), float(max(lo_raw, hi_raw))))
            a, b = min(a, b), max(a, b)
            vals.append(T(r.uniform(a, b)) if np.isfinite(a) and np.isfinite(b) and b - a < 1e300 else T(0))
    vals = [T(v) for v in vals if np.isfinite(v) or not range_given]
    if not range_given:
        vals = [v for v in vals if lo_raw <= v <= hi_raw] or [lo_raw]
    vals = vals[:n]
    while len(vals) < n:
        vals.append(vals[int(r.integers(len(vals)))] if vals else T(0))
    protect = 0 if range_given else 2  # specials replace random positions, never the data min/max
    for sv in specials:
        if len(vals) > protect:
            vals[int(r.integers(protect, len(vals)))] = T(sv)
    arr = np.array(vals, T)
    return arr[r.permutation(len(arr))]


def gen_qdq_forward(g, op, count):
    """Random cases for V1..V4 forward: every (num_bits, signed) once, then random ones."""
    r = g.rng
    v1, v3 = op == V1, op == V3
    plan = [(bits, signed) for bits in range(1, 63) for signed in (True, False) if not (signed and bits > 61)]
    while len(plan) < count:
        plan.append((int(g.pick([1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 10, 12, 16, 16, 20, 24, 25, 30, 31, 32, 40, 53, 54,
                                 61])), bool(r.random() < 0.7)))
    cases = []
    for bits, signed in plan:
        g.tie = False
        T = F64 if r.random() < 0.3 else F32
        narrow = bool(r.random() < 0.35) and not v1
        rm = "HALF_UP" if (r.random() < 0.4 and not v1 and not v3) else "HALF_TO_EVEN"
        range_given = bool(r.random() < 0.55)
        rank = int(g.pick([0, 1, 1, 1, 2, 2, 3, 4, 5] if not v3 else [1, 1, 1, 2, 2, 3, 4, 5]))
        per_channel = (not v1) and rank >= 1 and r.random() < 0.35
        range_given = range_given and not (per_channel and not v3)  # V2/V4 reject a given per-channel range
        axis = int(r.integers(0, rank)) if per_channel else -1
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(400 if big else 40))
        tags = []
        outer, C, inner = channel_view(shape, axis) if per_channel else (1, 1, int(np.prod(shape)))
        data, mins, maxs = np.empty((outer, C, inner), T), np.empty(C, T), np.empty(C, T)
        for c in range(C):
            kind = g.pick(RANGE_KINDS)
            lo, hi = g.rand_range(T, kind)
            if not signed and range_given and r.random() < 0.6 and kind in ("asym", "sym"):
                lo = T(0) if r.random() < 0.5 else lo
            tags += (["const_data"] if kind == "eq" and not range_given else []) + \
                (["range_excludes_zero"] if kind in ("pos", "neg") else []) + (["min_eq_max"] if kind == "eq" else [])
            specials = subnormals(T, r, 1 + int(r.integers(2))) if r.random() < 0.25 else []
            specials += [T(-0.0)] if r.random() < 0.2 else []
            specials += [T(np.nan)] if range_given and r.random() < 0.2 else []
            specials += [T(np.inf), T(-np.inf)] if range_given and r.random() < 0.2 else []
            vals = qdq_channel_values(g, T, outer * inner, lo, hi, signed, bits, narrow, range_given, specials)
            if not range_given:  # the data min/max, not spoiled by specials
                fin = vals[np.isfinite(vals)]
                lo, hi = (np.min(fin), np.max(fin)) if fin.size else (T(0), T(0))
                zero = vals == 0
                if fin.size and hi == 0 and np.any(zero & np.signbit(vals)) and np.any(zero & ~np.signbit(vals)):
                    vals = np.where(zero, T(0), vals).astype(T)  # a zero data max of either sign: make it +0
            data[:, c, :] = vals.reshape(outer, inner)
            mins[c], maxs[c] = lo, hi
        x, dt = data.reshape(shape), dtname(T)
        attrs = {}
        if not (signed and r.random() < 0.3):
            attrs["signed_input"] = signed
        if not v3 and not (bits == 8 and r.random() < 0.5):
            attrs["num_bits"] = bits
        if range_given != OPS[op].attr_map["range_given"].default or r.random() < 0.6:
            attrs["range_given"] = range_given
        if v1:
            if range_given:  # V1's float attrs are float32
                with np.errstate(all="ignore"):
                    lo32, hi32 = F32(mins[0]), F32(maxs[0])
                if not (lo32 <= hi32) or not np.isfinite(lo32) or not np.isfinite(hi32):
                    lo32, hi32 = F32(-1), F32(1)
                attrs.update(input_min=f32hex(lo32), input_max=f32hex(hi32))
            elif r.random() < 0.3:
                attrs.update(input_min=f32hex(-3.5), input_max=f32hex(2.25))
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
            elif range_given:
                mn, mx = (maxs[0], mins[0]) if mins[0] > maxs[0] else (mins[0], maxs[0])
            else:
                mn, mx = T(r.uniform(-2, 0)), T(r.uniform(0, 2))  # ignored by the kernel
            inputs = {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx), "num_bits": ("int32", bits)}
        tags += ["per_channel"] * per_channel + ["large"] * big + ["random"] + ["tie"] * g.tie
        cases.append(mkcase(op, attrs, inputs, tags, "random around the quantisation grid"))
    return cases


def qdq_edge_row(op, T, row):
    """A case from a QDQ_EDGE row of golden_cases.py, or None where the op cannot express it."""
    if ("T" in row and row["T"] != dtname(T)) or ("ops" in row and op not in row["ops"]):
        return None
    rg, rm, narrow, axis = row.get("rg", True), row.get("rm"), row.get("narrow"), row.get("axis")
    x = np.zeros(row["shape"], T) if "shape" in row else tensor(row["x"], T)
    lo, hi = tensor(row.get("lo", 0), T), tensor(row.get("hi", 0), T)
    attrs = {"signed_input": row.get("signed", True)}
    if op == V1:
        if rm not in (None, "HALF_TO_EVEN") or narrow or axis not in (None, -1) or \
                (rg and (F32(lo) != lo or F32(hi) != hi)):
            return None  # V1: no such attrs; its range attrs are float32
        attrs.update(num_bits=row.get("bits", 8), range_given=rg)
        attrs.update(dict(input_min=f32hex(lo), input_max=f32hex(hi)) if rg else {})
    elif op == V3 and rm not in (None, "HALF_TO_EVEN"):
        return None
    else:
        attrs.update({} if op == V3 else {"num_bits": row.get("bits", 8)}, range_given=rg)
        opt = {"narrow_range": narrow, "round_mode": None if op == V3 else rm, "axis": axis}
        attrs.update({k: v for k, v in opt.items() if v is not None})
    dt = dtname(T)
    c = mkcase(op, attrs, {"input": (dt, x), "input_min": (dt, lo), "input_max": (dt, hi),
                           "num_bits": ("int32", row.get("bits", 8))}, row.get("tags", ()), row.get("note", ""))
    if row.get("deviation"):
        c["deviation"] = row["deviation"]
    if op == V3 and x.ndim == 0:  # V3 rejects rank-0 inputs (axis -1 < -rank)
        c["expect_error"] = True
        c["tags"].append("error")
    return c


def gen_qdq_edge(g, op):
    """Hand-designed edge cases for V1..V4 forward (golden_cases.QDQ_EDGE) and random per-channel ones."""
    cases = []
    for T in (F32, F64):
        cases += [c for c in (qdq_edge_row(op, T, row) for row in data.QDQ_EDGE) if c]
        for rank in range(1, 6) if op != V1 else ():  # per-channel on every axis of ranks 1..5
            shape = [3] if rank == 1 else [2, 3, 2, 2, 2][:rank]
            for ax in range(rank):
                C = shape[ax]
                x = (np.round(T(g.rng.uniform(-2, 2, size=shape)).astype(T) * 16) / 16).astype(T)
                rows = [dict(x=x, lo=[-1] * C, hi=[1] * C, rg=False, axis=ax, rm=rm, tags=["per_channel"],
                             note="per-channel, data range, rank %d" % rank) for rm in data.RM]
                rows += [dict(ops=(V3,), x=x, lo=[-(1.0 + c) for c in range(C)], hi=[0.5 + c for c in range(C)],
                              axis=ax, tags=["per_channel"], note="V3 per-channel given range, rank %d" % rank)]
                cases += [c for c in (qdq_edge_row(op, T, row) for row in rows) if c]
        cases += [c for c in (qdq_edge_row(op, T, row) for row in data.QDQ_EDGE_TAIL) if c]
    return cases


# ---------------------------------------------------------------------------- QuantizeAndDequantizeV4Grad

def gen_v4grad(g, count):
    r, cases = g.rng, []

    def add(T, gr, x, mn, mx, axis=None, tags=(), note=""):
        dt = dtname(T)
        cases.append(mkcase(V4G, {} if axis is None else {"axis": axis}, {
            "gradients": (dt, gr), "input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)}, tags, note))

    for T in (F32, F64):
        for row in data.V4GRAD_EDGE:
            gx = [np.zeros(row["shape"], T)] * 2 if "shape" in row else [tensor(row["g"], T), tensor(row["x"], T)]
            add(T, *gx, tensor(row["lo"], T), tensor(row["hi"], T), row.get("axis"), row["tags"], row["note"])
    for rank in range(1, 6):  # per-channel on every axis for ranks 1..5, random
        for ax in range(rank):
            for T in (F32, F64):
                shape = g.rand_shape(rank, maxel=48)
                mn = np.array([g.pick([-1.0, -0.5, 0.0, 0.25, -2.0, 1.0]) for _ in range(shape[ax])], T)
                mx = np.array([m + g.pick([0.0, 0.5, 1.0, 2.0, -0.5]) for m in mn], T)
                x = np.round(r.uniform(-2.5, 2.5, size=shape) * 4).astype(T) / T(4)
                add(T, r.integers(-8, 9, size=shape).astype(T), x, mn, mx, ax, ["per_channel"],
                    "per-channel mask, rank %d axis %d" % (rank, ax))
    while len(cases) < count:  # random per-tensor
        T = F64 if r.random() < 0.3 else F32
        rank = int(g.pick([0, 1, 1, 2, 3, 4, 5]))
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(300 if big else 48))
        lo, hi = g.rand_range(T, g.pick(RANGE_KINDS))
        if r.random() < 0.1:
            lo, hi = hi, lo
        cand = [lo, hi, nxt(lo, T, -1), nxt(lo, T, 1), nxt(hi, T, -1), nxt(hi, T, 1)]
        l_, h_ = min(float(lo), float(hi)), max(float(lo), float(hi))
        x = [cand[int(r.integers(6))] if r.random() < 0.4 else
             T(r.uniform(l_ - (h_ - l_) * 0.3 - 1e-3, h_ + (h_ - l_) * 0.3 + 1e-3)) for _ in range(int(np.prod(shape)))]
        gr = (r.integers(-16, 17, size=shape) * 2.0 ** r.integers(-3, 4, size=shape)).astype(T)
        tags = ["random"] + (["large"] if big else []) + (["min_gt_max"] if lo > hi else [])
        add(T, gr, np.array(x, T).reshape(shape), lo, hi, -1 if r.random() < 0.3 else None, tags, "random mask test")
    return cases


# ------------------------------------------------------------------------------------------ FakeQuant

FQ_RANGE_KINDS = ["asym", "asym", "asym", "sym", "pow2", "unit", "pos", "neg", "zero_lo", "zero_hi", "tiny", "huge",
                  "default"]


def fq_range(g, kind):
    if kind == "default":
        return F32(-6), F32(6)
    if kind in ("tiny", "huge"):
        e = -30 if kind == "tiny" else 30
        a = F32(2.0 ** g.rng.uniform(e - 10, e + 10 if kind == "huge" else e))
        return F32(-a * F32(g.rng.uniform(0.1, 1))), F32(a)
    return g.rand_range(F32, kind)


def fq_boundary_points(g, nmin, nmax, scale, inv, k, divide):
    """float32 inputs where the quantised level switches from k-1 to k (found with the model)."""
    with np.errstate(all="ignore"):
        if not (np.isfinite(scale) and scale > 0 and np.isfinite(inv)):
            return []
        x0 = F32(float(nmin) + (k - 0.5) * float(scale))
        if not np.isfinite(x0):
            return []

        def lev(x):
            return float(fq_elem(np.array([x], F32), nmin, nmax, scale, inv, divide)[0])

        if lev(x0) != lev(nxt(x0, F32, -1)):
            g.tie = True
            return [nxt(x0, F32, -1), x0]
        up = dn = x0
        for _ in range(64):  # walk both ways to the nearest switch
            nu, nd = nxt(up, F32, 1), nxt(dn, F32, -1)
            if lev(nu) != lev(up):
                g.tie = True
                return [up, nu]
            if lev(nd) != lev(dn):
                g.tie = True
                return [nd, dn]
            up, dn = nu, nd
        return [x0]


def fq_values(g, n, mn, mx, bits, narrow, divide, specials, grad=False):
    r = g.rng
    nmin, nmax, scale, inv = fq_nudge(mn, mx, bits, narrow)
    span = (1 << bits) - 1 - (1 if narrow else 0)
    vals = [nmin, nmax, nxt(nmin, F32, -1), nxt(nmax, F32, 1), nxt(nmin, F32, 1), nxt(nmax, F32, -1)] if grad else []
    with np.errstate(all="ignore"):
        while len(vals) < n:
            k = r.random()
            if k < 0.25:
                lvl = (int(r.integers(1, span + 1)) if r.random() < 0.6 else
                       int(g.pick([1, 2, span, span - 1, max(1, span // 2)])))
                vals += fq_boundary_points(g, nmin, nmax, scale, inv, lvl, divide)
            elif k < 0.45:
                vals.append(F32(float(nmin) + int(r.integers(0, span + 1)) * float(scale)))
            elif k < 0.55:
                vals += [nmin, nmax, nxt(nmin, F32, -1), nxt(nmax, F32, 1)][int(r.integers(4)):][:1]
            else:
                w = float(nmax) - float(nmin)
                w = w if np.isfinite(w) and w > 0 else abs(float(mx) - float(mn)) + 1.0
                vals.append(F32(r.uniform(float(nmin) - 0.1 * w, float(nmax) + 0.1 * w)))
    vals = [F32(v) if np.isfinite(v) else F32(0) for v in vals][:n]
    for sv in specials:
        if vals:
            vals[int(r.integers(len(vals)))] = F32(sv)
    return np.array(vals, F32)[r.permutation(len(vals))]


def fq_specials(r):
    sp = [F32(np.nan)] if r.random() < 0.2 else []
    sp += [F32(np.inf), F32(-np.inf)] if r.random() < 0.2 else []
    sp += [F32(-0.0)] if r.random() < 0.2 else []
    return sp + (subnormals(F32, r, 1) if r.random() < 0.2 else [])


def fq_inputs(x, mn=None, mx=None, gr=None):
    """The inputs of a FakeQuant case (mkcase keeps those the op has)."""
    return {k: ("float32", v) for k, v in (("inputs", x), ("min", mn), ("max", mx), ("gradients", gr)) if v is not None}


def int_grads(g, shape):
    return (g.rng.integers(-8, 9, size=shape) * 2.0 ** g.rng.integers(-2, 3, size=shape)).astype(F32)


def gen_fq(g, op, count):
    """Random cases around the nudged grid: every num_bits three times, then random ones."""
    r, cases = g.rng, []
    is_args, is_pc, is_grad = op.startswith(ARGS), op.startswith(PC), op.endswith("Gradient")
    bits_plan = list(range(2, 17)) * 3
    while len(cases) < count:
        i = len(cases)
        bits = bits_plan[i] if i < len(bits_plan) else int(g.pick([2, 3, 4, 5, 7, 8, 8, 8, 8, 10, 12, 14, 16, 16]))
        g.tie = False
        narrow = bool(r.random() < 0.35)
        rank = int(g.pick([1, 2, 2, 3, 4] + ([] if is_grad else [5]) if is_pc else [0, 1, 1, 1, 2, 2, 3, 4, 5]))
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(300 if big else 40))
        tags = ["random"] + (["large"] if big else [])
        specials = fq_specials(r)
        attrs = {}
        if bits != 8 or r.random() < 0.5:
            attrs["num_bits"] = bits
        if narrow or r.random() < 0.3:
            attrs["narrow_range"] = narrow
        ranges = []
        for c in range(shape[-1] if is_pc else 1):
            kind = g.pick(FQ_RANGE_KINDS + ["zero", "eq", "gt"]) if is_pc else g.pick(FQ_RANGE_KINDS)
            if not is_pc and not is_args and r.random() < 0.12:
                kind = g.pick(["zero", "eq", "gt", "negzero"])
            if kind in ("zero", "negzero"):
                mn, mx = (F32(0), F32(0)) if kind == "zero" else (F32(-0.0), F32(g.pick([0.0, -0.0])))
            elif kind == "eq":
                mn = mx = g.mag(F32) * F32(g.pick([1, -1]))
            elif kind == "gt":
                mx, mn = fq_range(g, "asym")
            else:
                mn, mx = fq_range(g, kind)
            tags += ["min_eq_max"] * (kind in ("zero", "negzero", "eq")) + ["min_gt_max"] * (kind == "gt") + \
                ["range_excludes_zero"] * (kind in ("pos", "neg") and not is_pc)
            n = int(np.prod(shape)) // (shape[-1] if is_pc else 1)
            col = (fq_values(g, n, mn, mx, bits, narrow, op == VARS, specials if c == 0 else [], grad=is_grad)
                   if mn < mx else np.array([F32(r.uniform(-3, 3)) for _ in range(n)], F32))
            ranges.append((mn, mx, col, kind))
        if is_pc:
            x = np.stack([col for _, _, col, _ in ranges], axis=-1).reshape(shape)
            mins, maxs = np.array([m for m, _, _, _ in ranges], F32), np.array([m for _, m, _, _ in ranges], F32)
            inputs = fq_inputs(x, mins, maxs)
            tags.append("per_channel")
        else:
            (mn, mx, col, kind), = ranges
            x = col.reshape(shape)
            inputs = fq_inputs(x, mn, mx)
            if is_args and not (kind == "default" and r.random() < 0.5):  # else rely on the default min/max
                attrs.update(min=f32hex(mn), max=f32hex(mx))
        if is_grad:
            inputs["gradients"] = ("float32", int_grads(g, shape))
        cases.append(mkcase(op, attrs, inputs, tags + (["tie"] if g.tie else []), "random around the nudged grid"))
    return cases


def fq_edge_case(op, row):
    """A case from an FQ_EDGE row of golden_cases.py, or None where the op cannot express it."""
    is_args, is_pc = op.startswith(ARGS), op.startswith(PC)
    mn, mx = scalar(row["lo"], F32), scalar(row["hi"], F32)
    if isinstance(row.get("x"), str):  # "grid": 15 points from lo - 20% to hi + 20% of the range, in float32
        x = np.array([mn + (mx - mn) * F32(k / 10) for k in range(-2, 13)], F32)
    else:
        x = np.zeros(row["shape"], F32) if "shape" in row else tensor(row["x"], F32)
    if (row.get("grad_only") and not op.endswith("Gradient")) or (is_pc and x.ndim == 0) or (is_args and not mn < mx):
        return None
    attrs = {k: row[r] for k, r in (("num_bits", "bits"), ("narrow_range", "narrow")) if r in row}
    attrs.update(dict(min=f32hex(mn), max=f32hex(mx)) if is_args else {})
    if is_pc:  # the range on every channel
        mn, mx = np.full(x.shape[-1], mn, F32), np.full(x.shape[-1], mx, F32)
    gr = tensor(row["g"], F32) if "g" in row else (2.0 ** (np.arange(x.size) % 12)).astype(F32)
    return mkcase(op, attrs, fq_inputs(x, mn, mx, gr.reshape(x.shape)), row["tags"], row["note"])


def gen_fq_edge(g, op):
    """Hand-designed edge cases for the FakeQuant ops (golden_cases.FQ_EDGE), then random ones of every rank."""
    is_pc, is_grad = op.startswith(PC), op.endswith("Gradient")
    cases = [c for c in (fq_edge_case(op, row) for row in data.FQ_EDGE) if c]
    for rank in range(1, 5 if is_pc and is_grad else 6):
        x = np.round(g.rng.uniform(-1.5, 1.5, size=[2, 3, 1, 2, 2][:rank]) * 32).astype(F32) / F32(32)
        cases.append(fq_edge_case(op, dict(x=x, lo=-1, hi=1, bits=8, tags=["rank%d" % rank], note="rank %d" % rank)))
    if is_pc:  # a different range per channel, degenerate ones included
        mins, maxs = np.array([-1, 0, -0.5, 1, 0.5, -2, -0.0], F32), np.array([1, 0, 0.5, 4, 0.5, -3, 0.0], F32)
        for rank in range(1, 5 if is_grad else 6):
            shape = [2, 1, 2, 2][:rank - 1] + [7]
            x = np.round(g.rng.uniform(-4, 4, size=shape) * 8).astype(F32) / F32(8)
            x.reshape(-1, 7)[0, :] = [np.nan, -np.inf, 0.3, np.inf, -0.0, 1.0, np.finfo(F32).smallest_subnormal]
            cases.append(mkcase(op, {"num_bits": 5}, fq_inputs(x, mins, maxs, int_grads(g, shape) if is_grad else None),
                                ["per_channel", "min_eq_max", "min_gt_max", "nan", "inf"],
                                "degenerate channels rank %d" % rank))
    return cases


def gen_fq_pairs(g, count):
    """The same inputs through Args, Vars and PerChannel (exposes Vars dividing where the others multiply)."""
    r, out = g.rng, {ARGS: [], VARS: [], PC: []}
    for _ in range(count):
        bits = int(g.pick([8, 12, 14, 16, 16]))
        mn, mx = F32(-r.uniform(0.05, 2)), F32(r.uniform(0.05, 2))
        nmin, nmax, scale, inv = fq_nudge(mn, mx, bits, False)
        xs = []
        for _ in range(4000):  # look for inputs where Vars and Args differ
            x = F32(r.uniform(float(nmin), float(nmax)))
            if fq_elem(np.array([x]), nmin, nmax, scale, inv, False)[0] != \
                    fq_elem(np.array([x]), nmin, nmax, scale, inv, True)[0]:
                xs.append(x)
                if len(xs) >= 6:
                    break
        while len(xs) < 8:
            xs.append(F32(r.uniform(float(nmin), float(nmax))))
        x, tags = np.array(xs, F32), ["vars_vs_args"]
        out[ARGS].append(mkcase(ARGS, {"min": f32hex(mn), "max": f32hex(mx), "num_bits": bits}, fq_inputs(x),
                                tags, "paired with Vars/PerChannel: multiply by inv"))
        out[VARS].append(mkcase(VARS, {"num_bits": bits}, fq_inputs(x, mn, mx), tags,
                                "paired with Args/PerChannel: Vars divides by scale"))
        out[PC].append(mkcase(PC, {"num_bits": bits}, fq_inputs(x.reshape(-1, 1), [mn], [mx]), tags + ["per_channel"],
                              "paired with Args/Vars: multiply by inv"))
    return out[ARGS] + out[VARS] + out[PC]


# ------------------------------------------------------------------------------ error cases (spec §5)

def error_cases():
    """The cases of golden_cases.ERRORS, each of which TF is expected to reject."""
    out = []
    for ops, base, rows in data.ERRORS:
        for op in ops:
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


def resolve_named(v):
    """A named tensor of golden_cases.py ("x23", "zeros:2,0", ...) or None."""
    if isinstance(v, str) and v in NAMED:
        return NAMED[v]
    if isinstance(v, str) and v.startswith(("zeros:", "ones:")):
        return (np.zeros if v[0] == "z" else np.ones)([int(d) for d in v.split(":")[1].split(",")])
    return None


# ------------------------------------------------------------------------- spec vectors (section 6)

def parse_spec_vectors(path):
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
        expect = [[float(h) if h in ("nan", "inf", "-inf") else float.fromhex(h) for h in o] for o in row["outs"]]

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


# ---------------------------------------------------------------------------------------- the case list

def build_cases(spec_path):
    """(success candidates, error candidates), ids assigned: the whole case list, without TF."""
    g = Gen(SEED)
    cases, skipped = spec_cases(spec_path) if os.path.exists(spec_path) else ([], None)
    if skipped is None:
        print("WARNING: spec not found, V-vectors skipped", file=sys.stderr)
    for op in (V4, V2, V3, V1):
        cases += gen_qdq_edge(g, op)
    for op, n in QDQ_RANDOM:
        cases += gen_qdq_forward(g, op, n)
    cases += gen_v4grad(g, 200)
    for op, n in FQ_RANDOM:
        cases += gen_fq_edge(g, op) + gen_fq(g, op, n)
    cases += gen_fq_pairs(g, 30)
    errors = error_cases() + [c for c in cases if c.get("expect_error")]
    cases = [c for c in cases if not c.get("expect_error")]
    for i, c in enumerate(cases):
        if zero_sign_ambiguous(c) and not c.get("deviation"):
            c["deviation"] = "zero_sign"
            c["note"] += " (data max is a zero of either sign after DAZ)"
        c["graph_check"] = i % 7 == 0 or c.get("id", "").startswith("V")  # also run in graph mode, compared
    number(cases + errors)
    return cases, errors


def number(cases):
    """Number the cases of each op in this order (first occurrence; spec vectors keep their V.. ids)."""
    counters = dict.fromkeys(OPS, 0)
    for c in {id(c): c for c in cases}.values():
        if not c.get("id", "").startswith("V"):
            counters[c["op"]] += 1
            c["id"] = "%s-%04d" % (id_prefix(c["op"]), counters[c["op"]])


def zero_sign_ambiguous(case):
    """Data-range QDQ case whose data max (after DAZ) is 0 while both zero signs occur: TF's reduction
    order decides the sign of hi and so of zero outputs."""
    op = case["op"]
    if not op.startswith("QuantizeAndDequantize") or op == V4G or attr(case, "range_given"):
        return False
    x = flush(case["inputs"]["input"][1])
    if x.size == 0:
        return False
    axis = attr(case, "axis", -1)
    outer, C, inner = channel_view(x.shape, axis) if axis != -1 else (1, 1, x.size)
    for sl in (x.reshape(outer, C, inner)[:, c, :].ravel() for c in range(C)):
        z = sl[sl == 0]
        if not np.isnan(sl).all() and np.nanmax(sl) == 0 and np.signbit(z).any() and (~np.signbit(z)).any():
            return True
    return False


def auto_tags(case):
    tags = list(case["tags"])
    arrs = [np.asarray(a) for _, a in case["inputs"].values()]
    fl = [a for a in arrs if a.dtype.kind == "f"]
    a = case["attrs"]
    checks = [("nan", any(np.isnan(v).any() for v in fl)), ("inf", any(np.isinf(v).any() for v in fl)),
              ("neg_zero", any(((v == 0) & np.signbit(v)).any() for v in fl)),
              ("subnormal", any(is_sub(v).any() for v in fl if v.dtype in (F32, F64))),
              ("empty", any(v.size == 0 for v in arrs)), ("narrow", a.get("narrow_range")),
              ("unsigned", a.get("signed_input") is False), ("half_up", a.get("round_mode") == "HALF_UP"),
              ("per_channel", isinstance(a.get("axis"), int) and a["axis"] >= 0)]
    tags += [t for t, ok in checks if ok]
    if case["op"].startswith("QuantizeAndDequantize") and case["op"] != V4G:
        tags.append("range_given" if attr(case, "range_given") else "data_range")
    main = case["inputs"].get("input") or case["inputs"].get("inputs")
    if main is not None:
        tags += (["float64"] if main[0] == "float64" else []) + ["rank%d" % np.asarray(main[1]).ndim]
    return list(dict.fromkeys(tags))


def enc_case(case, expect):
    out = {"id": case["id"], "op": case["op"], "attrs": case["attrs"],
           "inputs": {k: enc_array(dt, a) for k, (dt, a) in case["inputs"].items()},
           "expect": expect, "tags": auto_tags(case), "note": case.get("note", "")}
    if case.get("sum_outputs") and "outputs" in expect:
        out["sum_outputs"] = case["sum_outputs"]
    if case.get("deviation"):
        out["deviation"] = case["deviation"]
    out.update({k: case[k] for k in ("graph_error", "eager_outputs", "eager_error") if k in case})
    return out


def listing(cases, errors):
    """The case list as --list writes it: each case as it will be written, expectations left empty."""
    out = []
    for c, kind in [(c, "outputs") for c in cases] + [(c, "error") for c in errors]:
        d = enc_case(c, {kind: {}})
        d.update(graph_check=c.get("graph_check", False), v1_mode=c.get("v1_mode"),
                 spec_expect=[[hexf(v) for v in o] for o in c["spec_expect"]] if "spec_expect" in c else None)
        out.append(d)
    return out


# ----------------------------------------------------------------- running TF (only in forked children)

_tf = None


def tf_mod():
    global _tf
    if _tf is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
        _tf = tf
    return _tf


def v1_session(case):
    """V1 runs from a producer-21 GraphDef in a Session (in modern graphs TF rejects it)."""
    return case["op"] == V1 and case.get("v1_mode") != "modern"


def run_tf(case, mode):
    """The op's outputs from TF, eager or in a ``tf.function`` with a fixed input signature (mode "graph")."""
    tf, names = tf_mod(), list(case["inputs"])
    if v1_session(case):
        return run_v1_session(tf, case)
    at = {k: attr(case, k) for k in case["attrs"]}

    def fn(*args):
        return getattr(tf.raw_ops, case["op"])(**dict(zip(names, args)), **at)

    if mode == "graph":
        fn = tf.function(fn, autograph=False, input_signature=[
            tf.TensorSpec(case["inputs"][n][1].shape, getattr(tf, case["inputs"][n][0])) for n in names])
    res = fn(*[tf.cast(tf.constant(np.asarray(a, F32)), tf.bfloat16) if dt == "bfloat16" else
               tf.constant(np.asarray(a, NP_DTYPES[dt])) for dt, a in (case["inputs"][n] for n in names)])
    return [np.asarray(t.numpy() if hasattr(t, "numpy") else t) for t in (res if isinstance(res, (list, tuple))
                                                                           else [res])]


def run_v1_session(tf, case):
    from tensorflow.core.framework import graph_pb2, types_pb2
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


def clean_message(msg):
    """TF's own message, without node names, stack context or nondeterministic attr lists."""
    for pat, rep, flags in [
            (r"\{\{function_node [^}]*\}\}\s*", "", 0), (r"\s*\[Op:[^\]]*\]( name: .*)?$", "", re.S),
            (r"^Graph execution error:\s*", "", 0), (r"^Detected at node .*?\(most recent call last\):\n", "", 0),
            (r"^Node: '[^']*'\n", "", 0), (r"\n+\t? *\[\[.*$", "", re.S), (r"\n\t; NodeDef: .*$", "", re.S),
            (r": <tf\.Tensor: .*$", "", re.S), (r" with these attrs: \[.*$", "", re.S),
            (r"(Could not find device for node: \{\{node \w+\}\}) = .*$", r"\1", re.S),
            (r" for '\{\{node [^}]*\}\} = .*$", "", re.S)]:
        msg = re.sub(pat, rep, msg, flags=flags)
    return msg.strip()


def run_mode(case, mode):
    try:
        return {"ok": True, "outputs": run_tf(case, mode)}
    except Exception as e:  # noqa: BLE001
        raw = getattr(e, "message", None) or str(e)
        return {"ok": False, "error": {"kind": type(e).__name__, "message": clean_message(raw),
                                       "raw_message": raw[:3000]}}


def fork_run(fn, *args):
    """Run fn(*args) in a forked child with stderr captured: (its pickled result or None, stderr, status)."""
    fd, outpath = tempfile.mkstemp(suffix=".pkl")
    efd, errpath = tempfile.mkstemp(suffix=".err")
    os.close(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(efd, 2)
            res = fn(*args)
            with open(outpath, "wb") as fh:
                pickle.dump(res, fh)
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(0)
    os.close(efd)
    _, status = os.waitpid(pid, 0)
    try:
        with open(outpath, "rb") as fh:
            res = pickle.load(fh) if os.path.getsize(outpath) > 0 else None
    except Exception:  # noqa: BLE001
        res = None
    with open(errpath, errors="replace") as fh:
        err = fh.read()
    os.unlink(outpath)
    os.unlink(errpath)
    return res, err, status


def probe(case, mode):
    """One error case in one mode, in a child of its own (a CHECK failure aborts it)."""
    res, err, status = fork_run(run_mode, case, mode)
    if res is not None and os.WIFEXITED(status):
        return res
    m = re.search(r"(Check failed: [^\n]*)", err)
    msg = m.group(1).strip() if m else (err.strip().splitlines()[-1:] or ["<no stderr>"])[0]
    return {"ok": False, "error": {"kind": "abort", "message": msg, "raw_message": err[-3000:],
                                   "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None}}


def run_batch(cases):
    return {"eager": [run_mode(c, "eager") for c in cases],
            "graph": [run_mode(c, "graph") if c.get("graph_check") else None for c in cases]}


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    an, bn = np.isnan(a), np.isnan(b)
    a, b = a[~an], b[~bn]
    return bool(np.array_equal(an, bn) and np.all(a == b) and np.all(np.signbit(a) == np.signbit(b)))


def enc_outputs(case, outs):
    return {"outputs": {name: enc_array(str(np.asarray(a).dtype), a) for name, a in zip(OPS[case["op"]].outputs, outs)}}


def err_dict(e, mode):
    d = {"kind": e["kind"], "message": e["message"], "mode": mode}
    if e["kind"] == "abort" and e.get("signal") is not None:
        d["signal"] = e["signal"]
    return d


# ------------------------------------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "qdq_compiler", "goldens"))
    ap.add_argument("--spec", default="/work/shared/spec/tf_fake_quant_semantics.md")
    ap.add_argument("--check", action="store_true", help="compare every success case with the numpy model")
    ap.add_argument("--list", metavar="JSON", help="only write the case list (no TF needed) and exit")
    args = ap.parse_args()
    cases, errors = build_cases(args.spec)
    if args.list:
        with open(args.list, "w") as fh:
            fh.write("[\n" + ",\n".join(json.dumps(c) for c in listing(cases, errors)) + "\n]\n")
        print("%d success and %d error candidates -> %s" % (len(cases), len(errors), args.list))
        return
    tf = tf_mod()
    assert tf.__version__ == TF_VERSION, tf.__version__

    print("running %d success candidates in a child ..." % len(cases), flush=True)
    res, err, _ = fork_run(run_batch, cases)
    if res is None:
        print(err[-5000:])
        raise SystemExit("batch child failed")
    problems, n_graph, n_spec = [], 0, 0
    for c, r, gr in zip(cases, res["eager"], res["graph"]):
        if not r["ok"]:
            c["expect_error"] = True
            c["tags"].append("error")
            errors.append(c)
            problems.append("unexpected eager error %s: %s" % (c["id"], r["error"]["message"]))
            continue
        c["result"] = r["outputs"]
        if gr is not None:
            n_graph += 1
            if not gr["ok"]:
                problems.append("graph mode failed for success case %s: %s" % (c["id"], gr["error"]["message"]))
            elif not all(same_bits(a, b) for a, b in zip(r["outputs"], gr["outputs"])):
                problems.append("graph/eager mismatch %s" % c["id"])
        for name, exp, got in zip(OPS[c["op"]].outputs, c.get("spec_expect", ()), r["outputs"]):
            got = np.asarray(got).ravel()
            exp = np.array(exp, got.dtype)
            if not same_bits(exp, got):
                problems.append("%s %s %s: spec %s tf %s" % (
                    "info: zero signs" if c.get("deviation") == "zero_sign" else "SPEC MISMATCH", c["id"], name,
                    [hexf(v) for v in exp], [hexf(v) for v in got]))
        n_spec += "spec_expect" in c

    print("probing %d error cases ..." % len(errors), flush=True)
    for c in list(errors):
        e = probe(c, "eager")
        gmode = None if v1_session(c) else probe(c, "graph")
        if not e["ok"]:
            c["expect"] = {"error": err_dict(e["error"], "graph" if v1_session(c) else "eager")}
            if gmode is not None:
                c["graph_error"] = None if gmode["ok"] else err_dict(gmode["error"], "graph")
                if gmode["ok"]:
                    problems.append("graph mode succeeds where eager fails: %s (%s)" % (c["id"], c["note"]))
        elif gmode is not None and not gmode["ok"]:
            c["expect"] = {"error": err_dict(gmode["error"], "graph")}
            c["eager_outputs"] = enc_outputs(c, e["outputs"])["outputs"]
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

    number(cases + errors)  # as listed unless TF surprised us (a case moved between success and error)
    final = {op: [] for op in OPS}
    for c in cases:
        if "result" in c:
            final[c["op"]].append(enc_case(c, enc_outputs(c, c["result"])))
    for c in errors:
        final[c["op"]].append(enc_case(c, c["expect"]))
    os.makedirs(args.out, exist_ok=True)
    total = 0
    print("\n%-44s %8s %8s" % ("op", "success", "errors"))
    for op, lst in final.items():
        path = os.path.join(args.out, op + ".json")
        with open(path, "w") as fh:
            fh.write('{"op": %s, "tf_version": %s, "cases": [\n' % (json.dumps(op), json.dumps(TF_VERSION)))
            fh.write(",\n".join(json.dumps(c, separators=(", ", ": ")) for c in lst))
            fh.write("\n]}\n")
        total += os.path.getsize(path)
        n_err = sum("error" in c["expect"] for c in lst)
        print("%-44s %8d %8d" % (op, len(lst) - n_err, n_err))
    print("%-44s %8d %8d" % ("TOTAL", sum("result" in c for c in cases), len(errors)))
    print("bytes written: %d; graph-mode cross-checked success cases: %d" % (total, n_graph))
    print("spec vector cases compared with the spec's hex values: %d" % n_spec)
    for p in problems:
        print("NOTE:", p)
    if args.check:
        print("\nmodel check (mismatching ids):")
        for op in OPS:
            for ftz in (False, True):
                lst = [c for c in cases if c["op"] == op and "result" in c and not c.get("deviation")]
                bad = [c["id"] for c in lst if not model_matches(c, ftz)]
                print("  %-44s flush=%-5s %4d/%4d mismatches %s" % (op, ftz, len(bad), len(lst), bad[:12]))


def model_matches(case, ftz):
    try:
        mo = model_outputs(case, ftz)
    except Exception as e:  # noqa: BLE001
        print("model error", case["id"], e)
        return False
    outs = [np.asarray(t) for t in case["result"]]
    return all(same_bits(np.asarray(m, t.dtype).reshape(t.shape), t) for m, t in zip(mo, outs))


if __name__ == "__main__":
    main()
