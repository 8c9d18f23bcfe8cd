"""An independent numpy model of TF 2.21's CPU kernels: the generators aim inputs at rounding ties with it,
and ``--check`` compares it with TF.

A deliberate second opinion, not the package's oracle: where it and TF disagree, one of the two
descriptions of TF is wrong. ``ftz`` models DAZ/FTZ (subnormals read and written as zeros of the same sign).
"""
import math

import numpy as np

from qdq_compiler.ops import OPS

from .caselib import ARGS, F32, F64, PC, V1, V4G, VARS, attr, is_sub
from .fmt import same_bits


def flush(a):
    """Subnormals flushed to zero of the same sign (models DAZ/FTZ); a new array of a's type."""
    a = np.asarray(a)
    return np.where(is_sub(a), np.copysign(a.dtype.type(0), a), a).astype(a.dtype)


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


def model_matches(case, ftz):
    try:
        mo = model_outputs(case, ftz)
    except Exception as e:  # noqa: BLE001
        print("model error", case["id"], e)
        return False
    outs = [np.asarray(t) for t in case["result"]]
    return all(same_bits(np.asarray(m, t.dtype).reshape(t.shape), t) for m, t in zip(mo, outs))


def check(cases, ops):
    """--check: the model against TF's results, with and without flushing, per op."""
    print("\nmodel check (mismatching ids):")
    for op in ops:
        for ftz in (False, True):
            lst = [c for c in cases if c["op"] == op and "result" in c and not c.get("deviation")]
            bad = [c["id"] for c in lst if not model_matches(c, ftz)]
            print("  %-44s flush=%-5s %4d/%4d mismatches %s" % (op, ftz, len(bad), len(lst), bad[:12]))
