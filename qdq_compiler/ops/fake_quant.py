"""FakeQuantWithMinMax{Args,Vars,VarsPerChannel}: the specs and every rule of the family.

TF 2.21's CPU kernels (spec section 3): the range is nudged so that zero is exactly representable
(float32, TF's order), then clamp, shift, scale, floor(v + 0.5), multiply by the scale. Args take the
range from float attributes and multiply by the inverse scale; Vars take scalar tensors and divide by
the scale; VarsPerChannel take [d] vectors along the last dimension and multiply. Vars and PerChannel
answer 0 where min == max == 0. The gradient family (fake_quant_grad.py) shares the specs' pieces, the
checks and the nudge.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..errors import fmt_number, shape_text
from ..numerics import F32, Nudged, flush, flush_f32, ftz_div, ftz_mul, nudge, quant_levels
from . import fake_quant_xla as xla
from .family import FLAT, LAST, Family
from .rules import Rules
from .spec import OpSpec, attr, data, per_channel, result

DTYPES = ("float32",)                              # TF's kernels (CPU and XLA alike)
WIDE_DTYPES = ("float16", "bfloat16", "float32")   # ours: 16-bit storage, TF's float32 arithmetic (README)
ATTR, SCALAR, CHANNEL = "attr", "scalar", "channel"   # where the range comes from


@dataclass(frozen=True)
class Variant:
    range_from: str = SCALAR      # ATTR (Args) | SCALAR (Vars) | CHANNEL (VarsPerChannel, last dimension)
    divides: bool = False         # Vars divides by the scale instead of multiplying by the inverse


NUM_BITS = attr("num_bits", int, 8, doc="2..16")
NARROW = attr("narrow_range", bool, False, doc="drop the lowest quantisation level")
ARGS_ATTRS = (attr("min", float, -6.0, doc="range minimum (float32 attr)"),
              attr("max", float, 6.0, doc="range maximum (float32 attr)"), NUM_BITS, NARROW)
VARS_ATTRS = (NUM_BITS, NARROW)
VARS_INPUTS = (data("inputs"), per_channel("min", "min", -1.5), per_channel("max", "max", 2.0))


# -- the kernel (spec 3.3) -------------------------------------------------------------------------------


def nudged_params(call, arrays=None) -> Nudged:
    """The nudged range of a call: from the attrs (Args) or the min/max tensors (``arrays``: widened)."""
    a = call.attrs
    arrays = call.arrays if arrays is None else arrays
    if call.spec.variant.range_from == ATTR:
        mn, mx = np.float32(a["min"]), np.float32(a["max"])
    else:
        mn, mx = arrays["min"], arrays["max"]
    return nudge(mn, mx, a["num_bits"], a["narrow_range"])


def fake_quant(x, n: Nudged, *, divides: bool, zero_special: bool):
    """The element-wise step. ``divides``: Vars divides by scale, Args/PerChannel multiply by inv."""
    xf = flush(x)
    with np.errstate(all="ignore"):
        c = np.where(n.nudged_max < xf, n.nudged_max, xf)
        c = np.where(c < n.nudged_min, n.nudged_min, c)
        s = flush(c - n.nudged_min)
        t = ftz_div(s, n.scale) if divides else ftz_mul(s, n.inv)
        t = flush(t - n.qzero) + F32(0.5)
        out = ftz_mul(np.floor(t), n.scale).astype(F32)
    if zero_special and n.zero_range.any():
        out = np.where(n.zero_range, F32(0.0), out).astype(F32)
    return out.astype(F32, copy=False)


# -- checks shared with the gradients (spec 5.2) -----------------------------------------------------------


def args_range_cpu(c, spec, lo: float, hi: float):
    """TF's CPU kernels (Args and ArgsGradient) refuse min >= max (a NaN too)."""
    if not lo < hi:
        c.fail(f"min={fmt_number(lo)} must be smaller than max={fmt_number(hi)}", "min",
               tf=f"min has to be smaller than max, was: {fmt_number(lo)} >= {fmt_number(hi)}")


def args_range_xla(c, spec, lo: float, hi: float):
    """TF's MLIR bridge refuses min >= max for the forward op only (a NaN passes); tf2xla's ArgsGradient
    checks nothing and nudges whatever it is given."""
    if not spec.gradient_of and lo >= hi:
        c.fail(f"min={fmt_number(lo)} must be smaller than max={fmt_number(hi)} (XLA refuses "
               f"min >= max)", "min", tf=f"range is invalid: [{lo:.6f},{hi:.6f}]")


