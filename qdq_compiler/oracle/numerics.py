"""Floating-point helpers that make NumPy behave like TF's CPU kernels.

TF's CPU kernels run with FTZ+DAZ (denormals flushed on input and output of every float
instruction), round-to-nearest, and no FMA. NumPy does neither flushing, so the oracle applies
``flush`` where a subnormal can appear: on inputs (DAZ) and after each arithmetic step (FTZ).
"""
from __future__ import annotations

import numpy as np


def flush(a: np.ndarray) -> np.ndarray:
    """Replace subnormals by a zero of the same sign (x86 FTZ/DAZ). Returns ``a`` itself if none."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return a
    tiny = np.finfo(a.dtype).tiny
    with np.errstate(invalid="ignore"):
        sub = (np.abs(a) < tiny) & (a != 0)
    if not sub.any():
        return a
    out = np.array(a, copy=True)
    out[sub] = np.copysign(np.zeros((), a.dtype), out[sub])
    return out


def ftz(fn):
    """Call a NumPy arithmetic step with FP warnings silenced and flush its result."""
    with np.errstate(all="ignore"):
        return flush(fn())


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
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def bit_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact comparison: same dtype and shape, NaN where the other has NaN, every other bit equal."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    na, nb = np.isnan(a), np.isnan(b)
    if not np.array_equal(na, nb):
        return False
    return bool(np.array_equal(bits(a)[~na], bits(b)[~nb]))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units in the last place between two same-dtype arrays (NaN vs NaN is 0).

    Returns a huge number where one side is NaN and the other is not.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return 0
    itype = {4: np.int64, 8: np.int64}.get(a.dtype.itemsize, np.int64)
    width = a.dtype.itemsize * 8

    def ordered(x):
        u = bits(x).astype(np.uint64).astype(np.int64) if width == 32 else bits(x).view(np.int64)
        sign = np.int64(1) << (width - 1)
        if width == 32:
            return np.where(u & sign, -(u & (sign - 1)), u).astype(itype)
        return np.where(u < 0, -(u & np.int64(0x7FFFFFFFFFFFFFFF)), u).astype(itype)

    na, nb = np.isnan(a), np.isnan(b)
    if not np.array_equal(na, nb):
        return 2**62
    keep = ~na
    if not keep.any():
        return 0
    d = np.abs(ordered(a[keep]) - ordered(b[keep]))
    return int(d.max())
