"""PyTorch's fake quantization (``torch.ops.aten``): per-tensor and per-channel affine, their cachemask forms
and the masks' backward, as PyTorch 2.13's CPU kernels compute them (semantics ``torch-cpu``; the behaviours
measured are in tools/goldens/aten/README.md).

The kernels (aten/src/ATen/native/quantized/cpu/kernels/QuantizedOpKernels.cpp) share one shape:
``inv = 1.0f / scale`` in float32, ``q = zero_point + nearbyint(x * inv)`` (ties to even), a clamp to
[quant_min, quant_max], ``(q - zero_point) * scale``, and a mask of the elements whose q was in range. They
differ in the types of the steps, and every difference shows in the bits:
  per-tensor           q in x's float type (float32 for 16-bit x); the clamp exact (std::fmin/fmax promote
                       to double), a NaN q clamps to quant_min; ``(q - zp)`` an int64 rounded to float32, times
                       the float32 scale (a float64 x gets that float32 product); mask against float(quant_min).
  per-channel, int zp  q converted to int64 (x86: NaN, inf and |q| >= 2^63 become INT64_MIN, so quant_min);
                       ``(q - zp) * scale`` in double, then x's type (16-bit types: double -> float -> 16-bit).
  per-channel, float zp  ``lrintf(zp + x * inv)``: GCC contracts the multiply-add into one FMA on x86-64 with
                       FMA (k.fused); then as the int-zp path.
The programs compute every integer-valued step in float64, where each of those values is exact.
"""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..errors import QDQError, QDQTypeError, fmt_number
from ..numerics import fma
from .aten_common import AtenFamily, Variant, check_axis, check_quant_range, check_vectors, torch_name
from .rules import Rules
from .spec import DATA, RANGE, OpSpec, attr, data, fixed, result, scalar

DTYPES = ("float16", "bfloat16", "float32", "float64")   # what PyTorch's CPU kernels take (all four)
F32, F64 = np.float32, np.float64
TWO_63 = 2.0 ** 63
# int32: nearbyint, then add; float32: lrintf of one FMA; float16 (PyTorch's Half path): lrintf of a multiply
# and an add, unfused (measured: GCC does not contract across c10::Half's operator+); held as float32
ZERO_POINT_DTYPES = ("int32", "float32", "float16")

QUANT_MIN = attr("quant_min", int, -128, doc="the lowest quantised level (PyTorch: int)")
QUANT_MAX = attr("quant_max", int, 127, doc="the highest quantised level")
AXIS_ATTR = attr("axis", int, 0, doc="the channel dimension, 0..rank-1")
ZP_DTYPE = attr("zero_point_dtype", str, "int32", ZERO_POINT_DTYPES,
                doc="set from the zero_point array: int32, float32 (an FMA) or float16 (unfused)", internal=True)


# -- the NumPy reference ----------------------------------------------------------------------------------


def _round_even(v):
    return np.rint(v)   # NumPy's rint: the current rounding mode, nearest-even (nearbyint)


def per_tensor(x, scale, zp: int, qmin: int, qmax: int):
    """(output, mask) of _fake_quantize_tensor_helper for x of any float type (16-bit: widened exactly)."""
    wide = F64 if x.dtype == F64 else F32
    sc = F32(scale)
    with np.errstate(all="ignore"):
        inv = F32(1.0) / sc
        xw = x.astype(wide)
        qf = (wide(zp) + _round_even(xw * wide(inv))).astype(wide)      # zp + nearbyint(x * inv), in x's type
        q64 = qf.astype(F64)
        q = np.where(q64 >= qmin, q64, F64(qmin))                       # fmax(q, qmin) in double: NaN -> qmin
        q = np.where(q <= qmax, q, F64(qmax))
        out = ((q - zp).astype(F32) * sc).astype(F32)                   # int64 -> float, times the float scale
        mask = (wide(qmin) <= qf) & (qf <= wide(qmax))                  # compared as floats
    return out, mask


