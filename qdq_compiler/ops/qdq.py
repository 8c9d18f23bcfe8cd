"""QuantizeAndDequantize V1..V4 (forward): the specs and every rule of the family.

TF 2.21's CPU kernel (spec sections 2 and 5.1): a range (given, or the data's min/max), the scale chosen
from the side that fits (ComputeQuantizationRange), clamp when given, scale, round, multiply by the
inverse scale. V1 takes the range from float attributes, V3 takes num_bits as an int32 tensor (and
reports errors in its own words), V2 and V4 are the same kernel.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..errors import Checker, QDQError, QDQTypeError, axes_text, fmt_number, shape_text
from ..numerics import flush, ftz_div, ftz_mul, int_range, int_to, three_d
from . import qdq_xla
from .family import Family
from .rules import Rules
from .spec import Attr, OpSpec, attr, data, per_channel, result, scalar

ROUND_MODES = ("HALF_TO_EVEN", "HALF_UP")
DTYPES = ("float32", "float64")                              # TF 2.21's CPU kernels
XLA_DTYPES = ("float16", "bfloat16", "float32", "float64")   # its XLA lowering (and the op definition)


def cpu_dtype_hint(spec, dtype: str) -> str:
    """tf-cpu: the CPU kernels register float and double only; XLA's lowering takes the 16-bit types."""
    if dtype in XLA_DTYPES:
        return (f"TF 2.21's CPU kernels have no {dtypes.tf_name(dtype)} kernel (NotFoundError); its XLA lowering "
                f"runs {dtype}: pass semantics='tf-xla'")
    return ""


@dataclass(frozen=True)
class Variant:
    range_attrs: bool = False      # V1: the given range is a pair of float attributes
    num_bits_tensor: bool = False  # V3: num_bits is an int32 tensor input (its range is computed on device)
    masked_gradient: bool = False  # V4: TF registers the masked V4Grad as its gradient (V2: straight-through)


SIGNED = attr("signed_input", bool, True, doc="signed integer range [-2^(b-1), 2^(b-1)-1], else [0, 2^b-1]")
NUM_BITS = attr("num_bits", int, 8, doc="1..61 when signed, 1..62 when unsigned")
NARROW = attr("narrow_range", bool, False, doc="drop the lowest quantisation level")
AXIS = attr("axis", int, -1, doc="-1 = per-tensor, k >= 0 = per-channel along dimension k")
ROUND = attr("round_mode", str, "HALF_TO_EVEN", ROUND_MODES, "rounding of the scaled value")


def range_given(default: bool) -> Attr:
    return attr("range_given", bool, default, doc="take the range from input_min/input_max, else from the data")


TENSOR_INPUTS = (data("input"), per_channel("input_min", "min", -1.5), per_channel("input_max", "max", 2.0))
V2_ATTRS = (SIGNED, NUM_BITS, range_given(False), ROUND, NARROW, AXIS)


# -- the kernel (spec 2.3, 2.4) ------------------------------------------------------------------------


