"""Host arithmetic shared by the oracle and the emitter: flushing, rounding, integer ranges, the
FakeQuant nudge, bit views and ULP distances.

TF's CPU kernels run with FTZ+DAZ (denormals flushed on input and output of every float
instruction), round-to-nearest, and no FMA. NumPy does neither flushing, so the oracle applies
``flush`` where a subnormal can appear: on inputs (DAZ) and after each arithmetic step (FTZ); products
and quotients take ``ftz_mul``/``ftz_div``, which flush as x86 does (tininess after rounding).
The emitter uses the same functions for the constants it bakes (FakeQuantWithMinMaxArgs' nudged range,
the integer range of QuantizeAndDequantize); both import them from here, explicitly.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import ml_dtypes
import numpy as np

from . import dtypes as _dtypes


F32 = np.float32
_FLOATS = tuple(_dtypes.FLOATS)   # the dtype table's float types (a new row is one here too)


_TINY: dict = {}  # dtype -> its smallest normal number, or None for a non-float dtype


def _tiny(dt):
    try:
        return _TINY[dt]
    except KeyError:
        t = _TINY[dt] = ml_dtypes.finfo(dt).tiny if np.dtype(dt).name in _FLOATS else None
        return t


def flush(a: np.ndarray) -> np.ndarray:
    """Replace subnormals by a zero of the same sign (x86 FTZ/DAZ). Returns ``a`` itself if none."""
    a = np.asarray(a)
    tiny = _tiny(a.dtype)
    if tiny is None:
        return a
    with np.errstate(invalid="ignore"):
        sub = (np.abs(a) < tiny) & (a != 0)
    if not sub.any():
        return a
    out = np.array(a, copy=True)
    out[sub] = np.copysign(np.zeros((), a.dtype), out[sub])
    return out


_F32_TINY = float(np.finfo(np.float32).tiny)


def flush_f32(v: float) -> float:
    """``flush(np.float32(v)).item()`` for a Python float already rounded to float32, without NumPy (an
    attribute checked on every call: a tenth of a small call's time went into two array flushes)."""
    return math.copysign(0.0, v) if v != 0 and abs(v) < _F32_TINY else v


def ftz(fn):
    """Call a NumPy arithmetic step with FP warnings silenced and flush its result (sums and differences:
    products and quotients take ``ftz_mul``/``ftz_div``)."""
    with np.errstate(all="ignore"):
        return flush(fn())


def _x86_ftz(op, a, b, double_a: bool) -> np.ndarray:
    """``op(a, b)`` as x86 leaves it under FTZ: a zero of its sign where the same operation with one operand
    doubled (exact) is below twice the smallest normal, i.e. where the result rounded with an unbounded
    exponent is below the smallest normal (tininess after rounding). Only a result of at most the smallest
    normal can be one, so the doubled operation runs only when there is such a result."""
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(all="ignore"):
        r = np.asarray(op(a, b))
        tiny = _tiny(r.dtype)
        if tiny is None:
            return r
        mag = np.abs(r)
        near = (mag <= tiny) & (mag != 0)
        if not near.any():
            return r
        two = r.dtype.type(2)
        doubled = op(a.astype(r.dtype) * two, b) if double_a else op(a, b.astype(r.dtype) * two)
        under = near & (np.abs(doubled) < 2 * tiny)
    return np.where(under, np.copysign(np.zeros((), r.dtype), r), r).astype(r.dtype)


def ftz_mul(a, b) -> np.ndarray:
    """``a * b`` as x86 computes it under FTZ (TF's CPU kernels, XLA:CPU, IREE's CPU threads); operands
    already flushed (DAZ). Flushing NumPy's product is not the same: one in [tiny*(1 - 2^-p),
    tiny*(1 - 2^-(p+1))) rounds up to ``tiny`` on the subnormal grid, and x86 gives 0 (measured: TF 2.21
    multiplies 0x3f7fffff by 2^-126 to 0). a*(2b) is exact and rounds at full precision down to half the
    smallest normal, so it decides the tininess (as ``fma(ftz=True)``)."""
    return _x86_ftz(np.multiply, a, b, double_a=False)


def ftz_div(a, b) -> np.ndarray:
    """``a / b`` as x86 computes it under FTZ (see ``ftz_mul``; (2a)/b decides). Only an exact quotient by a
    power of two can land in that sliver (0x3f7fffff / 2^126 is 0 on x86, 2^-126 in NumPy)."""
    return _x86_ftz(np.divide, a, b, double_a=True)


def round_half_away_from_zero(x: np.ndarray) -> np.ndarray:
    """``std::round`` exactly (no intermediate rounding): floor(|x| + 0.5) with the sign of x.

    Evaluated in float64, where |x| + 0.5 is exact for every float32 below 2^29.
    """
    x64 = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        return np.copysign(np.floor(np.abs(x64) + 0.5), x64)


def int_to(value: int, dtype) -> np.ndarray:
    """Convert an int64 to ``dtype`` with one round-to-nearest (as C++'s static_cast<T>(int64))."""
    return np.array(value, np.int64).astype(dtype)


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of a float array, as unsigned ints of the same width."""
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    return a.view(np.dtype(f"uint{a.dtype.itemsize * 8}"))


def bit_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact comparison: same dtype and shape, NaN where the other has NaN, every other bit equal."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.name not in _FLOATS:   # integers, and storage types by their codes (a float8 NaN's sign counts)
        return bool(np.array_equal(a, b)) if a.dtype.kind in "iub" else bool(np.array_equal(bits(a), bits(b)))
    na, nb = np.isnan(a), np.isnan(b)
    if not np.array_equal(na, nb):
        return False
    return bool(np.array_equal(bits(a)[~na], bits(b)[~nb]))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units in the last place between two same-dtype arrays (NaN vs NaN is 0).

    Returns a huge number where one side is NaN and the other is not. Works for any float width: the
    bit pattern is mapped to a monotone integer line (sign-magnitude to two's complement).
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return 0
    width = a.dtype.itemsize * 8

    def ordered(x):
        u = bits(x)
        mag = (u & ((1 << (width - 1)) - 1)).astype(np.int64) if width < 64 else \
            (u & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(np.int64)
        negative = (u >> np.array(width - 1, u.dtype)).astype(bool)
        return np.where(negative, -mag, mag)

    na, nb = np.isnan(a), np.isnan(b)
    if not np.array_equal(na, nb):
        return 2**62
    keep = ~na
    if not keep.any():
        return 0
    d = np.abs(ordered(a[keep]) - ordered(b[keep]))
    return int(d.max())


def sum_within_bound(got: np.ndarray, want: np.ndarray, terms: np.ndarray) -> bool:
    """Whether a float reduction ``got`` matches ``want`` up to the freedom of its summation order.

    Project policy 6: the order of a sum is free, so two results may differ by (n - 1) eps sum|terms|,
    with n the number of terms per output element (``terms`` reduced over every leading dimension that
    ``want`` lacks). NaN must sit where it sits in ``want``.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    t = np.asarray(terms, np.float64)
    axes = tuple(range(t.ndim - want.ndim))
    n = t.size // max(want.size, 1)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf and inf * 0 are NaN here, by intent
        bound = max(n - 1, 0) * float(ml_dtypes.finfo(want.dtype).eps) * np.abs(t).sum(axis=axes)
        d = np.abs(got.astype(np.float64) - want.astype(np.float64))
        return bool(np.array_equal(np.isnan(got), np.isnan(want)) and np.all(np.nan_to_num(d) <= bound))


# -- integer ranges and the FakeQuant nudge -----------------------------------------------------------


def int_range(signed: bool, num_bits: int, narrow: bool) -> tuple[int, int]:
    """QuantizeAndDequantize's integer range [qmin, qmax] (spec 2.1); narrow_range is ignored when unsigned."""
    if signed:
        return -(1 << (num_bits - 1)) + (1 if narrow else 0), (1 << (num_bits - 1)) - 1
    return 0, (1 << num_bits) - 1


def quant_levels(num_bits: int, narrow: bool) -> tuple[int, int]:
    """FakeQuant's quantisation levels [quant_min, quant_max] (spec 3.1)."""
    return (1 if narrow else 0), (1 << num_bits) - 1


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
    quant_min, quant_max = quant_levels(num_bits, narrow)
    qminf, qmaxf = F32(quant_min), F32(quant_max)
    levels = F32(qmaxf - qminf)
    diff = ftz(lambda: mx - mn)
    scale = ftz_div(diff, levels)
    inv = ftz_div(levels, diff)
    zpf = ftz(lambda: qminf - ftz_div(mn, scale))
    with np.errstate(invalid="ignore"):
        rounded = round_half_away_from_zero(zpf)
        # static_cast<uint16>(NaN) is 0 on x86 (cvttss2si gives 0x80000000, truncated).
        rounded = np.where(np.isnan(rounded), 0.0, rounded)
        zp = np.where(zpf < qminf, quant_min, np.where(zpf > qmaxf, quant_max, rounded)).astype(F32)
    nudged_min = ftz_mul(qminf - zp, scale).astype(F32)
    nudged_max = ftz_mul(qmaxf - zp, scale).astype(F32)
    qzero = np.floor(ftz(lambda: ftz_mul(-nudged_min, inv) + F32(0.5))).astype(F32)
    return Nudged(nudged_min, nudged_max, scale.astype(F32), inv.astype(F32), qzero,
                  (mn == 0) & (mx == 0))


# -- shapes ---------------------------------------------------------------------------------------------


def three_d(x: np.ndarray, axis: int | None) -> np.ndarray:
    """View ``x`` as [outer, C, inner] around ``axis`` (C = 1, everything in inner, when per-tensor).

    Per-tensor and per-channel arithmetic then share one code path, with parameters of shape [1, C, 1];
    the compiled path runs per-axis ops on this same view (config.canonical_view).
    """
    if axis is None:
        return x.reshape(1, 1, -1)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    return x.reshape(outer, x.shape[axis], inner)


# -- fused multiply-add, as XLA:CPU's FMA instructions compute it ----------------------------------------


def fma(a, b, c, dtype, ftz: bool = False) -> np.ndarray:
    """``a * b + c`` rounded once to ``dtype`` (float32 or float64), as an FMA instruction computes it.

    ``ftz``: as x86 under FTZ (XLA:CPU, IREE's CPU threads): a result whose rounding *with an unbounded
    exponent* is below the smallest normal becomes a zero of its sign (tininess after rounding). Flushing
    the rounded result afterwards is not the same: a sum in [tiny*(1 - 2^-p), tiny*(1 - 2^-(p+1))) rounds to
    ``tiny`` on the subnormal grid, and x86 gives 0 (measured with TF 2.21: 0x3f7fffff * 2^-126 is 0).
    Doubling the operands b and c doubles the sum exactly and rounds it at full precision down to half the
    smallest normal, which decides the tininess. Operands must already be flushed (DAZ) by the caller.

    float32: the product is exact in float64 (24 + 24 bits); the sum's exact error comes from TwoSum and
    makes the float64 sum round-to-odd (a sticky last bit), so its rounding to float32 is the single
    correct rounding of a*b + c (round-to-odd with 2+ extra bits is innocuous; plain float64 would round
    twice). float64 (Boldo and Melquiond's emulation): Dekker's exact product uh + ul (Veltkamp
    splitting), TwoSum c + uh = th + tl, then th plus the round-to-odd sum of tl + ul, rounded once. inf and NaN take
    IEEE's answer from the plain float64 expression. No flushing here: callers flush (FTZ/DAZ).
    """
    dt = np.dtype(dtype)
    if ftz:
        r = fma(a, b, c, dt)
        with np.errstate(all="ignore"):
            doubled = fma(a, np.asarray(b, dt) * dt.type(2), np.asarray(c, dt) * dt.type(2), dt)
            tiny = np.abs(doubled) < 2 * np.finfo(dt).tiny
        return np.where(tiny, np.copysign(dt.type(0), r), r).astype(dt)
    with np.errstate(all="ignore"):
        if dt == np.float32:
            a64, b64, c64 = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
            return _round_to_odd_sum(a64 * b64, c64).astype(np.float32)
        a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
        plain = a * b + c
        uh, ul = _two_product(a, b)
        th, tl = _two_sum(c, uh)
        r = th + _round_to_odd_sum(tl, ul)
        ok = np.isfinite(plain) & np.isfinite(uh) & np.isfinite(r)
        return np.where(ok, r, plain).astype(np.float64)


def _two_sum(x, y):
    s = x + y
    bb = s - x
    return s, (x - (s - bb)) + (y - bb)


def _round_to_odd_sum(x, y):
    """x + y in float64 rounded to odd: the nearest sum, moved one ulp toward the exact error when that is
    nonzero and the last bit is even."""
    s, e = _two_sum(x, y)
    s = np.asarray(s, np.float64)
    fix = np.isfinite(s) & (e != 0) & ((s.view(np.int64) & 1) == 0)
    if np.any(fix):
        s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s


def _two_product(a, b):
    """Dekker: a * b = p + q exactly (barring over/underflow), by Veltkamp splitting at 27 bits."""
    p = a * b
    split = 134217729.0  # 2^27 + 1
    ca, cb = split * a, split * b
    ah = ca - (ca - a)
    bh = cb - (cb - b)
    al, bl = a - ah, b - bh
    q = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, q


def xla_max(a, b) -> np.ndarray:
    """XLA:CPU's max (xla_cpu_enable_fast_min_max): (a >= b or either is NaN) ? a : b. Which operand
    comes first decides where a NaN goes."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    with np.errstate(invalid="ignore"):
        return np.where((a >= b) | np.isnan(a) | np.isnan(b), a, b)


def xla_min(a, b) -> np.ndarray:
    """(a <= b or either is NaN) ? a : b."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    with np.errstate(invalid="ignore"):
        return np.where((a <= b) | np.isnan(a) | np.isnan(b), a, b)
