"""The FakeQuant family under ``semantics="tf-xla"``: TF 2.21's XLA lowering, bit for bit (float32).

Measured against ``tf.function(jit_compile=True)`` on x86-64 with FMA (tools/goldens/tf_xla.py; the
derivation from XLA's optimised HLO and the disassembly is in the README's semantics section). XLA:CPU
runs with FTZ/DAZ like the CPU kernels, but computes differently:

* the element step is ``q = floor(fma(clamped - nudged_min, inv, 0.5))``, ``out = fma(q, scale,
  nudged_min)``: two FMAs with one rounding each, and no ``qzero`` term;
* Args' range is folded at compile time by TF's MLIR bridge: ``scale = diff / levels``, ``inv = levels /
  diff``, the zero point rounded half to EVEN and clamped with fmax/fmin (a NaN becomes the bound);
* Vars/PerChannel nudge on the device (XlaNudge): ``scale = diff * f32(1 / levels)`` (the algebraic
  simplifier's rewrite of the division), the zero point rounded half AWAY from zero, ``inv = 1 / scale``.
  With a single channel (PerChannel, last dimension 1) the simplifier meets the divisions in another
  order: ``zpf = qmin - (min * levels) / diff`` and ``inv = levels / diff``;
* the clamp is XLA's max/min (``(a >= b or unordered) ? a : b``): Args' ``max(x, nudged_min)`` keeps a
  NaN input, Vars' ``max(nudged_min, x)`` turns it into ``nudged_min``;
* no special case for min == max == 0 (the NaN zero point spreads: the output is NaN);
* gradients select the incoming gradient (no multiply, so a subnormal gradient passes unflushed);
  ArgsGradient nudges on the host with tf2xla's CpuNudge (a true division, std::round).
"""
from __future__ import annotations

import numpy as np

from ..numerics import F32, Nudged, flush, fma, ftz_div, ftz_mul, quant_levels, xla_max, xla_min


def _op(fn, *xs):
    """One float32 operation under DAZ (operands) and FTZ (result; products and quotients by ``ftz_mul``,
    ``ftz_div``: x86 flushes by tininess after rounding)."""
    with np.errstate(all="ignore"):
        return flush(np.asarray(fn(*[flush(np.asarray(x, F32)) for x in xs]), F32))


def _fma(a, b, c):
    return fma(flush(a), flush(b), flush(c), F32, ftz=True)


def _round_half_away(z):
    """llvm.round: nearest, ties away from zero; NaN and inf pass."""
    z = np.asarray(z, F32)
    with np.errstate(invalid="ignore"):
        t = np.trunc(z)
        r = np.where(np.abs(z - t) >= F32(0.5), t + np.copysign(F32(1), z), t).astype(F32)
        return np.where(np.isfinite(z), r, z).astype(F32)


def _zero_point(zpf, qmin, qmax, rounded):
    with np.errstate(invalid="ignore"):
        return np.where(zpf <= qmin, qmin, np.where(zpf >= qmax, qmax, rounded)).astype(F32)


def nudge_device(mn, mx, num_bits: int, narrow: bool, single_channel: bool = False) -> Nudged:
    """XlaNudge (Vars, PerChannel), per element of min/max, every step rounded on its own."""
    qmin, qmax = quant_levels(num_bits, narrow)
    qminf, qmaxf, levels = F32(qmin), F32(qmax), F32(qmax - qmin)
    mn, mx = np.asarray(mn, F32), np.asarray(mx, F32)
    diff = _op(np.subtract, mx, mn)
    scale = _op(ftz_mul, diff, F32(1) / levels)
    if single_channel:
        zpf = _op(np.subtract, qminf, _op(ftz_div, _op(ftz_mul, mn, levels), diff))
        inv = _op(ftz_div, levels, diff)
    else:
        zpf = _op(np.subtract, qminf, _op(ftz_div, mn, scale))
        inv = _op(ftz_div, F32(1), scale)
    zp = _zero_point(zpf, qminf, qmaxf, _round_half_away(zpf))
    return Nudged(_op(ftz_mul, qminf - zp, scale), _op(ftz_mul, qmaxf - zp, scale), scale, inv,
                  F32(0), np.zeros(np.shape(mn), bool))


