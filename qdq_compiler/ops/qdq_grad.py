"""QuantizeAndDequantizeV4Grad: the specs and every rule of the family.

TF 2.21's kernel (spec 4.1): the incoming gradient times the inclusive mask on the RAW range
(input_min <= input <= input_max, no scale adjustment), per-tensor or per-channel; the gradients of
input_min/input_max are zeros.
"""
from __future__ import annotations

import numpy as np

from ..errors import axes_text
from ..numerics import flush, three_d
from .family import Family
from .qdq import AXIS, DTYPES, TENSOR_INPUTS, XLA_DTYPES, check_axis_at_least_minus_one, cpu_dtype_hint
from .rules import Rules
from .spec import OpSpec, data, per_channel_result, result


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


def check(c, spec, arrays, attrs):
    g, x, mn, mx = arrays["gradients"], arrays["input"], arrays["input_min"], arrays["input_max"]
    axis, rank = attrs["axis"], x.ndim
    check_axis_at_least_minus_one(c, axis, rank)
    if g.shape != x.shape:
        c.fail(f"gradients has shape {list(g.shape)} but input has shape {list(x.shape)}; they must be equal",
               "gradients", tf="gradient and input must be the same size")
    if axis >= rank:
        c.fail(f"axis={axis} is out of range for an input of rank {rank}; allowed: {axes_text(rank)}", "axis",
               tf=f"Axis should be -1 or 0 or a positive value less than {rank}but given axis value was {axis}")
    for n, t, short in (("input_min", mn, "min"), ("input_max", mx, "max")):
        if t.ndim > 1:
            c.fail(f"{n} must be rank 0 or 1, got rank {t.ndim}", n,
                   tf=f"Input {short} tensor must have dimension 0 or 1. Received {t.ndim}.")
    if axis >= 0:
        for n, t, short in (("input_min", mn, "min"), ("input_max", mx, "max")):
            if t.ndim == 0:
                c.fail(f"{n} must be a vector of length {x.shape[axis]} when axis={axis}, got a scalar", n,
                       tf=f"Shape must be rank 1 for {n}_tensor when the axis is specified")
            if t.shape[0] != x.shape[axis]:
                c.fail(f"{n} must be a vector of length {x.shape[axis]} (dimension {axis} of the input), "
                       f"got shape {list(t.shape)}", n,
                       tf=f"{short} has incorrect size, expected {x.shape[axis]} was {t.size}")
    else:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.ndim != 0:
                c.fail(f"{n} must be a scalar when axis=-1, got shape {list(t.shape)}", n,
                       tf=f"{n} must be a scalar if axis is unspecified")


def oracle(call):
    # 16-bit types: the float32 kernel on the exact widened values (a float16 subnormal is a normal
    # float32, so DAZ leaves it), the result narrowed back (exact: a gradient or a zero).
    wide = np.float32 if call.dtype.name in ("float16", "bfloat16") else call.dtype
    arr = {n: a.astype(wide) for n, a in call.arrays.items()}
    outs = qdq_v4_grad(arr["gradients"], arr["input"], arr["input_min"], arr["input_max"],
                       axis=call.per_channel_axis())
    return tuple(o.astype(call.dtype) for o in outs)


# XLA has no V4Grad kernel. Its mask is a pair of comparisons and a select, exact in any type, so under
# tf-xla it is the same definition in the types XLA's forward ops take (README, semantics).
RULES = {"tf-cpu": Rules(oracle, "qdq_grad.mlir.j2", DTYPES, check=check, dtype_hint=cpu_dtype_hint),
         "tf-xla": Rules(oracle, "qdq_grad.mlir.j2", XLA_DTYPES, check=check)}


class QuantizeAndDequantizeGrad(Family):
    name = "qdq_grad"
    rules_by_semantics = RULES

    def matrix_variants(self, spec):
        return [{"axis": -1}, {"axis": 1}]

    def random_calls(self, spec, attrs, x, rng, special):
        dt, shape = x.dtype, x.shape
        axis = attrs.get("axis", -1)
        pshape = () if axis == -1 else (shape[axis],)
        lo = (-rng.random(pshape) * 2 - 0.1).astype(dt)
        hi = (rng.random(pshape) * 2 + 0.1).astype(dt)
        xi = special(x.copy(), 2.0 / 255)
        return [{"input": xi, "input_min": lo, "input_max": hi,
                 "gradients": rng.integers(-8, 9, shape).astype(dt), "axis": axis}]


FAMILY = QuantizeAndDequantizeGrad()

SPECS = (
    OpSpec("QuantizeAndDequantizeV4Grad", FAMILY, (data("gradients", "grad"),) + TENSOR_INPUTS, (AXIS,),
           (result("input_backprop"), per_channel_result("input_min_backprop"), per_channel_result("input_max_backprop")),
           DTYPES,
           "Gradient of V4: gradients masked by input_min <= input <= input_max (raw range, inclusive).",
           gradient_of="QuantizeAndDequantizeV4"),
)
