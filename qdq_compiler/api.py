"""TF's public Python wrappers, with TF's names and behaviour, plus JAX-style ``*_vjp`` helpers.

Every function takes ``target=``: "cpu" (default), another compiled target, or "oracle" for the
NumPy reference, and ``semantics=``: "tf-cpu" (default, TF's CPU kernels) or "tf-xla" (its XLA lowering). A ``*_vjp`` helper returns ``(y, vjp)`` where ``vjp(dy)`` gives the gradients with
respect to the differentiable inputs, using the gradient TF registers for that op.
"""
from __future__ import annotations

import numpy as np

from . import ops
from . import raw_ops as _raw
from .errors import QDQError, QDQTypeError
from .semantics import DEFAULT as DEFAULT_SEMANTICS
from .ops.qdq import wrapper_axis


def _wrappers():
    """TF's public wrappers, one per ``OpSpec.tf_wrappers`` entry, made by the op's family."""
    out = {}
    for spec in ops.OPS.values():
        for name in spec.tf_wrappers:
            out[name] = spec.family.tf_wrapper(spec, name, getattr(_raw, spec.name))
    return out


_W = _wrappers()
globals().update(_W)  # quantize_and_dequantize, fake_quant_with_min_max_args, ...
_axis_for_op = wrapper_axis


def quantize_and_dequantize_vjp(input, input_min, input_max, *, target="cpu", **kw):
    """(y, vjp) for ``quantize_and_dequantize``: vjp(dy) -> (dy,), straight through (TF's V2 gradient)."""
    y = _W["quantize_and_dequantize"](input, input_min, input_max, target=target, **kw)

    def vjp(dy):
        if isinstance(dy, (str, bytes)) or dy is None:
            raise QDQTypeError(f"dy={dy!r} must be an array of {y.dtype}", arg="dy")
        try:
            g = np.asarray(dy)
        except (TypeError, ValueError) as e:
            raise QDQTypeError(f"dy cannot be converted to an array of {y.dtype}: {e}", arg="dy") from None
        if g.dtype.kind not in "fiu" and g.dtype.name not in ("float16", "bfloat16"):
            raise QDQTypeError(f"dy has element type {g.dtype}; expected {y.dtype}", arg="dy")
        if g.shape != y.shape:
            raise QDQError(f"dy has shape {list(g.shape)} but the output has shape {list(y.shape)}", arg="dy")
        return (g.astype(y.dtype),)
    return y, vjp


def quantize_and_dequantize_v2_vjp(input, input_min, input_max, *, target="cpu", **kw):
    """(y, vjp) for ``quantize_and_dequantize_v2``: vjp(dy) -> (d_input, d_min, d_max) from V4Grad.

    As in TF, the mask uses the input_min/input_max arguments even when range_given=False.
    """
    y = _W["quantize_and_dequantize_v2"](input, input_min, input_max, target=target, **kw)
    axis = _axis_for_op(input, kw.get("axis"))

    def vjp(dy):
        return tuple(_raw.QuantizeAndDequantizeV4Grad(gradients=dy, input=input, input_min=input_min,
                                                      input_max=input_max, axis=axis, target=target,
                                                      semantics=kw.get("semantics", DEFAULT_SEMANTICS)))
    return y, vjp


def fake_quant_with_min_max_args_vjp(inputs, *, target="cpu", **attrs):
    """(y, vjp): vjp(dy) -> (d_inputs,) from FakeQuantWithMinMaxArgsGradient."""
    y = _W["fake_quant_with_min_max_args"](inputs, target=target, **attrs)
    return y, lambda dy: (_W["fake_quant_with_min_max_args_gradient"](dy, inputs, target=target, **attrs),)


def fake_quant_with_min_max_vars_vjp(inputs, min, max, *, target="cpu", **attrs):
    """(y, vjp): vjp(dy) -> (d_inputs, d_min, d_max) from FakeQuantWithMinMaxVarsGradient."""
    y = _W["fake_quant_with_min_max_vars"](inputs, min, max, target=target, **attrs)
    return y, lambda dy: tuple(_W["fake_quant_with_min_max_vars_gradient"](dy, inputs, min, max, target=target, **attrs))


def fake_quant_with_min_max_vars_per_channel_vjp(inputs, min, max, *, target="cpu", **attrs):
    """(y, vjp): vjp(dy) -> (d_inputs, d_min, d_max) from FakeQuantWithMinMaxVarsPerChannelGradient."""
    y = _W["fake_quant_with_min_max_vars_per_channel"](inputs, min, max, target=target, **attrs)
    return y, lambda dy: tuple(_W["fake_quant_with_min_max_vars_per_channel_gradient"](dy, inputs, min, max, target=target,
                                                                                 **attrs))