def per_channel(x3, scale3, zp3, qmin: int, qmax: int, float_zp: bool, fused: bool = True):
    """(output in float64, mask) of the per-channel kernels on [outer, C, inner] views."""
    wide = F64 if x3.dtype == F64 else F32
    with np.errstate(all="ignore"):
        inv = (F32(1.0) / scale3.astype(F32)).astype(F32)
        xw = x3.astype(wide)
        if float_zp:
            if fused:
                v = fused_multiply_add(xw, inv.astype(wide), zp3.astype(wide))   # zp + x * inv, one rounding
            else:
                v = (zp3.astype(wide) + (xw * inv.astype(wide)).astype(wide)).astype(wide)
            qf = _round_even(v.astype(F32).astype(F64))                      # lrintf: float first
        else:
            qf = (zp3.astype(wide) + _round_even(xw * inv.astype(wide))).astype(wide).astype(F64)
        ok = np.abs(qf) < TWO_63                     # else x86 gives INT64_MIN (NaN, inf, overflow)
        qf = qf + 0.0                                # an int64 has no -0 (lrintf(-0.3) is 0)
        q = np.where(ok, np.minimum(np.maximum(np.where(ok, qf, 0.0), qmin), qmax), F64(qmin))
        out = (q - zp3.astype(F64)) * scale3.astype(F64)
        mask = ok & (qmin <= qf) & (qf <= qmax)
    return out, mask


def fused_multiply_add(a, b, c):
    """a * b + c rounded once, in a's type (numerics.fma, no flushing: PyTorch keeps subnormals)."""
    return fma(a, b, c, a.dtype)


def _three_d(a, axis):
    shape = a.shape
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return a.reshape(outer, shape[axis], inner)


def oracle(call):
    v, a, arr = call.spec.variant, call.attrs, call.arrays
    x = arr["input"]
    wide = x.astype(F32) if dtypes.get(x.dtype).narrow else x
    if v.per_channel:
        axis = a["axis"]
        out3, mask3 = per_channel(_three_d(wide, axis), arr["scale"].reshape(1, -1, 1),
                                  arr["zero_point"].reshape(1, -1, 1), a["quant_min"], a["quant_max"],
                                  a["zero_point_dtype"] != "int32", a["zero_point_dtype"] == "float32")
        out = out3.astype(F32).astype(x.dtype) if x.dtype != F64 else out3   # double -> float -> 16-bit
        out, mask = out.reshape(x.shape), mask3.reshape(x.shape)
    else:
        out, mask = per_tensor(wide, arr["scale"][()], int(arr["zero_point"]), a["quant_min"], a["quant_max"])
        with np.errstate(over="ignore"):   # beyond the 16-bit type's range: inf, as ATen's conversion gives it
            out = out.astype(x.dtype)
        if v.enabled and int(arr["fake_quant_enabled"]) == 0:
            out, mask = x.copy(), np.ones(x.shape, bool)
    return (out, mask) if v.mask else (out,)


# -- checks, in PyTorch's words --------------------------------------------------------------------------


def check(c, spec, arrays, attrs):
    qmin, qmax = attrs["quant_min"], attrs["quant_max"]
    x = arrays["input"]
    check_quant_range(c, qmin, qmax)
    scale, zp = arrays["scale"], arrays["zero_point"]
    if spec.variant.per_channel:
        axis = attrs["axis"]
        check_axis(c, axis, x.ndim)
        check_vectors(c, scale, zp)
        if scale.shape != zp.shape:
            c.fail(f"scale has {scale.size} elements but zero_point has {zp.size}; they must be equal", "zero_point",
                   tf="scale and zero-point need to have the same dimensions")
        if scale.size != x.shape[axis]:
            c.fail(f"scale has {scale.size} elements; expected {x.shape[axis]} (dimension {axis} of input)",
                   "scale", tf="dimensions of scale and zero-point are not consistent with input tensor")
        zp_bad = (zp < qmin) | (zp > qmax)
        if attrs["zero_point_dtype"] == "int32" and np.any(zp_bad):   # a float zero point is not checked
            c.fail(f"zero_point has values outside [quant_min, quant_max] = [{qmin}, {qmax}] "
                   f"(first: {fmt_number(zp[np.argmax(zp_bad)])})", "zero_point",
                   tf="`zero_point` must be between `quant_min` and `quant_max`.")
    elif not spec.variant.enabled:   # the tensor-qparams cachemask op checks no zero point (measured)
        if not qmin <= int(zp) <= qmax:
            c.fail(f"zero_point={int(zp)} is outside [quant_min, quant_max] = [{qmin}, {qmax}]", "zero_point",
                   tf="`zero_point` must be between `quant_min` and `quant_max`.")
    _warn_scale(c, scale)