def check(c, spec, arrays, attrs, *, args_range=args_range_cpu):
    """The FakeQuant checks (spec 5.2), shared with the gradients; ``args_range``: the semantics' own check
    of Args' min/max attributes."""
    nb = attrs["num_bits"]
    if not 2 <= nb <= 16:
        c.fail(f"num_bits={nb} is out of range; allowed 2..16", "num_bits",
               tf="num_bits must be between 2 and 16, inclusive")
    x = arrays["inputs"]
    range_from = spec.variant.range_from
    if "gradients" in arrays and arrays["gradients"].shape != x.shape:
        g = arrays["gradients"]
        if range_from == ATTR:
            tf = (f"Inputs to operation {spec.name} of type {spec.name} must have the same size and shape.  "
                  f"Input 0: {shape_text(g)} != input 1: {shape_text(x)}")
        else:
            tf = "gradient and input must be the same size"
        c.fail(f"gradients has shape {list(g.shape)} but inputs has shape {list(x.shape)}; they must be equal",
               "gradients", tf=tf)
    if range_from == ATTR:
        lo, hi = flush_f32(attrs["min"]), flush_f32(attrs["max"])  # under DAZ
        args_range(c, spec, lo, hi)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            c.warn(_NOT_FINITE.format(where="", result=_not_finite_result(spec)), "max" if math.isfinite(lo) else "min")
        return
    mn, mx = arrays["min"], arrays["max"]
    if range_from == SCALAR:
        for n, t in (("min", mn), ("max", mx)):
            if t.ndim != 0:
                c.fail(f"{n} must be a scalar (rank 0), got shape {list(t.shape)}", n,
                       tf=f"`{n}` must be rank 0 but is rank {t.ndim}")
        _warn_suspect_range(c, spec, mn, mx)
        return
    # per-channel along the last dimension
    if x.ndim == 0:  # TF 2.21 aborts here (Check failed: d >= 0); the shape function's words
        c.fail("inputs must have rank >= 1 (the channel is the last dimension), got a scalar", "inputs",
               tf="Shape must be at least rank 1 but is rank 0")
    if "gradients" in arrays and x.ndim > 4:
        c.fail(f"inputs has rank {x.ndim}; the per-channel gradient allows rank 1..4", "inputs",
               tf=f"Shape must be at most rank 4 but is rank {x.ndim}")
    d = x.shape[-1]
    for n, t in (("min", mn), ("max", mx)):
        if t.ndim != 1:
            c.fail(f"{n} must be a vector of length {d} (the last dimension), got shape {list(t.shape)}", n,
                   tf=f"`{n}` must be rank 1 but is rank {t.ndim}")
        if t.shape[0] != d:
            c.fail(f"{n} has length {t.shape[0]}, expected {d} (the last dimension of inputs)", n,
                   tf=f"{n} has incorrect size, expected {d} was {t.shape[0]}")
    _warn_suspect_range(c, spec, mn, mx)


_F32_TINY = float(np.finfo(np.float32).tiny)


_NOT_FINITE = "min or max is NaN or infinite{where}: TF (and this op) then {result}"


def _not_finite_result(spec, channels: bool = False) -> str:
    if spec.gradient_of:
        return "passes no gradient (every gradient is zero" + (" there)" if channels else ")")
    return "returns NaN for every element" + (" of those channels" if channels else "")


def _warn_suspect_range(c, spec, mn, mx):
    """TF takes any min/max here, but three answers are almost certainly mistakes (README, behaviour notes):
    min > max quantizes every input to one constant; min == max != 0 divides by a zero scale (NaN); a NaN or
    infinite bound makes the nudged range NaN (every output NaN, every gradient zero)."""
    if mn.ndim == 0 and mx.ndim == 0:  # the common per-tensor case, in plain floats (NumPy's 0-d ufuncs: ~6 us)
        lo, hi = float(mn), float(mx)
        if math.isfinite(lo) and math.isfinite(hi) and not (lo > hi or (lo == hi and abs(lo) >= _F32_TINY)):
            return
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(mn) & np.isfinite(mx)
        reversed_ = np.greater(mn, mx) & finite
        zero_width = np.equal(mn, mx) & (np.abs(mn) >= np.finfo(np.float32).tiny) & finite  # not 0, not flushed
    for bad, what, result in ((reversed_, "min > max", "quantize every input to one constant"),
                              (zero_width, "min == max != 0", "divide by a zero scale (the forward output is NaN)"),
                              (~finite, None, _not_finite_result(spec, np.ndim(finite) > 0))):
        if bad.any():
            n, of = int(bad.sum()), bad.size
            where = "" if bad.ndim == 0 else f" in {n} of {of} channel{'s' * (of != 1)}"
            blame = "min and max" if what else ("min" if not np.isfinite(mn).all() else "max")  # both make a bad range
            c.warn(_NOT_FINITE.format(where=where, result=result) if what is None else
                   f"{what}{where}: TF (and this op) then {result}", blame)


