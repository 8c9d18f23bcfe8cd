"""ONNX's QuantizeLinear and DequantizeLinear (opset 28, onnx 1.23.2) and the pair as one program, into and out
of every storage type of qdq_compiler/storage.py, as the ``onnx`` package's reference implementation computes
them (semantics ``onnx``; its behaviours, measured, are in tools/goldens/onnx/README.md).

The reference (onnx/reference/ops/op_quantize_linear.py, op_dequantize_linear.py):
  QuantizeLinear    q = x / y_scale in NumPy's promotion of their types (one 16-bit type: rounded to it; else
                    float32), or in ``precision`` (opset 23: x and the scale rounded to it first);
                    integers: the text's saturate(round(q) + zero point): +inf and huge quotients give the
                    type's maximum, -inf its minimum, NaN its minimum (onnxruntime's; the text leaves NaN
                    open). The reference's ``np.rint(q).astype(int32)`` is undefined there (x86: INT32_MIN,
                    so +inf gave the minimum): its goldens mark those cases and hold the text's answer;
                    float8: saturate=1 clips q to the type's largest finite value (inf too, NaN stays) and
                    converts, saturate=0 converts (overflow to inf or NaN); the zero point is not added;
                    float4/float6: q + zero point in float32, converted (always saturating; NaN -> the sign
                    bit alone).
  DequantizeLinear  integers and float6: (float32(x) - zero point) * scale in float32; float8 and float4:
                    float32(x) * scale (the zero point ignored; float8's must be 0); then ``output_dtype``
                    (opset 23; default the scale's type). int32 x: float32(x) * scale (no zero point).
Scales are float32, float16, bfloat16 (of x's type or not: opset 23) or float8_e8m0fnu (opset 24).
A per-tensor scale is 0-d or has one element; a per-axis one is 1-D along ``axis`` (negative counts from the
end); the zero point has the scale's shape and the storage type.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes, storage
from ..errors import QDQError
from . import onnx_qdq_args
from .family import AXIS, FLAT, Family
from .onnx_qdq_args import FLOATS, SCALE_DTYPES
from .rules import Rules
from .spec import BLOCKS, DATA, RANGE, OpSpec, attr, data, fixed, result

F32 = np.float32
DTYPES = ("float32", "float16", "bfloat16")
# The storage types each op takes (opset 28's T3 / T1): DequantizeLinear also takes int32 (a bias, an accumulator).
QUANTIZED = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2", "float8_e4m3fn",
             "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
DQ_TYPES = QUANTIZED + ("int32",)
FLOAT8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")

AXIS_ATTR = attr("axis", int, 1, doc="the quantization axis of a per-axis scale (negative: from the end)")
SATURATE = attr("saturate", int, 1, doc="float8 only: 1 clips beyond the largest value, 0 gives inf or NaN")
OUTPUT_DTYPE = attr("output_dtype", str, "uint8", QUANTIZED,
                    doc="the storage type (set from y_zero_point, or the output_dtype given; default uint8)")
X_DTYPE = attr("x_dtype", str, "uint8", DQ_TYPES, doc="set from x: the storage type it holds", internal=True)
GRANULARITIES = ("tensor", "axis", "block")
GRANULARITY = attr("granularity", str, "tensor", GRANULARITIES,
                   doc="set from the scale: one element per tensor, a vector along axis, or blocks (block_size > 0)",
                   internal=True)
TINY_SCALE = attr("tiny_scale", bool, False,
                  doc="set from the scale: some |y_scale| < 2^-100 (where FTZ targets divide x * 2^32, built exactly)",
                  internal=True)
SCALE_DTYPE = attr("scale_dtype", str, "", ("",) + SCALE_DTYPES,
                   doc="set from the scale: its type where it is not the op's (\"\"); its values cross as float32",
                   internal=True)
PRECISION = attr("precision", str, "", ("",) + FLOATS, doc="opset 23: the type x and the scale are divided in")
DQ_OUTPUT_DTYPE = attr("output_dtype", str, "", ("",) + FLOATS,
                       doc="opset 23: the result's type (default the scale's); it is the op's element type T")
BLOCK_SIZE = attr("block_size", int, 0, doc="blocked quantization: the elements along axis one scale covers (0: none)")
NO_ZERO_POINT = attr("no_zero_point", bool, False,
                     doc="set when no zero point is given to a float6 dequantization: none is subtracted (-0 stays -0)",
                     internal=True)


@dataclass(frozen=True)
class Variant:
    quantize: bool = True       # takes float data and a storage type (QuantizeLinear, the pair)
    dequantize: bool = False    # returns floats (DequantizeLinear, the pair)


def storage_of(spec, attrs) -> storage.StorageType:
    return storage.get(attrs["output_dtype"] if spec.variant.quantize else attrs["x_dtype"])


# -- the NumPy reference -----------------------------------------------------------------------------------


# onnxruntime 1.32's float8 conversion without saturation departs from round-to-nearest in one window each
# (measured, tools/goldens/onnx_reference.py; the onnx reference and ml_dtypes give NaN and inf there):
# |q| in [lo, hi) becomes the largest finite value ("max") or NaN ("nan").
ORT_FLOAT8_WINDOWS = {"float8_e4m3fn": (480.0, 496.0, "max"), "float8_e5m2": (61440.0, 65536.0, "nan")}


def quotient_dtype(element: str, scale_dtype: str, precision: str, arith) -> str:
    """The type QuantizeLinear divides in: ``precision`` where given (x and the scale rounded to it first);
    otherwise the onnx reference's NumPy promotion of x's and the scale's types (one 16-bit type: that type; else
    float32), or onnxruntime's: the scale's type (x cast to it)."""
    if precision:
        return precision
    if arith["quotient_in_scale_type"]:
        return scale_dtype or element
    return element if scale_dtype in ("", element) else "float32"


def quantize(x, scale, zp_codes, t: storage.StorageType, saturate: bool, arith=None, quotient="float32"):
    """Codes (int64) of QuantizeLinear: x and scale (float32 values of their types), broadcastable; ``arith``
    the rules' arithmetic policy (None: the onnx reference's); ``quotient``: the type x / scale is computed in
    (quotient_dtype), x rounded to it first, the quotient after."""
    arith = arith or ONNX_ARITH
    narrow = quotient != "float32"
    with np.errstate(all="ignore"):
        xf = x.astype(F32)
        if narrow:
            xf = xf.astype(dtypes.np_of(quotient)).astype(F32)
        q = (xf / scale.astype(F32)).astype(F32)
        if narrow:
            q = q.astype(dtypes.np_of(quotient)).astype(F32)
        if not t.is_float:
            r = np.rint(q.astype(np.float64))
            zp = storage.decode(zp_codes, t).astype(np.int64)
            # the text's saturate(round(q) + zp): clipped in float (+inf and huge quotients: the maximum, -inf the
            # minimum), NaN the minimum (the text leaves it open: onnxruntime's answer). The onnx reference's
            # np.rint(q).astype(int32) is undefined there (x86: INT32_MIN); its goldens mark those cases.
            r = np.where(np.isnan(r), -np.inf, r)
            return storage.encode(np.clip(np.clip(r, -2.0 ** 24, 2.0 ** 24).astype(np.int64) + zp, t.min, t.max), t)
        if t.name in FLOAT8:
            codes = storage.encode(q, t, saturate=bool(saturate))
            window = arith["float8_windows"].get(t.name)
            if window and not saturate:
                lo, hi, what = window
                inside = (np.abs(q) >= lo) & (np.abs(q) < hi)
                sign = (q.view(np.uint32) >> 31).astype(np.int64) << (t.bits - 1)
                codes = np.where(inside, (t.max_code if what == "max" else t.nan_code) | sign, codes)
            return codes
        # float4/float6: q + zero point in float32 (NumPy promotes a 16-bit quotient plus an ml_dtypes zero point)
        return storage.encode((q + storage.decode(zp_codes, t)).astype(F32), t)


def dequantize(codes, scale, zp_codes, t: storage.StorageType, out_dtype, no_zero_point=False):
    """DequantizeLinear's values in ``out_dtype``: (x - zero point) * scale in float32 (no zero point given: x *
    scale; -0 - -0 would be +0)."""
    with np.errstate(all="ignore"):
        v = storage.decode(codes, t)
        if t.name not in FLOAT8 and t.name != "float4_e2m1fn" and not no_zero_point:
            v = (v - storage.decode(zp_codes, t)).astype(F32)
        return (v * scale.astype(F32)).astype(F32).astype(out_dtype)


def _broadcast_param(a, x_shape, axis, block_size):
    """A scale or zero point broadcastable to the data: 0-d as it is, a vector along ``axis``, blocks repeated
    ``block_size`` times along it and cut to the data's extent (a ragged last block)."""
    if a.ndim == 0:
        return a
    if block_size:
        return np.repeat(a, block_size, axis=axis).take(range(x_shape[axis]), axis=axis)
    shape = [1] * len(x_shape)
    shape[axis] = a.size
    return a.reshape(shape)