def _warn_scale(c, scale):
    """PyTorch takes any scale; a zero, negative, NaN or infinite one is almost certainly a mistake."""
    if np.ndim(scale) == 0 and 0 < float(scale) < math.inf:   # the common per-tensor case, in plain floats
        return
    s = np.asarray(scale, F64)
    with np.errstate(invalid="ignore"):
        bad = ~(s > 0) | ~np.isfinite(s)
    if np.any(bad):
        c.warn(f"scale has {int(bad.sum())} value(s) that are not positive and finite (first: "
               f"{fmt_number(s.reshape(-1)[np.argmax(bad.reshape(-1))])}): PyTorch (and this op) then divide by it "
               f"as given", "scale")


def params(spec, attrs, dtype):
    """quant_min and quant_max in the compute type (exact: |q| <= 2^24)."""
    t = dtypes.get(dtypes.get(dtype).compute)
    return [("qmin", t.mlir, t.np.type(attrs["quant_min"])), ("qmax", t.mlir, t.np.type(attrs["quant_max"]))]


def _float_zp(spec, attrs):
    return spec.variant.per_channel and attrs.get("zero_point_dtype", "int32") != "int32"


def _fma(spec, attrs, dtype):
    return spec.variant.per_channel and attrs.get("zero_point_dtype", "int32") == "float32"


RULES = {"torch-cpu": Rules(oracle, "aten_fake_quant.mlir.j2", DTYPES, check=check, params=params,
                            fused_multiply_add=_fma)}


