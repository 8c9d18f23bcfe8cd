"""The learnable (LSQ) fake-quant gradients: ``_fake_quantize_learnable_per_{tensor,channel}_affine_backward``
returning (dX, dScale, dZeroPoint), as PyTorch 2.13's CPU kernels compute them (semantics torch-cpu).

Per element, in float32 (``_fake_quantize_grad_learnable_tensor_kernel``; both multiply-adds fused by GCC on
x86-64 with FMA, measured: 200 of 200 cases only with both fused):
    xq = nearbyint(fma(x, inv_scale, zp))      as an int64 (x86: NaN, inf and overflow give INT64_MIN, "below")
    dX = dY * (quant_min <= xq <= quant_max)
    in range:   dScale = ((dY * fma(xq - zp, scale, -x)) * inv_scale) * grad_factor,  dZeroPoint = +0
    below/above: dScale = (dY * (quant_min or quant_max - zp)) * grad_factor,  dZeroPoint = ((-dY) * scale) * grad_factor
then dScale and dZeroPoint summed over every element (per-tensor, a [1] result) or over every dimension but
the axis (per-channel, [C]; a 1-D input gives 0-d sums: PyTorch reduces all dims for an empty list). The
zero point is rounded on the host first: per-tensor ``trunc(clamp(zp + 0.5))``, per-channel half to even.
Inputs float32, or a bfloat16 input with everything converted to float32; the results are float32. Beyond
PyTorch (which refuses float16 and float64: "Expected X_.scalar_type() == ScalarType::Float"), a float16 input
takes the bfloat16 path (its exact float32 value, PyTorch's float32 arithmetic, float32 results), and a float64
input is first rounded to float32 (``input.float()``): PyTorch's only LSQ arithmetic is float32's.

The oracle sums in PyTorch's order (ops/aten_sum.py: its bits, 2 threads); a compiled target sums in its own,
within (n - 1) eps sum|terms| (policy 6; ``sum_terms``). A kept dX element is selected, not multiplied by 1:
FTZ targets would flush a subnormal gradient that PyTorch keeps.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import QDQError, QDQTypeError
from ..numerics import fma
from . import aten_sum
from .aten_common import ASSERT_TAIL, AtenFamily, Variant, check_axis, check_vectors, given_arrays, given_attr
from .rules import Rules
from .spec import RANGE, OpSpec, Output, attr, data, fixed, result, scalar

DTYPES = ("bfloat16", "float16", "float32")
WIDENED = ("bfloat16", "float16")   # 16-bit inputs: every tensor converted to float32 (PyTorch's bfloat16 path)
F32, F64 = np.float32, np.float64
TWO_63 = 2.0 ** 63
NUM_THREADS = 2      # the goldens' torch.get_num_threads(): a sum of 32768 or more splits over them
OUTPUTS = ("dX", "dScale", "dZeroPoint")


def elementwise(x, dy, sc, inv, zp, qmin, qmax, gf):
    """(dX, dScale terms, dZeroPoint terms), float32, on broadcast-compatible arrays."""
    with np.errstate(all="ignore"):
        r = np.rint(fma(x, inv, zp, F32)).astype(F64)
        fits = np.abs(r) < TWO_63
        below = ~fits | (r < qmin)
        inr = fits & (r >= qmin) & (r <= qmax)
        dx = np.where(inr, dy, (dy * F32(0))).astype(F32)
        kf = (np.where(inr, r, 0.0).astype(F32) - zp).astype(F32)
        diff = fma(kf, sc, -x, F32)
        ds_in = (((dy * diff).astype(F32) * inv).astype(F32) * gf).astype(F32)
        edge = np.where(below, (F32(qmin) - zp).astype(F32), (F32(qmax) - zp).astype(F32))
        ds_out = ((dy * edge).astype(F32) * gf).astype(F32)
        dz_out = (((-dy) * sc).astype(F32) * gf).astype(F32)
        return dx, np.where(inr, ds_in, ds_out).astype(F32), np.where(inr, F32(0), dz_out).astype(F32)


def _terms(spec, arr, a):
    """(dX, dScale terms, dZeroPoint terms) of a bound call's arrays and attributes, and its channel axis."""
    x, dy = arr["input"].astype(F32), arr["grad"]
    sc, zp = arr["scale"], arr["zero_point"]
    axis = a.get("axis") if spec.variant.per_channel else None
    if axis is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        sc, zp = sc.reshape(shape), zp.reshape(shape)
    with np.errstate(all="ignore"):
        inv = (F32(1) / sc).astype(F32)
    return elementwise(x, dy, sc, inv, zp, a["quant_min"], a["quant_max"], F32(a["grad_factor"])), axis


