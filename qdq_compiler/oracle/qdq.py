"""QuantizeAndDequantize V1..V4 forward and V4Grad, exactly as TF 2.21's CPU kernels (spec sections 2, 4.1).

Arrays are viewed as ``[outer, C, inner]`` (C = 1 per-tensor), so per-tensor and per-channel share
one code path: the range parameters have shape ``[1, C, 1]``.
"""
from __future__ import annotations

import numpy as np

from .numerics import flush, ftz, int_to


def int_range(signed: bool, num_bits: int, narrow: bool) -> tuple[int, int]:
    """The integer range [qmin, qmax] (spec 2.1); narrow_range is ignored when unsigned."""
    if signed:
        return -(1 << (num_bits - 1)) + (1 if narrow else 0), (1 << (num_bits - 1)) - 1
    return 0, (1 << num_bits) - 1


def three_d(x: np.ndarray, axis: int | None) -> np.ndarray:
    """View ``x`` as [outer, C, inner] around ``axis`` (C = 1, everything in inner, when per-tensor)."""
    if axis is None:
        return x.reshape(1, 1, -1)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    return x.reshape(outer, x.shape[axis], inner)


def compute_range(qmin: np.ndarray, qmax: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Scale selection of spec 2.3 (ComputeQuantizationRange), vectorised over channels.

    Returns the adjusted (lo, hi), the scale and the separately computed inverse scale.
    """
    big = np.finfo(lo.dtype).max
    with np.errstate(all="ignore"):
        s_lo = np.where(ftz(lambda: qmin * lo) > 0, ftz(lambda: qmin / lo), big)
        s_hi = np.where(ftz(lambda: qmax * hi) > 0, ftz(lambda: qmax / hi), big)
        use_lo = s_lo < s_hi  # strict: ties go to the max side
        scale = np.where(use_lo, s_lo, s_hi)
        inv = np.where(use_lo, ftz(lambda: lo / qmin), ftz(lambda: hi / qmax))
        new_hi = np.where(use_lo, ftz(lambda: qmax * inv), hi)
        new_lo = np.where(use_lo, lo, ftz(lambda: qmin * inv))
    return new_lo.astype(lo.dtype), new_hi.astype(lo.dtype), scale.astype(lo.dtype), inv.astype(lo.dtype)


def quantize(x, lo, hi, scale, inv, *, clamp: bool, half_up: bool):
    """The element-wise step of spec 2.4: clamp (given range only), scale, round, multiply by inv."""
    T = x.dtype
    with np.errstate(all="ignore"):
        if clamp:
            t = np.where(hi < x, hi, x)      # Eigen cwiseMin/cwiseMax: NaN passes, ties keep x
            x = np.where(t < lo, lo, t)
        v = x * scale                        # a subnormal v rounds to ±0 either way: no flush needed
        r = np.floor(v + T.type(0.5)) if half_up else np.rint(v)
        return flush((r * inv).astype(T))


def qdq_forward(x, lo, hi, *, signed, num_bits, narrow, range_given, half_up, axis):
    """QDQ forward. ``lo``/``hi`` are the given range (scalars or [C]), ignored unless range_given."""
    T = x.dtype
    if x.size == 0:
        return x.copy()
    x3 = three_d(flush(x), axis)
    if range_given:
        lo = flush(np.asarray(lo, T)).reshape(1, -1, 1)
        hi = flush(np.asarray(hi, T)).reshape(1, -1, 1)
    else:
        lo = x3.min(axis=(0, 2), keepdims=True)  # NaN propagates: project policy 5
        hi = x3.max(axis=(0, 2), keepdims=True)
    qmin, qmax = int_range(signed, num_bits, narrow)
    lo, hi, scale, inv = compute_range(int_to(qmin, T), int_to(qmax, T), lo, hi)
    y = quantize(x3, lo, hi, scale, inv, clamp=range_given, half_up=half_up)
    return y.reshape(x.shape)


def qdq_v4_grad(g, x, mn, mx, *, axis):
    """V4Grad (spec 4.1): gradients times the inclusive mask on the RAW min/max; min/max grads are zeros."""
    T = x.dtype
    x3 = three_d(flush(x), axis)
    mn3 = flush(mn).reshape(1, -1, 1)
    mx3 = flush(mx).reshape(1, -1, 1)
    mask = ((x3 >= mn3) & (x3 <= mx3)).astype(T)
    with np.errstate(all="ignore"):
        dx = flush(flush(three_d(g, axis)) * mask).reshape(x.shape)
    return dx, np.zeros(mn.shape, T), np.zeros(mx.shape, T)
