"""ONNX's QuantizeLinear and DequantizeLinear (opset 28, onnx 1.23.2) and the pair as one program, into and out
of every storage type of qdq_compiler/storage.py, as the ``onnx`` package's reference implementation computes
them (semantics ``onnx``; its behaviours, measured, are in tools/goldens/onnx/README.md).

The reference (onnx/reference/ops/op_quantize_linear.py, op_dequantize_linear.py):
  QuantizeLinear    q = x / y_scale in x's type (a float16 quotient is rounded to float16);
                    integers: ``np.rint(q).astype(int32)`` (x86: NaN, inf and |q| >= 2^31 become INT32_MIN),
                    + zero point in int32, clipped to the type's range;
                    float8: saturate=1 clips q to the type's largest finite value (inf too, NaN stays) and
                    converts, saturate=0 converts (overflow to inf or NaN); the zero point is not added;
                    float4/float6: q + zero point, converted (always saturating; NaN -> the sign bit alone).
  DequantizeLinear  integers and float6: (float32(x) - zero point) * scale in float32; float8 and float4:
                    float32(x) * scale (the zero point ignored; float8's must be 0); then the output type.
A per-tensor scale is 0-d or has one element; a per-axis one is 1-D along ``axis`` (negative counts from the
end); the zero point has the scale's shape and the storage type.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes, storage
from ..errors import QDQError, QDQTypeError
from .family import AXIS, FLAT, Family
from .rules import Rules
from .spec import BLOCKS, DATA, RANGE, OpSpec, attr, data, fixed, per_channel, result

F32 = np.float32
DTYPES = ("float32", "float16", "bfloat16")
# The storage types each op takes (opset 28's T3 / T1, less int32: qdq_compiler has no int32 storage yet).
QUANTIZED = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2", "float8_e4m3fn",
             "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
FLOAT8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")

AXIS_ATTR = attr("axis", int, 1, doc="the quantization axis of a per-axis scale (negative: from the end)")
SATURATE = attr("saturate", int, 1, doc="float8 only: 1 clips beyond the largest value, 0 gives inf or NaN")
OUTPUT_DTYPE = attr("output_dtype", str, "uint8", QUANTIZED,
                    doc="the storage type (set from y_zero_point, or the output_dtype given; default uint8)")
X_DTYPE = attr("x_dtype", str, "uint8", QUANTIZED, doc="set from x: the storage type it holds")
GRANULARITIES = ("tensor", "axis", "block")
GRANULARITY = attr("granularity", str, "tensor", GRANULARITIES,
                   doc="set from the scale: one element per tensor, a vector along axis, or blocks (block_size > 0)")
TINY_SCALE = attr("tiny_scale", bool, False,
                  doc="set from the scale: some |y_scale| < 2^-100 (where FTZ targets divide x * 2^32, built exactly)")
TINY = 2.0 ** -100
FLOAT32_QUOTIENT = attr("float32_quotient", bool, False,
                        doc="set from precision=float32 (opset 23): a float16/bfloat16 x divided in float32, unrounded")
BLOCK_SIZE = attr("block_size", int, 0, doc="blocked quantization: the elements along axis one scale covers (0: none)")


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


def quantize(x, scale, zp_codes, t: storage.StorageType, saturate: bool, arith=None, float32_quotient=False):
    """Codes (int64) of QuantizeLinear: x and scale of the op's float type, broadcastable; ``arith`` the rules'
    arithmetic policy (None: the onnx reference's); ``float32_quotient``: precision=float32 (no rounding to x's
    16-bit type)."""
    arith = arith or ONNX_ARITH
    with np.errstate(all="ignore"):
        q = (x.astype(F32) / scale.astype(F32)).astype(F32)
        if x.dtype != F32 and not float32_quotient:
            q = q.astype(x.dtype).astype(F32)       # the reference divides in x's type
        if not t.is_float:
            r = np.rint(q.astype(np.float64))
            zp = storage.decode(zp_codes, t).astype(np.int64)
            if arith["saturating_int"]:               # onnxruntime: clipped in float; NaN -> the type's minimum
                r = np.where(np.isnan(r), -np.inf, r)
                return storage.encode(np.clip(np.clip(r, -2.0 ** 24, 2.0 ** 24).astype(np.int64) + zp, t.min, t.max), t)
            bad = ~(np.abs(r) < 2.0 ** 31)            # NaN, inf, beyond int32: INT32_MIN (x86's conversion)
            qi = np.where(bad, -2 ** 31, np.nan_to_num(r)).astype(np.int64)
            qi = ((qi + zp + 2 ** 31) % 2 ** 32) - 2 ** 31   # an int32 sum wraps
            return storage.encode(np.clip(qi, t.min, t.max), t)
        if t.name in FLOAT8:
            codes = storage.encode(q, t, saturate=bool(saturate))
            window = arith["float8_windows"].get(t.name)
            if window and not saturate:
                lo, hi, what = window
                inside = (np.abs(q) >= lo) & (np.abs(q) < hi)
                sign = (q.view(np.uint32) >> 31).astype(np.int64) << (t.bits - 1)
                codes = np.where(inside, (t.max_code if what == "max" else t.nan_code) | sign, codes)
            return codes
        v = (q + storage.decode(zp_codes, t)).astype(F32)
        if x.dtype != F32 and not float32_quotient:
            v = v.astype(x.dtype).astype(F32)
        return storage.encode(v, t)


def dequantize(codes, scale, zp_codes, t: storage.StorageType, out_dtype):
    """DequantizeLinear's values in ``out_dtype``."""
    with np.errstate(all="ignore"):
        v = storage.decode(codes, t)
        if t.name not in FLOAT8 and t.name != "float4_e2m1fn":
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
        codes = quantize(x, scale_b, zp_codes, t, a["saturate"], spec.family.rules(call.semantics).arithmetic,
                         a["float32_quotient"])
        if not spec.variant.dequantize:
            return (storage.from_codes(codes.astype(t.code_dtype), t.np),)
        return (dequantize(codes, scale_b, zp_codes, t, x.dtype),)
    x_codes = storage.to_codes(x).astype(np.int64)
    return (dequantize(x_codes, scale_b, zp_codes, t, scale.dtype),)


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