class AtenFakeQuant(AtenFamily):
    name = "aten_fake_quant"
    rules_by_semantics = RULES
    extra_structural = frozenset({"zero_point_dtype"})

    def wrong_dtype_words(self, spec, input_name, dtype):
        kernel = "fake_quantize_channel_cachemask_cpu_type_handling" if spec.variant.per_channel else \
            "fake_quantize_tensor_cachemask_kernel_type_handling"
        return f'"{kernel}" not implemented for \'{torch_name(dtype.name)}\''

    def mismatched_dtype_words(self, spec, index, got, want):
        name = spec.inputs[index].name
        if name == "scale":   # PyTorch's check lets BFloat16 through (its kernel then asserts): no words of its
            return None if got.name == "bfloat16" else f"Scale must be Float or BFloat16, found {torch_name(got.name)}"
        if name == "zero_point":
            return f"Zero-point must be Int32, Float or Half, found {torch_name(got.name)}"
        return None

    def public_arguments(self, spec, kwargs):
        if spec.variant.learnable:
            return learnable_arguments(spec, kwargs)
        return self.plain_arguments(spec, kwargs)

    def plain_arguments(self, spec, kwargs):
        """PyTorch's argument kinds as bind takes them: per-tensor qparams from Python numbers (``float scale``:
        a double converted to float, as ATen's kernel takes it) or 1-element tensors (``.item()``); a per-channel
        float16 zero point widened to float32 (exact: ATen's Half path computes in float);
        fake_quant_enabled as 0 or 1."""
        out = dict(kwargs)
        if spec.variant.per_channel:
            zp = out.get("zero_point")
            if isinstance(zp, (np.ndarray, np.generic)):
                name = dtypes.name_of(np.asarray(zp).dtype)
                if name not in ZERO_POINT_DTYPES:
                    raise QDQTypeError(f"zero_point has dtype {name}; allowed: int32, float32, float16",
                                       op=spec.name, arg="zero_point", reference="PyTorch",
                                       tf_message=f"Zero-point must be Int32, Float or Half, found {torch_name(name)}")
            return out
        zp = out.get("zero_point")
        if not spec.variant.enabled and isinstance(zp, (float, np.floating)) and not isinstance(zp, np.ndarray):
            raise QDQError(f"zero_point={zp!r}: a Python float matches no schema of {spec.name} (int "
                               f"zero_point, or a one-element tensor); allowed: an int or a one-element array",
                               op=spec.name, arg="zero_point", reference="PyTorch",
                               tf_message="Overloaded torch operator invoked from Python failed to match any schema:")
        for name, kind in (("scale", F32), ("zero_point", np.int32), ("fake_quant_enabled", np.int32)):
            if name in out:
                out[name] = _item(spec, name, out[name], kind)
        if "fake_quant_enabled" in out:
            out["fake_quant_enabled"] = np.int32(out["fake_quant_enabled"] != 0)
        return out

    def template_vars(self, spec, attrs):
        v = spec.variant
        return {"per_channel": v.per_channel, "mask": v.mask, "enabled": v.enabled,
                "float_zp": attrs.get("zero_point_dtype", "int32") != "int32"}

    def grid_step(self, call):
        s = call.arrays["scale"].astype(F64)
        return s.reshape([-1 if d == call.attrs["axis"] else 1 for d in range(call.data.ndim)]) \
            if call.spec.variant.per_channel else s

    def matrix_variants(self, spec):
        if not spec.variant.per_channel:
            return [{}]
        kinds = ("int32",) if spec.variant.learnable else ZERO_POINT_DTYPES   # LSQ rounds to int32 on the host
        return [{"axis": 1, "zero_point_dtype": z} for z in kinds]

    def random_calls(self, spec, attrs, x, rng, special):
        calls = []
        axis = attrs.get("axis", 0)
        c = x.shape[axis] if spec.variant.per_channel else None
        for qmin, qmax in ((-128, 127), (0, 255), (0, 1), (-8, 7), (-32768, 32767)):
            xi = special(x.copy(), 0.05)
            if c is None:
                scale = F32(rng.uniform(0.005, 0.2))
                zp = np.int32(rng.integers(qmin, qmax + 1))
            else:
                scale = rng.uniform(0.005, 0.2, c).astype(F32)
                zp = rng.integers(qmin, qmax + 1, c).astype(np.int32)
                zdt = attrs.get("zero_point_dtype", "int32")
                if zdt != "int32" or spec.variant.learnable:   # LSQ: a float zero point, rounded by the op
                    zp = (zp + rng.uniform(-0.49, 0.49, c)).clip(qmin, qmax).astype(F32 if zdt == "int32" else zdt)
            if spec.variant.learnable and c is None:
                scale, zp = np.array([scale], F32), np.array([zp + rng.uniform(-0.49, 0.49)], F32)
            kw = {**attrs, "input": xi, "scale": scale, "zero_point": zp, "quant_min": qmin, "quant_max": qmax}
            if spec.variant.enabled:
                kw["fake_quant_enabled"] = np.int32(len(calls) != 2)
            calls.append(learnable_arguments(spec, kw) if spec.variant.learnable else kw)
        return calls

    def bench_kwargs(self, spec, attrs, shape, rng):
        kw = {**attrs, **self.random_calls(spec, attrs, np.zeros(shape, F32), rng, lambda a, s: a)[0]}
        kw["input"] = rng.standard_normal(shape, dtype=F32) * F32(2)
        return kw