def compute_range(qmin: np.ndarray, qmax: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Scale selection of spec 2.3 (ComputeQuantizationRange), vectorised over channels.

    Returns the adjusted (lo, hi), the scale and the separately computed inverse scale.
    """
    big = np.finfo(lo.dtype).max
    with np.errstate(all="ignore"):
        s_lo = np.where(ftz_mul(qmin, lo) > 0, ftz_div(qmin, lo), big)
        s_hi = np.where(ftz_mul(qmax, hi) > 0, ftz_div(qmax, hi), big)
        use_lo = s_lo < s_hi  # strict: ties go to the max side
        scale = np.where(use_lo, s_lo, s_hi)
        inv = np.where(use_lo, ftz_div(lo, qmin), ftz_div(hi, qmax))
        new_hi = np.where(use_lo, ftz_mul(qmax, inv), hi)
        new_lo = np.where(use_lo, lo, ftz_mul(qmin, inv))
    return new_lo.astype(lo.dtype), new_hi.astype(lo.dtype), scale.astype(lo.dtype), inv.astype(lo.dtype)


def quantize(x, lo, hi, scale, inv, *, clamp: bool, half_up: bool):
    """The element-wise step of spec 2.4: clamp (given range only), scale, round, multiply by inv."""
    T = x.dtype
    with np.errstate(all="ignore"):
        if clamp:
            t = np.where(hi < x, hi, x)      # Eigen cwiseMin/cwiseMax: NaN passes, ties keep x
            x = np.where(t < lo, lo, t)
        v = ftz_mul(x, scale)
        r = np.floor(v + T.type(0.5)) if half_up else np.rint(v)
        return ftz_mul(r, inv).astype(T)


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


def wrapper_axis(input, axis):
    """TF's wrapper axis rule: None -> -1 (per-tensor); a negative axis counts from the end."""
    if axis is None:
        return -1
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise QDQTypeError(f"axis={axis!r} must be an int or None", arg="axis")
    axis = int(axis)
    if axis < 0:
        ndim = np.ndim(input)
        if ndim == 0:
            raise QDQError(f"axis={axis} needs an input of rank >= 1 (the input is a scalar)", arg="axis",
                           tf_message="input should have known rank to use negative axis.")
        axis %= ndim
    return axis


# -- checks shared with the gradient (spec 5.1) ----------------------------------------------------------


def check_axis_at_least_minus_one(c: Checker, axis: int, rank: int):
    if axis < -1:
        c.fail(f"axis={axis} is not allowed; allowed: {axes_text(rank)}", "axis",
               tf=f"Axis must be at least -1. Found {axis}")


def check_given_range(c: Checker, mn, mx, names=("input_min", "input_max")):
    lo, hi = flush(np.asarray(mn)).item(), flush(np.asarray(mx)).item()  # TF compares under DAZ
    if not lo <= hi:
        c.fail(f"invalid range: {names[0]}={fmt_number(lo)} > {names[1]}={fmt_number(hi)}; need {names[0]} <= "
               f"{names[1]}", names[0], tf=f"Invalid range: input_min {fmt_number(lo)} > input_max {fmt_number(hi)}")


def _check_num_bits(c: Checker, num_bits: int, signed: bool, backticks: bool):
    limit = 61 if signed else 62
    if not 0 < num_bits <= limit:
        s = "`signed_input_`" if backticks else "signed_input_"
        c.fail(f"num_bits={num_bits} is out of range; allowed 1..{limit} when signed_input={signed}", "num_bits",
               tf=f"num_bits is out of range: {num_bits} with {s} {int(signed)}")


def _check_range_tensors(c: Checker, x, mn, mx, axis: int, names=("input_min", "input_max")):
    """The shape-function checks: min/max rank 0 per-tensor, rank 1 of length dim(axis) per-channel."""
    want = 0 if axis == -1 else 1
    for n, t in zip(names, (mn, mx)):
        if t.ndim != want:
            what = "a scalar (rank 0)" if want == 0 else f"a vector of length {x.shape[axis]} (rank 1)"
            c.fail(f"{n} has shape {list(t.shape)}; with axis={axis} it must be {what}", n,
                   tf=f"Shape must be rank {want} but is rank {t.ndim}")
    if want == 1:
        if mn.shape != mx.shape:
            c.fail(f"{names[0]} has shape {list(mn.shape)} but {names[1]} has shape {list(mx.shape)}; they must be "
                   f"equal", names[1], tf=f"Dimension 0 in both shapes must be equal, but are {mx.shape[0]} and "
                                          f"{mn.shape[0]}. Shapes are {shape_text(mx)} and {shape_text(mn)}.")
        for n, t in zip(names, (mn, mx)):
            if t.shape[0] != x.shape[axis]:
                c.fail(f"{n} has length {t.shape[0]} but dimension {axis} of the input is {x.shape[axis]}", n,
                       tf=f"Dimensions must be equal, but are {t.shape[0]} and {x.shape[axis]}")


def check(c: Checker, spec, arrays, attrs, *, value_checks: bool = True):
    """The QDQ checks (spec 5.1). ``value_checks``: the CPU kernels check V3's num_bits value and that a
    given per-tensor input_min <= input_max; XLA's lowering checks neither."""
    v: Variant = spec.variant
    x = arrays["input"]
    signed = attrs["signed_input"]
    if v.num_bits_tensor:
        nb = arrays["num_bits"]
        if nb.ndim != 0:
            c.fail(f"num_bits must be a scalar int32 tensor, got shape {list(nb.shape)}", "num_bits",
                   tf=f"Invalid shape. The `num_bits` tensor should be a scalar. Got dimensions: {nb.ndim}")
        if value_checks:
            _check_num_bits(c, int(nb), signed, backticks=True)
    else:
        _check_num_bits(c, attrs["num_bits"], signed, backticks=False)
    if signed and attrs.get("narrow_range", False) and (int(nb) if v.num_bits_tensor else attrs["num_bits"]) == 1:
        c.warn("signed num_bits=1 with narrow_range leaves the single level 0: TF (and this op) then "
               "return -inf, NaN and +inf", "num_bits")
    if v.range_attrs:
        if attrs["range_given"]:
            check_given_range(c, np.float32(attrs["input_min"]), np.float32(attrs["input_max"]))
        return
    axis = attrs["axis"]
    rank = x.ndim
    if v.num_bits_tensor:  # V3 reports axis errors in its own words
        if axis >= rank or axis < -rank:
            c.fail(f"axis={axis} is out of range for an input of rank {rank}; allowed: {axes_text(rank)}", "axis",
                   tf=f"Axis requested is larger than input dimensions. Axis: {axis} Input Dimensions: {rank}")
        if axis < -1:  # TF 2.21 aborts (CHECK d >= 0); the shape function's words
            c.fail(f"axis={axis} is not allowed; allowed: {axes_text(rank)}", "axis",
                   tf=f"axis should be at least -1, got {axis}")
    else:
        check_axis_at_least_minus_one(c, axis, rank)
        if axis >= rank:
            c.fail(f"axis={axis} is out of range for an input of rank {rank}; allowed: {axes_text(rank)}", "axis",
                   tf=f"Shape must be at least rank {axis + 1} but is rank {rank}")
    mn, mx = arrays["input_min"], arrays["input_max"]
    if attrs["range_given"] and axis == -1 and not v.num_bits_tensor:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.ndim != 0:
                c.fail(f"{n} must be a scalar when axis=-1, got shape {list(t.shape)}", n,
                       tf=f"{n} must be a scalar.")
    if attrs["range_given"] and axis >= 0:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.ndim != 1:
                c.fail(f"{n} must be a vector of length {x.shape[axis]} when axis={axis}, got shape "
                       f"{list(t.shape)}", n, tf=f"Shape must be rank 1 for {n}_tensor when the axis is specified")
            if t.shape[0] != x.shape[axis]:
                c.fail(f"{n} has length {t.shape[0]}, expected {x.shape[axis]} (dimension {axis} of the input)", n,
                       tf=f"{n}_tensor has incorrect size, was {t.shape[0]} expected {x.shape[axis]} to match "
                          f"dim {axis} of the input {shape_text(t)}")
    if v.num_bits_tensor and attrs["range_given"] and axis == -1:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.size != 1:  # TF 2.21 aborts: Check failed: 1 == NumElements()
                c.fail(f"{n} must be a scalar when axis=-1, got shape {list(t.shape)}", n,
                       tf=f"Shape must be rank 0 but is rank {t.ndim}")
    _check_range_tensors(c, x, mn, mx, axis)
    if attrs["range_given"] and axis == -1 and value_checks:
        check_given_range(c, mn, mx)


# -- the rules of each semantics -------------------------------------------------------------------------


def _num_bits(call) -> int:
    return int(call.arrays["num_bits"]) if call.spec.variant.num_bits_tensor else call.attrs["num_bits"]


def oracle_cpu(call):
    """TF's CPU kernel (spec 2)."""
    a, arr, x = call.attrs, call.arrays, call.arrays["input"]
    if call.spec.variant.range_attrs:
        lo, hi = np.asarray(a["input_min"], np.float32), np.asarray(a["input_max"], np.float32)
    else:
        lo, hi = arr["input_min"], arr["input_max"]
    return (qdq_forward(x, lo.astype(x.dtype), hi.astype(x.dtype), signed=a["signed_input"], num_bits=_num_bits(call),
                        narrow=a.get("narrow_range", False), range_given=a["range_given"],
                        half_up=a.get("round_mode") == "HALF_UP", axis=call.per_channel_axis()),)


def oracle_xla(call):
    """TF's XLA lowering (qdq_xla.py): its order of operations, in the compute type of a 16-bit dtype."""
    a, arr = call.attrs, call.arrays
    return (qdq_xla.forward(arr["input"], arr["input_min"], arr["input_max"], v3=call.spec.variant.num_bits_tensor,
                            num_bits=_num_bits(call), signed=a["signed_input"], narrow=a.get("narrow_range", False),
                            range_given=a["range_given"], half_up=a.get("round_mode") == "HALF_UP",
                            axis=call.per_channel_axis()),)


def v3_flags(attrs, int_type: str) -> list:
    """V3 computes its range on device from the num_bits tensor; its signedness and narrowness travel as 0/1
    runtime parameters of ``int_type``, so one program serves all four."""
    np_int = np.int64 if int_type == "i64" else np.int32
    return [("signed_i", int_type, np_int(bool(attrs["signed_input"]))),
            ("narrow_i", int_type, np_int(bool(attrs.get("narrow_range", False))))]


def params_cpu(spec, attrs, dtype):
    """The integer range converted to T; V1 with a given range also its float attrs in T; V3 its flags."""
    if spec.variant.num_bits_tensor:
        return v3_flags(attrs, "i64")
    T, t = np.dtype(dtype), dtypes.get(dtype).mlir
    qmin, qmax = int_range(attrs["signed_input"], attrs["num_bits"], attrs.get("narrow_range", False))
    out = [("qmin", t, int_to(qmin, T)[()]), ("qmax", t, int_to(qmax, T)[()])]
    if spec.variant.range_attrs and attrs["range_given"]:
        out += [("range_lo", t, np.float32(attrs["input_min"]).astype(T)),
                ("range_hi", t, np.float32(attrs["input_max"]).astype(T))]
    return out


def params_xla(spec, attrs, dtype):
    """V2/V4: XLA's folded integer range and the reciprocals of its ends, each rounded as XLA rounds them,
    in the compute type. V3: its flags, in the integer of the compute type's width."""
    if spec.variant.num_bits_tensor:
        return v3_flags(attrs, dtypes.get(dtypes.get(dtype).compute).int_mlir)
    A = qdq_xla.arith(dtypes.get(dtype).np)
    ct = dtypes.get(dtype).compute
    qmin, qmax = qdq_xla._int_range_const(A, attrs["signed_input"], attrs["num_bits"], attrs.get("narrow_range", False))
    t = dtypes.get(ct).mlir
    with np.errstate(all="ignore"):
        vals = (qmin, qmax, A.recip_const(qmin), A.recip_const(qmax))
    return [(n, t, np.asarray(v, ct)[()]) for n, v in zip(("qmin", "qmax", "recip_lo", "recip_hi"), vals)]


def xla_unsupported(spec) -> str:
    if spec.variant.range_attrs:
        return ("QuantizeAndDequantize (V1) has no XLA lowering in TF 2.21; allowed: semantics='tf-cpu' "
                "(or QuantizeAndDequantizeV2 with semantics='tf-xla')")
    return ""


def xla_fma(spec, attrs, dtype: str) -> bool:
    """XLA fuses HALF_UP's x * scale + 0.5 in float32/float64 (a 16-bit type rounds the product first)."""
    return attrs.get("round_mode") == "HALF_UP" and not dtypes.get(dtype).narrow


# The arithmetic each reference uses where they differ (templates/qdq.mlir.j2 reads k.arith):
#   range_nan  a range from the data: "poison" (TF's CPU min/max: a NaN wins) or "skip" (XLA's reduce)
#   pow2       V3's 2^k: "integer_shift" (TF: int64 shifts) or "exponent_bits" (XLA's Pow: ldexp from bits)
#   inverse    lo / q: "divide", or "host_reciprocal" (XLA: lo * (1 / q), the reciprocal folded on the host)
#   clamp      "min_max" (Eigen's cwiseMin then cwiseMax) or "max_min" (XLA's clamp: a NaN becomes lo')
KERNEL_ARITHMETIC = {"range_nan": "poison", "pow2": "integer_shift", "inverse": "divide", "clamp": "min_max"}
XLA_ARITHMETIC = {"range_nan": "skip", "pow2": "exponent_bits", "inverse": "host_reciprocal", "clamp": "max_min"}

RULES = {
    "tf-cpu": Rules(oracle_cpu, "qdq.mlir.j2", DTYPES, check=check, dtype_hint=cpu_dtype_hint, params=params_cpu,
                    arithmetic=KERNEL_ARITHMETIC),
    # XLA checks neither V3's num_bits value nor that input_min <= input_max.
    "tf-xla": Rules(oracle_xla, "qdq.mlir.j2", XLA_DTYPES, check=functools.partial(check, value_checks=False),
                    unsupported=xla_unsupported, params=params_xla, fused_multiply_add=xla_fma,
                    arithmetic=XLA_ARITHMETIC, round_each_op=True),
}



class QuantizeAndDequantize(Family):
    name = "qdq"
    rules_by_semantics = RULES

    def reduces(self, spec, attrs):
        return not attrs.get("range_given", True)

    def grid_step(self, call):
        """1 / scale of the CPU kernel's range, per element."""
        x = call.data
        if x.size == 0:
            return None
        axis = call.per_channel_axis()
        x3 = three_d(x.astype(np.float64), axis)
        a = call.attrs
        if a["range_given"]:
            lo = np.asarray(a["input_min"] if call.spec.variant.range_attrs else call.arrays["input_min"], np.float64)
            hi = np.asarray(a["input_max"] if call.spec.variant.range_attrs else call.arrays["input_max"], np.float64)
            lo, hi = lo.reshape(1, -1, 1), hi.reshape(1, -1, 1)
        else:
            lo, hi = x3.min(axis=(0, 2), keepdims=True), x3.max(axis=(0, 2), keepdims=True)
        nb = int(call.arrays["num_bits"]) if call.spec.variant.num_bits_tensor else a["num_bits"]
        qmin, qmax = int_range(a["signed_input"], nb, a.get("narrow_range", False))
        inv = compute_range(np.float64(qmin), np.float64(qmax), lo, hi)[3]
        return np.broadcast_to(inv, x3.shape).reshape(x.shape)

    def template_vars(self, spec, attrs):
        return {"range_attrs": spec.variant.range_attrs, "num_bits_tensor": spec.variant.num_bits_tensor}

    def matrix_variants(self, spec):
        rms = ROUND_MODES if "round_mode" in spec.attr_map else (None,)
        axes = (-1, 1) if spec.has_axis else (None,)
        out = []
        for rg, rm, ax in itertools.product((True, False), rms, axes):
            a = {"range_given": rg}
            if rm:
                a["round_mode"] = rm
            if ax is not None:
                a["axis"] = ax
            out.append(a)
        return out

    def random_calls(self, spec, attrs, x, rng, special):
        dt, shape = x.dtype, x.shape
        axis = attrs.get("axis", -1)
        pshape = () if axis == -1 else (shape[axis],)
        calls = []
        for i, (nb, signed, narrow) in enumerate([(8, True, False), (4, False, False), (3, True, True),
                                                   (16, True, False)]):
            lo = (-rng.random(pshape) * 2 - 0.1).astype(dt)
            hi = (rng.random(pshape) * 2 + 0.1).astype(dt)
            xi = x.copy()
            if attrs.get("range_given") is False and i % 2 == 0:
                xi = special(xi, 0.0)
                xi[np.isnan(xi) | np.isinf(xi)] = 0.0  # NaN/inf with a data range: covered by goldens
            else:
                xi = special(xi, 2.0 / 255)
            kw = {"input": xi, "input_min": lo, "input_max": hi}
            if spec.variant.range_attrs:  # V1: the range is a pair of float attributes
                kw.update(input_min=float(np.float32(lo)), input_max=float(np.float32(hi)))
            kw.update(attrs)
            kw["signed_input"] = signed
            kw["num_bits"] = np.int32(nb) if spec.variant.num_bits_tensor else nb
            if "narrow_range" in spec.attr_map:
                kw["narrow_range"] = narrow
            calls.append(kw)
        return calls


FAMILY = QuantizeAndDequantize()

SPECS = (
    OpSpec("QuantizeAndDequantize", FAMILY, (data("input"),),
           (SIGNED, NUM_BITS, range_given(False),
            attr("input_min", float, 0.0, doc="range minimum (float attr)"),
            attr("input_max", float, 0.0, doc="range maximum (float attr)")),
           (result("output"),), DTYPES,
           "V1: range from float attrs, HALF_TO_EVEN, per-tensor (removed from TF graphs at GraphDef 22).",
           variant=Variant(range_attrs=True)),
    OpSpec("QuantizeAndDequantizeV2", FAMILY, TENSOR_INPUTS, V2_ATTRS, (result("output"),), DTYPES,
           "V2: range from tensors or data, round_mode attr, optional per-channel axis.",
           variant=Variant(), tf_wrappers=("quantize_and_dequantize",)),
    OpSpec("QuantizeAndDequantizeV3", FAMILY, TENSOR_INPUTS + (scalar("num_bits", "num_bits", "int32", 8),),
           (SIGNED, range_given(True), NARROW, AXIS), (result("output"),), DTYPES,
           "V3: num_bits as an int32 scalar tensor, always HALF_TO_EVEN.",
           variant=Variant(num_bits_tensor=True)),
    OpSpec("QuantizeAndDequantizeV4", FAMILY, TENSOR_INPUTS, V2_ATTRS, (result("output"),), DTYPES,
           "V4: the V2 kernel; differs only in its registered (masked) gradient.",
           variant=Variant(masked_gradient=True), tf_wrappers=("quantize_and_dequantize_v2",)),
)