# -- the public call ----------------------------------------------------------------------------------------


def _float_name(spec, value, arg: str = "precision") -> str:
    """A float type given as a NumPy dtype, its name or a TensorProto number (1 float, 10 float16, 16 bfloat16)."""
    by_code = {1: "float32", 10: "float16", 16: "bfloat16"}
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if int(value) not in by_code:
            raise QDQError(f"{arg}={value!r}: allowed: 1 (FLOAT), 10 (FLOAT16), 16 (BFLOAT16)", op=spec.name, arg=arg)
        return by_code[int(value)]
    try:
        return dtypes.get(value).name
    except QDQError:
        raise QDQError(f"{arg}={value!r}: allowed: float32, float16, bfloat16 (or 1, 10, 16)", op=spec.name,
                       arg=arg) from None


def _storage_name(spec, name, value) -> str:
    if value is None or value == 0:
        return ""
    try:
        return storage.get(value).name
    except QDQError:
        raise QDQError(f"{name}={value!r} is not a quantized type this op takes; allowed: {', '.join(QUANTIZED)} "
                       f"(a NumPy/ml_dtypes dtype or its TensorProto number)", op=spec.name, arg=name) from None


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
        return frozenset({"axis", "granularity", "block_size", "output_dtype", "x_dtype", "saturate", "tiny_scale",
                          "float32_quotient"}) & \
            set(spec.attr_map)

    def public_arguments(self, spec, kwargs):
        """ONNX's arguments as bind takes them: a missing zero point is zeros of the output type (uint8 unless
        ``output_dtype`` says; float4/float6: -0, which adds nothing, not even to -0); ``output_dtype`` as a
        NumPy dtype or a TensorProto number; a one-element scale is per-tensor, a 1-D one per-axis along a
        normalised ``axis``."""
        out = dict(kwargs)
        names = [i.name for i in spec.inputs]
        scale_name, zp_name = names[1], names[2]
        given = out.pop("output_dtype", None)
        precision = out.pop("precision", None)
        block_size = out.get("block_size", 0)
        if precision not in (None, 0):   # opset 23: the type x and the scale are divided in
            x = out.get("x")
            name = _float_name(spec, precision)
            own = dtypes.name_of(x.dtype) if isinstance(x, (np.ndarray, np.generic)) else None
            if name not in ("float32", own):
                raise QDQError(f"precision={precision!r}: allowed: float32 (TensorProto 1) or x's own type {own}; "
                               f"a narrower one (rounding x and the scale first) is not supported yet",
                               op=spec.name, arg="precision")
            out["float32_quotient"] = name == "float32"
        scale = out.get(scale_name)
        zp = out.get(zp_name)
        if spec.variant.quantize:
            named = _storage_name(spec, "output_dtype", given)
            if zp is None:
                t = storage.get(named or "uint8")
                zero = t.sign_bit if t.special == storage.FINITE else 0
                shape = np.shape(scale) if isinstance(scale, (np.ndarray, np.generic)) else ()
                zp = storage.from_codes(np.full(shape, zero, t.code_dtype), t.np)
            elif isinstance(zp, (np.ndarray, np.generic)) and named and dtypes.name_of(np.asarray(zp).dtype) != named:
                raise QDQError(f"output_dtype={named} does not match y_zero_point's type "
                               f"{dtypes.name_of(np.asarray(zp).dtype)}", op=spec.name, arg="output_dtype",
                               reference="ONNX", tf_message=f"Mismatched output data-types: output_dtype="
                               f"{storage.get(named).onnx_code}, zero_point type="
                               f"{storage.get(np.asarray(zp).dtype).onnx_code if np.asarray(zp).dtype.name in storage.TABLE else '?'}")
        else:
            x = out.get("x")
            if given not in (None, 0):   # opset 23: the result's float type; here the scale's own
                want = dtypes.name_of(np.asarray(scale).dtype) if isinstance(scale, (np.ndarray, np.generic)) else None
                named = _float_name(spec, given, "output_dtype")
                if named != want:
                    raise QDQError(f"output_dtype={given!r} ({named}): DequantizeLinear returns the scale's type, "
                                   f"{want}; another float type is not supported yet", op=spec.name,
                                   arg="output_dtype")
            if zp is None and isinstance(x, np.ndarray):
                t = storage.get(x.dtype) if dtypes.name_of(x.dtype) in storage.TABLE else storage.get("uint8")
                shape = np.shape(scale) if isinstance(scale, (np.ndarray, np.generic)) else ()
                zp = storage.from_codes(np.zeros(shape, t.code_dtype), t.np)
        out[zp_name] = zp
        if isinstance(scale, (np.ndarray, np.generic)):
            s = np.asarray(scale)
            blocked = isinstance(block_size, (int, np.integer)) and block_size != 0
            if s.ndim > 1 and not blocked:
                raise QDQError(f"{scale_name} has shape {list(s.shape)}; allowed: a number, or a vector along axis "
                               f"(or blocks, with block_size > 0)", op=spec.name, arg=scale_name,
                               reference="ONNX", tf_message="Input 2 must be a vector or a number.")
            if s.ndim == 1 and s.size == 1 and not blocked:
                out[scale_name] = s.reshape(())
                if isinstance(zp, (np.ndarray, np.generic)) and np.size(zp) == 1:
                    out[zp_name] = np.asarray(zp).reshape(())
            out["granularity"] = "block" if blocked else "axis" if s.ndim == 1 and s.size != 1 else "tensor"
            if spec.variant.quantize and s.dtype.kind in "fV":
                with np.errstate(invalid="ignore"):
                    tiny = bool(np.any(np.abs(s.astype(np.float32)) < TINY))
                if tiny and out.get("tiny_scale") is False:   # a bundle entry's baked program
                    raise QDQError(f"{scale_name} has values below 2^-100 in magnitude; this program was built for "
                                   f"scales above (tiny_scale=False): build it with tiny_scale=True", op=spec.name,
                                   arg=scale_name)
                out["tiny_scale"] = tiny or bool(out.get("tiny_scale", False))
            x = out.get("x")
            axis = out.get("axis", 1)
            if out["granularity"] != "tensor" and isinstance(x, np.ndarray) and \
                    isinstance(axis, (int, np.integer)) and -x.ndim <= axis < 0:
                out["axis"] = int(axis) + x.ndim
        dt = out.get("x") if spec.variant.quantize else None
        if dt is not None and not isinstance(dt, (np.ndarray, np.generic)):
            raise QDQTypeError("x must be a NumPy array of float32, float16 or bfloat16", op=spec.name, arg="x")
        return out

    def template_vars(self, spec, attrs):
        t = storage_of(spec, attrs)
        return {"quantize": spec.variant.quantize, "dequantize": spec.variant.dequantize, "st": t,
                "blocked": attrs["granularity"] == "block", "block_size": attrs["block_size"],
                "tiny_scale": attrs.get("tiny_scale", False), "float32_quotient": attrs.get("float32_quotient", False),
                "float8": t.name in FLOAT8, "saturate": bool(attrs.get("saturate", 1)),
                "subtract_zero_point": t.name not in FLOAT8 and t.name != "float4_e2m1fn"}

    def grid_step(self, call):
        return None

    def matrix_variants(self, spec):
        """Every storage type once, the granularities in turn (per-tensor, per-axis, blocks of 3 over 4 channels:
        a ragged last block): 15 configurations per dtype, not 45 (tests/test_onnx.py crosses them further)."""
        key = "output_dtype" if spec.variant.quantize else "x_dtype"
        out = []
        for i, n in enumerate(QUANTIZED):
            g = GRANULARITIES[i % 3]
            out.append({key: n, "granularity": g, **({"axis": 1} if g != "tensor" else {}),
                        **({"block_size": 3} if g == "block" else {})})
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
        calls = []
        for wide in (False, True):
            lo, hi = (0.001, 0.02) if t.is_float and not wide else (0.01, 0.3) if not wide else (0.5, 4.0)
            scale = rng.uniform(lo, hi, shape).astype(F32) * np.where(rng.random(shape) < 0.1, -1, 1).astype(F32)
            if t.name in FLOAT8:
                zp = np.zeros(shape, container)
            elif t.is_float:
                zp = np.where(rng.random(shape) < 0.5, 0, t.sign_bit).astype(container)
            else:
                zp = (rng.integers(t.min, t.max + 1, shape) & t.code_mask).astype(container)
            zp = storage.from_codes(zp, t.np)
            extra = {"axis": axis, "block_size": bs} if g != "tensor" else {}
            if spec.variant.quantize:
                kw = {"x": special(x.copy(), float(np.max(np.abs(scale)))), "y_scale": scale.astype(x.dtype),
                      "y_zero_point": zp, **extra}
                for sat in ((1, 0) if t.name in FLOAT8 else (1,)):
                    calls.append(self.public_arguments(spec, {**kw, "saturate": sat}))
            else:
                codes = rng.integers(0, 1 << min(t.bits, 16), x.shape).astype(np.int64)
                codes = np.where(codes >= 1 << (t.container_bits - 1), codes - (1 << t.container_bits), codes)
                if t.name in FLOAT8:
                    zp = storage.from_codes(np.zeros(shape, container), t.np)
                calls.append(self.public_arguments(spec, {"x": storage.from_codes(codes.astype(container), t.np),
                                                         "x_scale": scale.astype(x.dtype), "x_zero_point": zp, **extra}))
        return calls

    def bench_kwargs(self, spec, attrs, shape, rng):
        kw = {k: v for k, v in self.random_calls(spec, attrs, np.zeros(shape, F32), rng, lambda a, s: a)[0].items()
              if k in spec.input_names or k in ("axis", "block_size", "saturate")}   # the public arguments
        if spec.variant.quantize:
            kw["x"] = rng.standard_normal(shape, dtype=F32) * F32(2)
        return kw