def oracle(call):
    spec, a, arr = call.spec, call.attrs, call.arrays
    t = storage_of(spec, a)
    if spec.variant.quantize:
        x, scale, zp = arr["x"], arr["y_scale"], arr["y_zero_point"]
    else:
        x, scale, zp = arr["x"], arr["x_scale"], arr["x_zero_point"]
    axis = a["axis"] if a["granularity"] != "tensor" else 0
    bs = a["block_size"] if a["granularity"] == "block" else 0
    scale_b = _broadcast_param(scale, x.shape, axis, bs)
    zp_codes = _broadcast_param(storage.to_codes(zp).astype(np.int64), x.shape, axis, bs)
    if spec.variant.quantize:
        arith = spec.family.rules(call.semantics).arithmetic
        codes = quantize(x, scale_b, zp_codes, t, a["saturate"], arith,
                         quotient_dtype(call.dtype_name, a["scale_dtype"], a["precision"], arith))
        if not spec.variant.dequantize:
            return (storage.from_codes(codes.astype(t.code_dtype), t.np),)
        return (dequantize(codes, scale_b, zp_codes, t, x.dtype, a["no_zero_point"]),)
    x_codes = storage.to_codes(x).astype(np.int64)
    return (dequantize(x_codes, scale_b, zp_codes, t, call.dtype, a["no_zero_point"]),)