def _item(spec, name: str, value, kind):
    """A per-tensor qparam: a Python number, or a tensor of one element (PyTorch's ``.item()``), as ``kind``."""
    from_tensor = isinstance(value, np.ndarray)
    if isinstance(value, (np.ndarray, np.generic)):
        a = np.asarray(value)
        if a.size != 1:
            raise QDQError(f"{name} must have one element (a per-tensor qparam), got shape {list(a.shape)}",
                           op=spec.name, arg=name, reference="PyTorch",
                           tf_message=f"a Tensor with {a.size} elements cannot be converted to Scalar")
        value = a.reshape(()).item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        if not (isinstance(value, (bool, np.bool_)) and name == "fake_quant_enabled"):
            raise QDQTypeError(f"{name}={value!r} must be a number or a one-element array", op=spec.name, arg=name)
    if kind is F32:
        v = float(value)
        if from_tensor and math.isfinite(v) and abs(v) > float(np.finfo(F32).max):
            raise QDQError(f"{name}={v!r} is beyond float32", op=spec.name, arg=name, reference="PyTorch",
                           tf_message="value cannot be converted to type float without overflow")
        with np.errstate(over="ignore"):
            return np.asarray(v, F32)                   # a double converted to float, as ATen's kernels take it
    if isinstance(value, float) and not math.isfinite(value):
        raise QDQError(f"{name}={value!r} is not a number that converts to an int", op=spec.name, arg=name,
                       reference="PyTorch", tf_message="value cannot be converted to type int without overflow")
    v = int(value)                                       # .item().toInt(): a float truncates toward zero
    if not -2 ** 31 <= v < 2 ** 31 and not from_tensor and name == "zero_point":   # PyTorch's int64: the range
        raise QDQError(f"zero_point={v} is outside any quantisation range qdq_compiler computes (|q| <= 2^24, "
                       f"int32)", op=spec.name, arg=name, reference="PyTorch",
                       tf_message="`zero_point` must be between `quant_min` and `quant_max`.")
    if not -2 ** 31 <= v < 2 ** 31:
        raise QDQError(f"{name}={v} does not fit in int32; allowed: -2^31..2^31-1", op=spec.name, arg=name,
                       reference="PyTorch", tf_message="value cannot be converted to type int without overflow")
    return np.asarray(v, np.int32)


def learnable_arguments(spec, kwargs):
    """The learnable forwards' qparams: element 0 of the scale (``scale[0].item<float>()``); the zero point
    rounded half to even and clamped to [quant_min, quant_max] (per-tensor: ``std::nearbyint``, std::min/max;
    per-channel: ``zero_point.round().clamp_(quant_min, quant_max).to(kInt)``); a NaN one becomes INT32_MIN,
    which the range check then refuses with PyTorch's words."""
    out = dict(kwargs)
    qmin, qmax = out.get("quant_min"), out.get("quant_max")
    zp = out.get("zero_point")
    if not isinstance(zp, (np.ndarray, np.generic)) or not isinstance(qmin, int) or not isinstance(qmax, int):
        return out   # bind names what is wrong
    z = np.asarray(zp)
    if (z.dtype.kind == "f" or dtypes.is_float(z.dtype)) and np.isnan(z.astype(F64)).any():
        raise QDQError("zero_point is nan; it must lie within [quant_min, quant_max]", op=spec.name,
                       arg="zero_point", reference="PyTorch",
                       tf_message="`zero_point` must be between `quant_min` and `quant_max`.")
    if z.dtype.kind == "f" or dtypes.is_float(z.dtype):
        with np.errstate(invalid="ignore"):
            r = np.rint(z.astype(F64))
            r = np.where(np.isnan(r), r, np.clip(r, qmin, qmax))
            z = np.where(np.isnan(r), np.iinfo(np.int32).min, np.nan_to_num(r)).astype(np.int64)
    else:
        z = np.clip(z.astype(np.int64), qmin, qmax)
    z = np.clip(z, np.iinfo(np.int32).min, np.iinfo(np.int32).max).astype(np.int32)
    if spec.variant.per_channel:
        out["zero_point"] = z
        return out
    if not isinstance(out.get("scale"), (np.ndarray, np.generic)):
        raise QDQTypeError(f"scale={out.get('scale')!r} must be a float32 tensor (one element or more; element 0 "
                           f"is used)", op=spec.name, arg="scale")
    scale = np.asarray(out.get("scale"))
    for name, a in (("scale", scale), ("zero_point", np.asarray(zp))):
        if a.ndim == 0 or a.size == 0:
            raise QDQError(f"{name} must be a tensor with at least one element (element 0 is used)", op=spec.name,
                           arg=name, reference="PyTorch",
                           tf_message="select() cannot be applied to a 0-dim tensor." if a.ndim == 0 else
                           f"select(): index 0 out of range for tensor of size {list(a.shape)} at dimension 0")
    out["scale"] = np.asarray(scale.reshape(-1)[0], F32)
    out["zero_point"] = np.asarray(z.reshape(-1)[0], np.int32)
    return out