def oracle(call):
    (dx, ds, dz), axis = _terms(call.spec, call.arrays, call.attrs)
    if axis is None:
        return dx, aten_sum.sum_all(ds, NUM_THREADS), aten_sum.sum_all(dz, NUM_THREADS)
    return dx, aten_sum.sum_keep_axis(ds, axis, NUM_THREADS), aten_sum.sum_keep_axis(dz, axis, NUM_THREADS)


def check(c, spec, arrays, attrs):
    x, g = arrays["input"], arrays["grad"]
    qmin, qmax = attrs["quant_min"], attrs["quant_max"]
    if g.shape != x.shape:
        c.fail(f"grad has shape {list(g.shape)} but input has shape {list(x.shape)}; they must be equal", "grad",
               tf="`X` and `dY` are not the same size")
    if not (qmin <= 0 <= qmax):
        c.fail(f"quant_min={qmin}, quant_max={qmax}: the range must include 0 (quant_min <= 0 <= quant_max)",
               "quant_min", tf="Expecting `quant_min` <= 0 and `quant_max` >= 0" if spec.variant.per_channel else
               "`quant_min` should be less than or         equal to `quant_max`, and the quantization range "
               "should include 0.")
    for n, v in (("quant_min", qmin), ("quant_max", qmax)):
        if abs(v) > 2 ** 24:
            c.fail(f"{n}={v} is beyond the quantisation ranges qdq_compiler computes exactly in float32; allowed: "
                   f"-2^24 <= {n} <= 2^24", n)
    zp = arrays["zero_point"]
    with np.errstate(invalid="ignore"):
        bad = ~((zp >= qmin) & (zp <= qmax))
    if np.any(bad):
        c.fail(f"zero_point is outside [quant_min, quant_max] = [{qmin}, {qmax}]", "zero_point",
               tf="`zero_point` must be between `quant_min` and `quant_max`.")
    if spec.variant.per_channel:
        axis, scale = attrs["axis"], arrays["scale"]
        check_axis(c, axis, x.ndim)
        check_vectors(c, scale, zp)
        if scale.shape != zp.shape:
            c.fail(f"scale has {scale.size} elements but zero_point has {zp.size}", "zero_point",
                   tf="scale and zero-point need to have the same dimensions")
        if x.ndim and scale.size != x.shape[axis]:
            c.fail(f"scale has {scale.size} elements; expected {x.shape[axis]} (dimension {axis} of input)", "scale",
                   tf="dimensions of scale and zero-point are not consistent with input tensor")


def params(spec, attrs, dtype):
    return [("qmin", "f32", F32(attrs["quant_min"])), ("qmax", "f32", F32(attrs["quant_max"])),
            ("grad_factor", "f32", F32(attrs["grad_factor"]))]


RULES = {"torch-cpu": Rules(oracle, "aten_learnable_grad.mlir.j2", DTYPES, check=check, params=params,
                            fused_multiply_add=lambda spec, attrs, dtype: True)}