# -- checks, in ONNX's words ------------------------------------------------------------------------------


def check(c, spec, arrays, attrs):
    t = storage_of(spec, attrs)
    names = [i.name for i in spec.inputs]
    x, scale, zp = (arrays[n] for n in names)
    axis, granularity, bs = attrs["axis"], attrs["granularity"], attrs["block_size"]
    if bs < 0:
        c.fail(f"block_size={bs} must be positive (or 0: no blocks)", "block_size",
               tf="block_size must be a positive integer.")
    if granularity != "tensor":
        if not 0 <= axis < x.ndim:
            c.fail(f"axis={axis} is out of range for an input of rank {x.ndim}; allowed: {-x.ndim}..{x.ndim - 1}",
                   "axis", tf=f"axis is out of boundary, axis={axis}, value.shape={list(scale.shape)}, "
                              f"shape={list(x.shape)}.")
    if granularity == "axis" and scale.shape != (x.shape[axis],):
        c.fail(f"{names[1]} has shape {list(scale.shape)}; a per-axis scale along axis {axis} has "
               f"{x.shape[axis]} elements", names[1], tf=f"For per axis quantization, scale must be 1D tensor with "
                                                          f"size {x.shape[axis]}")
    if granularity == "block":
        want = tuple(-(-d // bs) if i == axis else d for i, d in enumerate(x.shape))
        if scale.shape != want:
            c.fail(f"{names[1]} has shape {list(scale.shape)}; blocks of {bs} along axis {axis} of x {list(x.shape)} "
                   f"need shape {list(want)} (ceil({x.shape[axis]} / {bs}) blocks)", names[1],
                   tf=f"x_scale must be ceil(Di/block_size) on the quantize axis i for blocked quantization. Dimension "
                      f"{axis}: {x.shape[axis]} / {bs}")
    if zp.shape != scale.shape:
        c.fail(f"{names[2]} has shape {list(zp.shape)}; it must have the scale's shape {list(scale.shape)}", names[2])
    if attrs.get("saturate", 1) not in (0, 1):
        c.fail(f"saturate={attrs['saturate']}; allowed: 0, 1", "saturate")
    if not spec.variant.quantize or spec.variant.dequantize:
        if t.name in FLOAT8 and np.any(storage.to_codes(zp) != 0):
            c.fail(f"{names[2]} must be 0 for the float8 types (it is ignored)", names[2],
                   tf="x_zero_point is not null but should be zero for float8 types.")
    if t.name == "int32" and np.any(zp != 0):
        # the reference would compute float32(x) - zero point in float64 and round twice; the spec has none
        c.fail(f"{names[2]} must be 0 for int32 x; allowed: 0 or none", names[2],
               tf="In the case of dequantizing int32, there's no zero point (zero point is supposed to be 0).")


# -- the public call ----------------------------------------------------------------------------------------


class OnnxQDQ(Family):
    name = "onnx_qdq"
    rules_by_semantics = {}

    def wrong_dtype_words(self, spec, input_name, dtype):
        return f"Type Error: Type (tensor({dtype.name})) of input parameter ({input_name}) of operator " \
               f"({spec.name}) in node () is invalid."

    def mismatched_dtype_words(self, spec, index, got, want):
        return None

    def channel_axis(self, spec, attrs, rank):
        return attrs["axis"] if attrs.get("granularity", "tensor") != "tensor" else None

    def layout(self, spec, attrs):
        return AXIS if attrs.get("granularity", "tensor") != "tensor" else FLAT

    def operand_layout(self, spec, attrs, operand):
        return BLOCKS if operand.layout == RANGE and attrs.get("granularity") == "block" else operand.layout

    def block_size(self, spec, attrs):
        return attrs["block_size"] if attrs.get("granularity") == "block" else 0

    def structural(self, spec):
        """DequantizeLinear's output_dtype is its element type T, which the configuration carries already."""
        keys = {"axis", "granularity", "block_size", "x_dtype", "saturate", "tiny_scale", "scale_dtype", "precision",
                "no_zero_point"}
        return frozenset(keys | ({"output_dtype"} if spec.variant.quantize else set())) & set(spec.attr_map)

    def element_dtype(self, spec, kwargs):
        """DequantizeLinear's T: its result's type (public_arguments sets it from output_dtype or the scale)."""
        if spec.variant.quantize or not kwargs.get("output_dtype"):
            return None
        return dtypes.np_of(kwargs["output_dtype"])

    def configure(self, spec, attrs, dims, shapes, types, element):
        """ONNX's choice by the scale's shape: blocks where block_size > 0, else per axis where the scale (or the zero
        point) is declared 1-D of other than one element ('?' included), else per tensor; the scale's type as declared
        (x's: none named); a negative axis counted from the end."""
        out = super().configure(spec, attrs, dims, shapes, types, element)
        scale, zp = spec.input_names[1], spec.input_names[2]
        if out.get("scale_dtype") == element:
            out["scale_dtype"] = ""
        declared = shapes.get(scale, shapes.get(zp))
        bs = attrs.get("block_size", 0)
        if isinstance(bs, int) and bs > 0:
            out["granularity"] = "block"
        elif declared is not None and len(declared) > 1:
            raise QDQError(f"{scale} has shape {list(declared)}; allowed: a number, or a vector along axis (or "
                           f"blocks, with block_size > 0)", op=spec.name, arg=scale, reference="ONNX",
                           tf_message="Input 2 must be a vector or a number.")
        else:
            out["granularity"] = "axis" if declared is not None and len(declared) == 1 and declared[0] != 1 \
                else "tensor"
        axis = out.get("axis", 1)
        if out["granularity"] != "tensor" and isinstance(axis, int) and -len(dims) <= axis < 0:
            out["axis"] = axis + len(dims)
        return out

    def public_arguments(self, spec, kwargs):
        return onnx_qdq_args.public_arguments(spec, kwargs, QUANTIZED, DQ_TYPES)

    def template_vars(self, spec, attrs):
        t = storage_of(spec, attrs)
        return {"quantize": spec.variant.quantize, "dequantize": spec.variant.dequantize, "st": t,
                "blocked": attrs["granularity"] == "block", "block_size": attrs["block_size"],
                "tiny_scale": attrs.get("tiny_scale", False), "scale_dtype": attrs.get("scale_dtype", ""),
                "precision": attrs.get("precision", ""), "quotient_dtype": quotient_dtype, "row": storage.get,
                "float8": t.name in FLOAT8, "saturate": bool(attrs.get("saturate", 1)),
                "subtract_zero_point": t.name not in FLOAT8 and t.name != "float4_e2m1fn"
                and not attrs.get("no_zero_point", False)}

    def grid_step(self, call):
        return None

    def matrix_variants(self, spec):
        """Every storage type once, the granularities in turn (per-tensor, per-axis, blocks of 3 over 4 channels:
        a ragged last block), and float8_e8m0fnu scales per axis: 16 configurations per dtype (17 for
        DequantizeLinear: int32), not 45 (tests/test_onnx.py and the goldens cross them further)."""
        key = "output_dtype" if spec.variant.quantize else "x_dtype"
        out = []
        for i, n in enumerate(QUANTIZED if spec.variant.quantize else DQ_TYPES):
            g = GRANULARITIES[i % 3]
            out.append({key: n, "granularity": g, **({"axis": 1} if g != "tensor" else {}),
                        **({"block_size": 3} if g == "block" else {})})
        out.append({key: "int8", "granularity": "axis", "axis": 1, "scale_dtype": "float8_e8m0fnu"})
        return out

    def random_calls(self, spec, attrs, x, rng, special):
        t = storage_of(spec, attrs)
        g, axis, bs = attrs.get("granularity", "tensor"), attrs.get("axis", 1), attrs.get("block_size", 0)
        if g == "tensor":
            shape = ()
        elif g == "axis":
            shape = (x.shape[axis],)
        else:
            shape = tuple(-(-d // bs) if i == axis else d for i, d in enumerate(x.shape))
        container = t.code_dtype
        sdt = dtypes.np_of(attrs.get("scale_dtype") or dtypes.name_of(x.dtype))
        calls = []
        for wide in (False, True):
            lo, hi = (0.001, 0.02) if t.is_float and not wide else (0.01, 0.3) if not wide else (0.5, 4.0)
            scale = rng.uniform(lo, hi, shape).astype(F32) * np.where(rng.random(shape) < 0.1, -1, 1).astype(F32)
            if sdt.name == "float8_e8m0fnu":   # powers of two, positive
                scale = np.exp2(rng.integers(-10 if t.is_float else -6, 3 if wide else -1, shape)).astype(F32)
            if t.name in FLOAT8:
                zp = np.zeros(shape, container)
            elif t.is_float:
                zp = np.where(rng.random(shape) < 0.5, 0, t.sign_bit).astype(container)
            else:
                zp = (rng.integers(t.min, t.max + 1, shape) & t.code_mask).astype(container)
            zp = storage.from_codes(zp, t.np)
            extra = {"axis": axis, "block_size": bs} if g != "tensor" else {}
            if spec.variant.quantize:
                kw = {"x": special(x.copy(), float(np.max(np.abs(scale)))), "y_scale": scale.astype(sdt),
                      "y_zero_point": zp, **extra}
                for sat in ((1, 0) if t.name in FLOAT8 else (1,)):
                    calls.append(self.public_arguments(spec, {**kw, "saturate": sat}))
            else:
                if t.bits > 16:   # int32: anywhere in its range (beyond 2^24: rounded to float32)
                    codes = rng.integers(-2 ** 31, 2 ** 31, x.shape)
                else:
                    codes = rng.integers(0, 1 << t.bits, x.shape).astype(np.int64)
                    codes = np.where(codes >= 1 << (t.container_bits - 1), codes - (1 << t.container_bits), codes)
                if t.name in FLOAT8 or t.bits > 16:
                    zp = storage.from_codes(np.zeros(shape, container), t.np)
                calls.append(self.public_arguments(spec, {"x": storage.from_codes(codes.astype(container), t.np),
                                                         "x_scale": scale.astype(sdt), "x_zero_point": zp,
                                                         "output_dtype": x.dtype, **extra}))
        return calls

    def bench_kwargs(self, spec, attrs, shape, rng):
        kw = {k: v for k, v in self.random_calls(spec, attrs, np.zeros(shape, F32), rng, lambda a, s: a)[0].items()
              if k in spec.input_names or k in ("axis", "block_size", "saturate")}   # the public arguments
        if spec.variant.quantize:
            kw["x"] = rng.standard_normal(shape, dtype=F32) * F32(2)
        return kw


ORT_SCALES = ("", "float32", "float16")


def ort_check(c, spec, arrays, attrs):
    """onnxruntime 1.32's CPU kernels: none for float4/float6, bfloat16 or float8_e8m0fnu scales, and precision
    only float32 or float16 (its words); the rest as ONNX's checks."""
    t = storage_of(spec, attrs)
    if attrs.get("precision", "") not in ORT_SCALES:   # (checked first, as onnxruntime does: at the kernel's creation)
        c.fail(f"precision={attrs['precision']}: semantics='ort-cpu' allows float32 or float16", "precision",
               tf="CPU QuantizeLinear only supports precision 0 (use scale type), FLOAT, and FLOAT16.")
    missing = t.name if t.name.startswith(("float4", "float6")) else attrs.get("scale_dtype", "") \
        if attrs.get("scale_dtype", "") not in ORT_SCALES else ""
    if missing:
        c.fail(f"semantics='ort-cpu': onnxruntime has no {spec.name} kernel for {missing}; allowed: "
               f"{', '.join(n for n in QUANTIZED if not n.startswith(('float4', 'float6')))} with float32 or float16 "
               f"scales (semantics='onnx' takes every type)", "semantics",
               tf=f"[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for {spec.name}(25) "
                  f"node with name ''")
    check(c, spec, arrays, attrs)


def _ort_has_kernel(spec, attrs) -> bool:
    return not attrs.get("output_dtype", attrs.get("x_dtype", "")).startswith(("float4", "float6")) and \
        attrs.get("scale_dtype", "") in ORT_SCALES


def _no_bfloat16(spec, dtype):
    return "onnxruntime's CPU kernels take float32 and float16; semantics='onnx' takes bfloat16" \
        if dtype == "bfloat16" else ""


ONNX_ARITH = {"float8_windows": {}, "quotient_in_scale_type": False}
ORT_ARITH = {"float8_windows": ORT_FLOAT8_WINDOWS, "quotient_in_scale_type": True}
FAMILY = OnnxQDQ()
FAMILY.rules_by_semantics = {
    "onnx": Rules(oracle, "onnx_qdq.mlir.j2", DTYPES, check=check, arithmetic=ONNX_ARITH),
    "ort-cpu": Rules(oracle, "onnx_qdq.mlir.j2", ("float32", "float16"), check=ort_check, dtype_hint=_no_bfloat16,
                     arithmetic=ORT_ARITH, answers_variant=_ort_has_kernel),
}

# A scale crosses as float32 whatever its type (each embeds exactly); scale_dtype says which ("": the op's T).
_WIDE = tuple((n, "float32") for n in SCALE_DTYPES if n != "float32")
_Q_INPUTS = (data("x"), fixed("y_scale", "scale", "attr:scale_dtype", RANGE, 0.1, _WIDE),
             fixed("y_zero_point", "zero_point", "attr:output_dtype", RANGE, 0))
_DQ_INPUTS = (fixed("x", "data", "attr:x_dtype", DATA, 0), fixed("x_scale", "scale", "attr:scale_dtype", RANGE, 0.1,
                                                                  _WIDE),
              fixed("x_zero_point", "zero_point", "attr:x_dtype", RANGE, 0))
# opset (ours, not ONNX's): what a model of that opset may hold is checked (ops/onnx_qdq_args.py: SINCE)
_Q_SIGNATURE = ("x", "y_scale", "y_zero_point", "axis", "block_size", "output_dtype", "saturate", "precision", "opset")


_DEFAULTS = (("y_zero_point", None), ("x_zero_point", None), ("axis", 1), ("block_size", 0), ("output_dtype", None),
             ("saturate", 1), ("precision", None), ("opset", None))


def _spec(name, inputs, attrs, results, variant, doc, signature):
    return OpSpec(name, FAMILY, inputs, attrs, results, DTYPES, doc, variant=variant, namespace="onnx",
                  signature=signature, public_defaults=tuple((k, v) for k, v in _DEFAULTS if k in signature))


SPECS = (
    _spec("QuantizeLinear", _Q_INPUTS, (AXIS_ATTR, BLOCK_SIZE, SATURATE, OUTPUT_DTYPE, GRANULARITY, TINY_SCALE,
                                       SCALE_DTYPE, PRECISION),
          (result("y", "attr:output_dtype"),), Variant(),
          "y = saturate(round(x / y_scale) + y_zero_point) in the zero point's storage type (float8: the nearest "
          "value, saturate=1 clipping).", _Q_SIGNATURE),
    _spec("DequantizeLinear", _DQ_INPUTS, (AXIS_ATTR, BLOCK_SIZE, X_DTYPE, GRANULARITY, SCALE_DTYPE, DQ_OUTPUT_DTYPE,
                                           NO_ZERO_POINT),
          (result("y"),), Variant(quantize=False, dequantize=True),
          "y = (x - x_zero_point) * x_scale in output_dtype, by default the scale's type (float8 and float4: "
          "x * x_scale).",
          ("x", "x_scale", "x_zero_point", "axis", "block_size", "output_dtype", "opset")),
    _spec("QuantizeDequantizeLinear", _Q_INPUTS, (AXIS_ATTR, BLOCK_SIZE, SATURATE, OUTPUT_DTYPE, GRANULARITY,
                                                 TINY_SCALE, SCALE_DTYPE, PRECISION, NO_ZERO_POINT), (result("y"),),
          Variant(dequantize=True),
          "DequantizeLinear(QuantizeLinear(x)) in x's type, one program: the fake quantization a Q/DQ node pair "
          "computes.", _Q_SIGNATURE),
)