FAMILY = AtenFakeQuant()

_PER_TENSOR = (data("input"), scalar("scale", "scale", "float32", 0.1), scalar("zero_point", "zero_point", "int32", 0))
_PER_CHANNEL = (data("input"), fixed("scale", "scale", "float32", RANGE, 0.1),
                fixed("zero_point", "zero_point", "attr:zero_point_dtype", RANGE, 0, (("float16", "float32"),)))
_ENABLED = scalar("fake_quant_enabled", "enabled", "int32", 1)
_PT_ATTRS = (QUANT_MIN, QUANT_MAX)
_PC_ATTRS = (AXIS_ATTR, QUANT_MIN, QUANT_MAX, ZP_DTYPE)
GRAD_FACTOR = attr("grad_factor", float, 1.0, doc="LSQ's gradient scale (the forward ignores it)")
_MASKED = (result("output"), result("mask", "bool"))


def _spec(name, inputs, attrs, results, variant, doc):
    signature = tuple(i.name for i in inputs) + tuple(a.name for a in attrs if a is not ZP_DTYPE)
    if variant.per_channel:   # the schema's order: ..., axis, quant_min, quant_max
        signature = ("input", "scale", "zero_point", "axis", "quant_min", "quant_max")
    if variant.learnable and "grad_factor" not in signature:
        signature += ("grad_factor",)
    return OpSpec(name, FAMILY, inputs, attrs, results, DTYPES, doc, variant=variant, namespace="aten",
                  signature=signature, public_defaults=(("grad_factor", 1.0),) if variant.learnable else ())


SPECS = (
    _spec("fake_quantize_per_tensor_affine", _PER_TENSOR, _PT_ATTRS, (result("output"),), Variant(),
          "(clamp(zero_point + nearbyint(input * (1/scale))) - zero_point) * scale, one scale and zero point."),
    _spec("fake_quantize_per_tensor_affine_cachemask", _PER_TENSOR, _PT_ATTRS, _MASKED, Variant(mask=True),
          "fake_quantize_per_tensor_affine and the mask of the elements whose level was in range."),
    _spec("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", _PER_TENSOR + (_ENABLED,), _PT_ATTRS, _MASKED,
          Variant(mask=True, enabled=True),
          "The cachemask op with tensor qparams; fake_quant_enabled == 0 returns the input and an all-True mask."),
    _spec("fake_quantize_per_channel_affine", _PER_CHANNEL, _PC_ATTRS, (result("output"),), Variant(per_channel=True),
          "Per-channel along any axis; an int32 zero point rounds before adding it, a float one after (one FMA)."),
    _spec("fake_quantize_per_channel_affine_cachemask", _PER_CHANNEL, _PC_ATTRS, _MASKED,
          Variant(per_channel=True, mask=True),
          "fake_quantize_per_channel_affine and the mask of the elements whose level was in range."),
    _spec("_fake_quantize_learnable_per_tensor_affine", _PER_TENSOR, _PT_ATTRS + (GRAD_FACTOR,), (result("output"),),
          Variant(learnable=True), "LSQ's forward: the zero point rounded half to even and clamped, then "
          "fake_quantize_per_tensor_affine's kernel."),
    _spec("_fake_quantize_learnable_per_channel_affine", _PER_CHANNEL, _PC_ATTRS + (GRAD_FACTOR,), (result("output"),),
          Variant(per_channel=True, learnable=True), "LSQ's per-channel forward: the zero points rounded and clamped "
          "to int32, then the per-channel kernel."),
)