class AtenLearnableGrad(AtenFamily):
    name = "aten_learnable_grad"
    rules_by_semantics = RULES

    def wrong_dtype_words(self, spec, input_name, dtype):
        return f"Expected X_.scalar_type() == ScalarType::Float to be true, but got false.{ASSERT_TAIL}"

    def sum_terms(self, spec, arrays, attrs, name):
        """The per-element terms of a sum output, channels last (numerics.sum_within_bound's layout)."""
        (_, ds, dz), axis = _terms(spec, arrays, attrs)
        t = ds if name == "dScale" else dz
        return t if axis is None else np.moveaxis(t, axis, -1)

    def public_arguments(self, spec, kwargs):
        """PyTorch's conversions: with a bfloat16 (or, beyond PyTorch, float16) input every tensor becomes float32
        (else all must be float32: bind refuses others in PyTorch's words); beyond PyTorch, a float64 input is
        rounded to float32 here (``input.float()``), and then takes that path; the zero point rounded on the host
        (per-tensor: element 0, trunc(clamp(zp + 0.5)); per-channel: half to even, clamped); per-tensor scale
        element 0."""
        out = dict(kwargs)
        x = out.get("input")
        if isinstance(x, np.ndarray) and x.dtype == F64:
            with np.errstate(over="ignore"):
                out["input"] = x = x.astype(F32)   # nearest float32 (beyond its range: inf), as Tensor.float()
            widen = True
        else:
            widen = isinstance(x, np.ndarray) and dtypes.name_of(x.dtype) in WIDENED
        for name in ("grad", "scale", "zero_point"):
            v = out.get(name)
            if isinstance(v, (np.ndarray, np.generic)):
                v = np.asarray(v)
                if widen and dtypes.is_float(v.dtype):
                    v = v.astype(F32)
                elif v.dtype != F32:
                    raise QDQTypeError(f"{name} has dtype {v.dtype}; the learnable gradients take float32 (or any float "
                                   f"type beside a bfloat16, float16 or float64 input)", op=spec.name, arg=name, reference="PyTorch",
                                   tf_message=f"Expected {_TORCH_ARG[name]}.scalar_type() == ScalarType::Float to be "
                                              f"true, but got false.{ASSERT_TAIL}")
                out[name] = v
        if isinstance(x, np.ndarray) and x.size == 0 and all(isinstance(kwargs.get(n), (np.ndarray, np.generic))
                                                           for n in ("scale", "zero_point")):
            out["given"] = given_attr({n: kwargs[n] for n in ("scale", "zero_point")})   # PyTorch returns them
        qmin, qmax, zp = out.get("quant_min"), out.get("quant_max"), out.get("zero_point")
        if isinstance(zp, np.ndarray) and isinstance(qmin, int) and isinstance(qmax, int):
            with np.errstate(invalid="ignore"):
                if spec.variant.per_channel and np.isnan(zp).any():   # zero_point.round().to(kLong)'s words
                    raise QDQError("zero_point has a NaN; it must be a number within [quant_min, quant_max]",
                                   op=spec.name, arg="zero_point", reference="PyTorch",
                                   tf_message="value cannot be converted to type int64_t without overflow")
                if spec.variant.per_channel:
                    r = np.rint(zp)
                    out["zero_point"] = np.where(np.isnan(r), r, np.clip(r, qmin, qmax)).astype(F32)
                else:
                    z = zp.reshape(-1)[:1]
                    r = np.trunc(np.minimum(np.maximum((z + F32(0.5)).astype(F32), F32(qmin)), F32(qmax)))
                    out["zero_point"] = np.asarray(r.reshape(()) if r.size else np.float32(np.nan), F32)
        if not spec.variant.per_channel:
            s = out.get("scale")
            if isinstance(s, np.ndarray) and s.size:
                out["scale"] = np.asarray(s.reshape(-1)[0], F32)
        return out

    def public_results(self, spec, call, outputs):
        """PyTorch's shapes: an empty input's (X, scale, zero_point) as given; per-tensor sums as [1]; a 1-D input's per-channel sums as one 0-d total (ATen sums
        over an empty dim list, which reduces every dim). Each channel of a 1-D input holds one term, so its
        [C] partials are the terms themselves, and aten_sum adds them in PyTorch's order: its bits."""
        dx, ds, dz = outputs
        given = given_arrays(call.attrs.get("given", ""))
        if given:   # an empty input: PyTorch returns (X, scale, zero_point) as they came (its early return)
            return call.arrays["input"].copy(), given["scale"], given["zero_point"]
        if not spec.variant.per_channel:
            return dx, ds.reshape(1), dz.reshape(1)
        if call.data.ndim == 1:
            return dx, aten_sum.sum_all(ds, NUM_THREADS).reshape(()), aten_sum.sum_all(dz, NUM_THREADS).reshape(())
        return outputs

    def random_calls(self, spec, attrs, x, rng, special):
        calls = []
        axis = attrs.get("axis", 0)
        c = x.shape[axis] if spec.variant.per_channel and x.ndim else None
        for qmin, qmax in ((-128, 127), (0, 255), (-8, 7), (0, 1)):
            xi = special(x.copy(), 0.05)
            g = rng.standard_normal(x.shape).astype(F32)
            if c is None:
                scale, zp = np.array([rng.uniform(0.01, 0.2)], F32), np.array([rng.uniform(qmin, qmax)], F32)
            else:
                scale, zp = rng.uniform(0.01, 0.2, c).astype(F32), rng.uniform(qmin, qmax, c).astype(F32)
            calls.append(self.public_arguments(spec, {
                **attrs, "grad": g, "input": xi, "scale": scale, "zero_point": zp, "quant_min": qmin,
                "quant_max": qmax, "grad_factor": float(rng.choice([1.0, 0.5, 1 / 3]))}))
        return calls

    def bench_kwargs(self, spec, attrs, shape, rng):
        return self.random_calls(spec, attrs, rng.standard_normal(shape).astype(F32), rng, lambda a, s: a)[0]


