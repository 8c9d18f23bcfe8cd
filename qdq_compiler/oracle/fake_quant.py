"""FakeQuantWithMinMax{Args,Vars,VarsPerChannel} and their gradients, as TF 2.21's CPU kernels
(spec sections 3 and 4.2). Everything is float32; per-channel parameters have shape [d] and
broadcast against the last dimension, per-tensor ones are 0-d.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .numerics import flush, ftz, round_half_away_from_zero

F32 = np.float32


class Nudged(NamedTuple):
    """The nudged range of spec 3.2, plus the element-wise constants derived from it."""
    nudged_min: np.ndarray
    nudged_max: np.ndarray
    scale: np.ndarray
    inv: np.ndarray
    qzero: np.ndarray
    zero_range: np.ndarray  # min == 0 and max == 0 (the Vars/PerChannel special case)


def nudge(mn, mx, num_bits: int, narrow: bool) -> Nudged:
    """Nudge (spec 3.2) in float32, evaluated in TF's order, with FTZ/DAZ as on TF's CPU."""
    mn = flush(np.asarray(mn, F32))
    mx = flush(np.asarray(mx, F32))
    quant_min = 1 if narrow else 0
    quant_max = (1 << num_bits) - 1
    qminf, qmaxf = F32(quant_min), F32(quant_max)
    levels = F32(qmaxf - qminf)
    diff = ftz(lambda: mx - mn)
    scale = ftz(lambda: diff / levels)
    inv = ftz(lambda: levels / diff)
    zpf = ftz(lambda: qminf - ftz(lambda: mn / scale))
    with np.errstate(invalid="ignore"):
        rounded = round_half_away_from_zero(zpf)
        # static_cast<uint16>(NaN) is 0 on x86 (cvttss2si gives 0x80000000, truncated).
        rounded = np.where(np.isnan(rounded), 0.0, rounded)
        zp = np.where(zpf < qminf, quant_min, np.where(zpf > qmaxf, quant_max, rounded)).astype(F32)
    nudged_min = ftz(lambda: (qminf - zp) * scale).astype(F32)
    nudged_max = ftz(lambda: (qmaxf - zp) * scale).astype(F32)
    qzero = np.floor(ftz(lambda: ftz(lambda: -nudged_min * inv) + F32(0.5))).astype(F32)
    return Nudged(nudged_min, nudged_max, scale.astype(F32), inv.astype(F32), qzero,
                  (mn == 0) & (mx == 0))


def fake_quant(x, n: Nudged, *, divides: bool, zero_special: bool):
    """The element-wise step of spec 3.3. ``divides``: Vars divides by scale, Args/PerChannel multiply by inv."""
    xf = flush(x)
    with np.errstate(all="ignore"):
        c = np.where(n.nudged_max < xf, n.nudged_max, xf)
        c = np.where(c < n.nudged_min, n.nudged_min, c)
        s = flush(c - n.nudged_min)
        t = flush(s / n.scale) if divides else flush(s * n.inv)
        t = flush(t - n.qzero) + F32(0.5)
        out = flush((np.floor(t) * n.scale).astype(F32))
    if zero_special and n.zero_range.any():
        out = np.where(n.zero_range, F32(0.0), out).astype(F32)
    return out.astype(F32, copy=False)


def fake_quant_grad(g, x, n: Nudged, *, with_sums: bool, zero_special: bool):
    """Masked gradient (inclusive nudged bounds) and, for Vars/PerChannel, the strict-side sums."""
    xf = flush(x)
    gf = flush(g)
    inside = ((xf >= n.nudged_min) & (xf <= n.nudged_max)).astype(F32)
    with np.errstate(all="ignore"):
        dx = flush(gf * inside)
    if not with_sums:
        return (dx,)
    below = (xf < n.nudged_min).astype(F32)
    above = (xf > n.nudged_max).astype(F32)
    axes = tuple(range(x.ndim - np.ndim(n.nudged_min)))  # every dim but the channel (all for per-tensor)
    with np.errstate(all="ignore"):
        # The summation order is free (project policy 6); float64 accumulation keeps it near exact.
        dmin = flush(np.sum(flush(gf * below), axis=axes, dtype=np.float64).astype(F32))
        dmax = flush(np.sum(flush(gf * above), axis=axes, dtype=np.float64).astype(F32))
    if zero_special and n.zero_range.any():
        dx = np.where(n.zero_range, g, dx).astype(F32)   # pass-through is a copy: raw bits, no flush
        dmin = np.where(n.zero_range, F32(0), dmin).astype(F32)
        dmax = np.where(n.zero_range, F32(0), dmax).astype(F32)
    return dx, np.asarray(dmin, F32), np.asarray(dmax, F32)