def widened(call):
    """The call's float arrays as float32 (exact for float16/bfloat16): FakeQuant in a 16-bit type is TF's
    float32 arithmetic on the exact value of the input, the result rounded to the storage type."""
    return {n: a.astype(F32) if n != "num_bits" else a for n, a in call.arrays.items()}


def _check_representable_range(c, spec, arrays, attrs):
    """Args in a 16-bit type: the float32 range attributes must be finite in the storage type, or the
    quantisation grid's ends would be infinities there."""
    dt = arrays["inputs"].dtype
    if dtypes.name_of(dt) == "float32":
        return
    top = float(dtypes.get(dt).finfo.max)
    for n in ("min", "max"):
        if abs(attrs[n]) > top:  # inf included; a NaN is the range check's business
            c.fail(f"{n}={fmt_number(attrs[n])} is not representable in {dt.name} (largest finite value "
                   f"{fmt_number(top)}); allowed: |{n}| <= {fmt_number(top)}", n)


def full_check(c, spec, arrays, attrs, *, args_range=args_range_cpu):
    """Every FakeQuant check of a semantics: TF's (``check``) and, for Args in a 16-bit type, the range
    attributes representable in it."""
    check(c, spec, arrays, attrs, args_range=args_range)
    if spec.variant.range_from == ATTR:
        _check_representable_range(c, spec, arrays, attrs)


def params_cpu(spec, attrs, dtype):
    """Args: the whole nudged range, computed on the host in TF's float32 order with FTZ (as the oracle).
    Vars/PerChannel: the quantisation levels; the nudge runs on device from min/max."""
    if spec.variant.range_from != ATTR:
        return quant_level_params(attrs)
    n = nudge(np.float32(attrs["min"]), np.float32(attrs["max"]), attrs["num_bits"], attrs["narrow_range"])
    return [(name, "f32", np.float32(getattr(n, name))) for name in ("nudged_min", "nudged_max", "scale", "inv", "qzero")]


def params_xla(spec, attrs, dtype):
    """Args: the nudged range as XLA has it, folded by TF at compile time (forward) or by CpuNudge (gradient)."""
    if spec.variant.range_from != ATTR:
        return quant_level_params(attrs)
    mn, mx, nb, narrow = attrs["min"], attrs["max"], attrs["num_bits"], attrs["narrow_range"]
    if spec.gradient_of:
        n, names = xla.nudge_host(mn, mx, nb, narrow), ("nudged_min", "nudged_max")
    else:
        n, names = xla.nudge_folded(mn, mx, nb, narrow), ("nudged_min", "nudged_max", "scale", "inv")
    return [(name, "f32", np.float32(getattr(n, name))) for name in names]


def quant_level_params(attrs):
    quant_min, quant_max = quant_levels(attrs["num_bits"], attrs["narrow_range"])
    return [("quant_min", "f32", np.float32(quant_min)), ("quant_max", "f32", np.float32(quant_max))]


# The arithmetic each reference uses where they differ (templates/fake_quant*.mlir.j2 read k.arith):
#   nudge       "kernel" (TF's Nudge) or "xla" (XlaNudge), templates/_nudge.mlir.j2
#   clamp       "min_max" (Eigen's cwiseMin then cwiseMax) or "max_min" (XLA's max then min)
#   mask        gradients: "multiply" by the 0/1 mask (TF's kernel) or "select" (XLA: a masked element is +0)
#   zero_range  "passes_zeros" (TF's kernel: min == max == 0 gives zeros, the gradient passes) or "none"
KERNEL_ARITHMETIC = {"nudge": "kernel", "clamp": "min_max", "mask": "multiply", "zero_range": "passes_zeros"}
XLA_ARITHMETIC = {"nudge": "xla", "clamp": "max_min", "mask": "select", "zero_range": "none"}