def ort_check(c, spec, arrays, attrs):
    """onnxruntime 1.32's CPU kernels have no float4/float6 kernels (its words); the rest as ONNX's checks."""
    t = storage_of(spec, attrs)
    if t.name.startswith(("float4", "float6")):
        c.fail(f"semantics='ort-cpu': onnxruntime has no {spec.name} kernel for {t.name}; allowed: "
               f"{', '.join(n for n in QUANTIZED if not n.startswith(('float4', 'float6')))} (semantics='onnx' "
               f"takes every type)", "semantics",
               tf=f"[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for {spec.name}(25) "
                  f"node with name ''")
    check(c, spec, arrays, attrs)


def _ort_has_kernel(spec, attrs) -> bool:
    return not attrs.get("output_dtype", attrs.get("x_dtype", "")).startswith(("float4", "float6"))


def _no_bfloat16(spec, dtype):
    return "onnxruntime's CPU kernels take float32 and float16; semantics='onnx' takes bfloat16" \
        if dtype == "bfloat16" else ""


ONNX_ARITH = {"saturating_int": False, "float8_windows": {}}
ORT_ARITH = {"saturating_int": True, "float8_windows": ORT_FLOAT8_WINDOWS}
FAMILY = OnnxQDQ()
FAMILY.rules_by_semantics = {
    "onnx": Rules(oracle, "onnx_qdq.mlir.j2", DTYPES, check=check, arithmetic=ONNX_ARITH),
    "ort-cpu": Rules(oracle, "onnx_qdq.mlir.j2", ("float32", "float16"), check=ort_check, dtype_hint=_no_bfloat16,
                     arithmetic=ORT_ARITH, answers_variant=_ort_has_kernel),
}