def nudge_folded(mn: float, mx: float, num_bits: int, narrow: bool) -> Nudged:
    """Args' range, folded at compile time by the MLIR bridge (lower_tf.cc) and XLA's constant folding: IEEE
    arithmetic, each result then flushed, but no x86 tininess test (measured with TF 2.21: 2-bit narrow with
    max - min = 0x00ffffff keeps scale = 2^-126, where the kernels' FTZ gives 0)."""
    qmin, qmax = quant_levels(num_bits, narrow)
    qminf, qmaxf, levels = F32(qmin), F32(qmax), F32(qmax - qmin)
    diff = _op(np.subtract, F32(mx), F32(mn))
    scale = _op(np.divide, diff, levels)
    inv = _op(np.divide, levels, diff)
    zpf = _op(np.subtract, qminf, _op(np.divide, F32(mn), scale))
    with np.errstate(invalid="ignore"):
        r = np.where(np.isfinite(zpf), np.rint(zpf), zpf).astype(F32)
    zp = F32(np.fmin(np.fmax(r, qminf), qmaxf))
    return Nudged(_op(np.multiply, qminf - zp, scale), _op(np.multiply, qmaxf - zp, scale), scale, inv, F32(0),
                  np.zeros((), bool))


def nudge_host(mn: float, mx: float, num_bits: int, narrow: bool) -> Nudged:
    """tf2xla's CpuNudge (ArgsGradient): float32 C++ on the host, FTZ/DAZ, std::round."""
    qmin, qmax = quant_levels(num_bits, narrow)
    qminf, qmaxf = F32(qmin), F32(qmax)
    scale = _op(ftz_div, _op(np.subtract, F32(mx), F32(mn)), _op(np.subtract, qmaxf, qminf))
    zpf = _op(np.subtract, qminf, _op(ftz_div, F32(mn), scale))
    zp = _zero_point(zpf, qminf, qmaxf, _round_half_away(zpf))
    return Nudged(_op(ftz_mul, qminf - zp, scale), _op(ftz_mul, qmaxf - zp, scale), scale, F32(0),
                  F32(0), np.zeros((), bool))


def nudged(call, arrays) -> Nudged:
    """The nudged range of a call under tf-xla (``arrays``: float32)."""
    a, v = call.attrs, call.spec.variant
    if v.range_from == "attr":
        fn = nudge_host if call.spec.gradient_of else nudge_folded
        return fn(a["min"], a["max"], a["num_bits"], a["narrow_range"])
    single = v.range_from == "channel" and arrays["inputs"].ndim > 0 and arrays["inputs"].shape[-1] == 1
    return nudge_device(arrays["min"], arrays["max"], a["num_bits"], a["narrow_range"], single)


def fake_quant(x, n: Nudged, *, nan_passes: bool):
    """The element step. ``nan_passes``: Args' clamp keeps a NaN input; Vars' turns it into nudged_min."""
    x = flush(np.asarray(x, F32))
    lo = xla_max(x, n.nudged_min) if nan_passes else xla_max(n.nudged_min, x)
    c = xla_min(lo, n.nudged_max).astype(F32)
    s = _op(np.subtract, c, n.nudged_min)
    q = np.floor(_fma(s, n.inv, F32(0.5)))
    return _fma(q, n.scale, n.nudged_min)


def fake_quant_grad(g, x, n: Nudged, *, with_sums: bool):
    """The masked gradient (a select: g passes unflushed) and, for Vars/PerChannel, the strict-side sums."""
    g, xd = np.asarray(g, F32), flush(np.asarray(x, F32))
    with np.errstate(invalid="ignore"):
        inside = (n.nudged_min <= xd) & (xd <= n.nudged_max)
        below, above = xd < n.nudged_min, xd > n.nudged_max
    dx = np.where(inside, g, F32(0)).astype(F32)
    if not with_sums:
        return (dx,)
    axes = tuple(range(x.ndim - np.ndim(n.nudged_min)))
    with np.errstate(all="ignore"):  # the order of a float sum is free (policy 6): accumulate in float64
        dmin = flush(np.sum(np.where(below, g, F32(0)), axis=axes, dtype=np.float64).astype(F32))
        dmax = flush(np.sum(np.where(above, g, F32(0)), axis=axes, dtype=np.float64).astype(F32))
    return dx, np.asarray(dmin, F32), np.asarray(dmax, F32)