_TORCH_ARG = {"grad": "dY_", "scale": "scale_", "zero_point": "zero_point_"}
FAMILY = AtenLearnableGrad()
_PER_TENSOR = (fixed("grad", "grad", "float32"), data("input"), scalar("scale", "scale", "float32", 0.1),
               scalar("zero_point", "zero_point", "float32", 0.0))
_PER_CHANNEL = (fixed("grad", "grad", "float32"), data("input"), fixed("scale", "scale", "float32", RANGE, 0.1),
                fixed("zero_point", "zero_point", "float32", RANGE, 0.0))
_RESULTS = (result("dX", "float32"),) + tuple(Output(n, RANGE, "float32") for n in OUTPUTS[1:])
_ATTRS = (attr("quant_min", int, -128), attr("quant_max", int, 127), attr("grad_factor", float, 1.0),
          attr("given", str, "", doc="set from the call: an empty input's scale and zero point as given (PyTorch "
               "returns them)", internal=True))

SPECS = (
    OpSpec("_fake_quantize_learnable_per_tensor_affine_backward", FAMILY, _PER_TENSOR, _ATTRS, _RESULTS, DTYPES,
           "LSQ's gradients (dX, dScale, dZeroPoint) of the learnable per-tensor fake quantization.",
           variant=Variant(), sum_outputs=OUTPUTS[1:], namespace="aten",
           signature=("grad", "input", "scale", "zero_point", "quant_min", "quant_max", "grad_factor"),
           public_defaults=(("grad_factor", 1.0),)),
    OpSpec("_fake_quantize_learnable_per_channel_affine_backward", FAMILY, _PER_CHANNEL,
           (attr("axis", int, 0),) + _ATTRS, _RESULTS, DTYPES,
           "LSQ's per-channel gradients (dX, dScale[C], dZeroPoint[C]).", variant=Variant(per_channel=True),
           sum_outputs=OUTPUTS[1:], namespace="aten",
           signature=("grad", "input", "scale", "zero_point", "axis", "quant_min", "quant_max", "grad_factor"),
           public_defaults=(("grad_factor", 1.0),)),
)