def rules(oracle_cpu, oracle_xla, template: str, xla_fma: bool = False) -> dict:
    """The two semantics of a FakeQuant family: TF's CPU kernels and its XLA lowering, in float32 and, by
    the stated definition, float16/bfloat16 (README), on one template. ``xla_fma``: XLA rounds the family's
    multiply-adds once."""
    return {"tf-cpu": Rules(oracle_cpu, template, WIDE_DTYPES, check=full_check, params=params_cpu,
                            arithmetic=KERNEL_ARITHMETIC),
            "tf-xla": Rules(oracle_xla, template, WIDE_DTYPES,
                            check=functools.partial(full_check, args_range=args_range_xla), params=params_xla,
                            fused_multiply_add=lambda spec, attrs, dtype: xla_fma, arithmetic=XLA_ARITHMETIC)}


class FakeQuantBase(Family):
    """What the forward ops and their gradients share: checks, channel layout, nudge parameters, samples."""

    def wrong_dtype_words(self, spec, input_name, dtype):
        if spec.variant.range_from == ATTR:  # Args: conversion of a fixed-float input
            return f"Tensor conversion requested dtype float32 for Tensor with dtype {dtype.name}"
        index = spec.input_names.index(input_name)  # Vars/PerChannel: fixed float inputs
        return (f"cannot compute {spec.name} as input #{index}(zero-based) was expected to be a "
                f"float tensor but is a {dtypes.tf_name(dtype.name)} tensor")

    def channel_axis(self, spec, attrs, rank):
        return rank - 1 if spec.variant.range_from == CHANNEL else None

    def layout(self, spec, attrs):
        return LAST if spec.variant.range_from == CHANNEL else FLAT

    def template_vars(self, spec, attrs):
        # Vars/PerChannel nudge on device from tensors and answer 0 where min == max == 0.
        return {"range_attrs": spec.variant.range_from == ATTR, "divides": spec.variant.divides}

    def random_calls(self, spec, attrs, x, rng, special):
        shape, dt = x.shape, x.dtype
        d = shape[-1]
        calls = []
        for nb, narrow in ((8, False), (4, True), (16, False)):
            xi = special(x.copy(), 0.01)
            kw = {"inputs": xi, "num_bits": nb, "narrow_range": narrow}
            mn, mx = -float(rng.random() * 3 + 0.01), float(rng.random() * 3 + 0.01)
            if spec.variant.range_from == ATTR:
                kw.update(min=mn, max=mx)
            elif spec.variant.range_from == SCALAR:
                kw.update(min=np.asarray(mn, dt), max=np.asarray(mx, dt))
            else:
                mnv = (-rng.random(d) * 3).astype(dt)
                mxv = (rng.random(d) * 3).astype(dt)
                mnv[0] = mxv[0] = 0.0  # the min == max == 0 special case
                kw.update(min=mnv, max=mxv)
            if "gradients" in spec.input_names:
                kw["gradients"] = rng.integers(-8, 9, shape).astype(dt)
            calls.append(kw)
        return calls


def oracle_cpu(call):
    arrays, v = widened(call), call.spec.variant
    return (fake_quant(arrays["inputs"], nudged_params(call, arrays), divides=v.divides,
                       zero_special=v.range_from != ATTR).astype(call.dtype),)


def oracle_xla(call):
    arrays = widened(call)
    return (xla.fake_quant(arrays["inputs"], xla.nudged(call, arrays),
                           nan_passes=call.spec.variant.range_from == ATTR).astype(call.dtype),)


class FakeQuant(FakeQuantBase):
    name = "fake_quant"
    rules_by_semantics = rules(oracle_cpu, oracle_xla, "fake_quant.mlir.j2", xla_fma=True)

    def grid_step(self, call):
        return nudged_params(call, widened(call)).scale


FAMILY = FakeQuant()

SPECS = (
    OpSpec("FakeQuantWithMinMaxArgs", FAMILY, (data("inputs"),), ARGS_ATTRS, (result("outputs"),), DTYPES,
           "Fake-quantise with a nudged range from float attrs; multiplies by the inverse scale.",
           variant=Variant(ATTR), tf_wrappers=("fake_quant_with_min_max_args",)),
    OpSpec("FakeQuantWithMinMaxVars", FAMILY, VARS_INPUTS, VARS_ATTRS, (result("outputs"),), DTYPES,
           "Fake-quantise with scalar min/max tensors; divides by the scale (unlike Args/PerChannel).",
           variant=Variant(SCALAR, divides=True), tf_wrappers=("fake_quant_with_min_max_vars",)),
    OpSpec("FakeQuantWithMinMaxVarsPerChannel", FAMILY, VARS_INPUTS, VARS_ATTRS, (result("outputs"),), DTYPES,
           "Per-channel fake-quant along the LAST dimension; min/max of shape [d].",
           variant=Variant(CHANNEL), tf_wrappers=("fake_quant_with_min_max_vars_per_channel",)),
)