_Q_INPUTS = (data("x"), per_channel("y_scale", "scale", 0.1),
             fixed("y_zero_point", "zero_point", "attr:output_dtype", RANGE, 0))
_DQ_INPUTS = (fixed("x", "data", "attr:x_dtype", DATA, 0), per_channel("x_scale", "scale", 0.1),
              fixed("x_zero_point", "zero_point", "attr:x_dtype", RANGE, 0))
_Q_SIGNATURE = ("x", "y_scale", "y_zero_point", "axis", "block_size", "output_dtype", "saturate", "precision")


_DEFAULTS = (("y_zero_point", None), ("x_zero_point", None), ("axis", 1), ("block_size", 0), ("output_dtype", None),
             ("saturate", 1), ("precision", None))


def _spec(name, inputs, attrs, results, variant, doc, signature):
    return OpSpec(name, FAMILY, inputs, attrs, results, DTYPES, doc, variant=variant, namespace="onnx",
                  signature=signature, public_defaults=tuple((k, v) for k, v in _DEFAULTS if k in signature))


SPECS = (
    _spec("QuantizeLinear", _Q_INPUTS, (AXIS_ATTR, BLOCK_SIZE, SATURATE, OUTPUT_DTYPE, GRANULARITY, TINY_SCALE,
                                       FLOAT32_QUOTIENT),
          (result("y", "attr:output_dtype"),), Variant(),
          "y = saturate(round(x / y_scale) + y_zero_point) in the zero point's storage type (float8: the nearest "
          "value, saturate=1 clipping).", _Q_SIGNATURE),
    _spec("DequantizeLinear", _DQ_INPUTS, (AXIS_ATTR, BLOCK_SIZE, X_DTYPE, GRANULARITY), (result("y"),),
          Variant(quantize=False, dequantize=True),
          "y = (x - x_zero_point) * x_scale in the scale's type (float8 and float4: x * x_scale).",
          ("x", "x_scale", "x_zero_point", "axis", "block_size", "output_dtype")),
    _spec("QuantizeDequantizeLinear", _Q_INPUTS, (AXIS_ATTR, BLOCK_SIZE, SATURATE, OUTPUT_DTYPE, GRANULARITY, TINY_SCALE,
                                       FLOAT32_QUOTIENT), (result("y"),),
          Variant(dequantize=True),
          "DequantizeLinear(QuantizeLinear(x)) in x's type, one program: the fake quantization a Q/DQ node pair "
          "computes.", _Q_SIGNATURE),
)
