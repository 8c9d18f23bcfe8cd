"""TF's public Python wrappers, with TF's names and behaviour, plus JAX-style ``*_vjp`` helpers.

Every function takes ``target=``: "cpu" (default), another compiled target, or "oracle" for the
NumPy reference, and ``semantics=``: "tf-cpu" (default, TF's CPU kernels) or "tf-xla" (its XLA lowering). A ``*_vjp`` helper returns ``(y, vjp)`` where ``vjp(dy)`` gives the gradients with
respect to the differentiable inputs, using the gradient TF registers for that op.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from . import raw_ops as _raw
from .errors import QDQError, QDQTypeError
from .ops.qdq import wrapper_axis
from .semantics import DEFAULT as DEFAULT_SEMANTICS

# -- TF's public wrappers (tf.quantization.*): TF's positional order and defaults, then target/semantics ----


def quantize_and_dequantize(input, input_min, input_max, signed_input=True, num_bits=8, range_given=False,
                            round_mode="HALF_TO_EVEN", name=None, narrow_range=False, axis=None, *, target="cpu",
                            semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.quantize_and_dequantize``: the V2 op; its gradient is straight-through. ``axis``:
    None is per-tensor, a negative axis counts from the end (TF's wrapper rule)."""
    return _raw.QuantizeAndDequantizeV2(input=input, input_min=input_min, input_max=input_max,
                                        signed_input=signed_input, num_bits=num_bits, range_given=range_given,
                                        round_mode=round_mode, narrow_range=narrow_range,
                                        axis=wrapper_axis(input, axis), target=target, semantics=semantics)


def quantize_and_dequantize_v2(input, input_min, input_max, signed_input=True, num_bits=8, range_given=False,
                               round_mode="HALF_TO_EVEN", name=None, narrow_range=False, axis=None, *, target="cpu",
                               semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.quantize_and_dequantize_v2``: the V4 op; its gradient is masked (V4Grad).
    ``axis``: None is per-tensor, a negative axis counts from the end (TF's wrapper rule)."""
    return _raw.QuantizeAndDequantizeV4(input=input, input_min=input_min, input_max=input_max,
                                        signed_input=signed_input, num_bits=num_bits, range_given=range_given,
                                        round_mode=round_mode, narrow_range=narrow_range,
                                        axis=wrapper_axis(input, axis), target=target, semantics=semantics)


def fake_quant_with_min_max_args(inputs, min=-6.0, max=6.0, num_bits=8, narrow_range=False, name=None, *,
                                 target="cpu", semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.fake_quant_with_min_max_args``: the FakeQuantWithMinMaxArgs op."""
    return _raw.FakeQuantWithMinMaxArgs(inputs=inputs, min=min, max=max, num_bits=num_bits, narrow_range=narrow_range,
                                        target=target, semantics=semantics)


def fake_quant_with_min_max_args_gradient(gradients, inputs, min=-6.0, max=6.0, num_bits=8, narrow_range=False,
                                          name=None, *, target="cpu", semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.fake_quant_with_min_max_args_gradient``: the FakeQuantWithMinMaxArgsGradient op."""
    return _raw.FakeQuantWithMinMaxArgsGradient(gradients=gradients, inputs=inputs, min=min, max=max,
                                                num_bits=num_bits, narrow_range=narrow_range, target=target,
                                                semantics=semantics)


def fake_quant_with_min_max_vars(inputs, min, max, num_bits=8, narrow_range=False, name=None, *, target="cpu",
                                 semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.fake_quant_with_min_max_vars``: the FakeQuantWithMinMaxVars op."""
    return _raw.FakeQuantWithMinMaxVars(inputs=inputs, min=min, max=max, num_bits=num_bits, narrow_range=narrow_range,
                                        target=target, semantics=semantics)


def fake_quant_with_min_max_vars_gradient(gradients, inputs, min, max, num_bits=8, narrow_range=False, name=None, *,
                                          target="cpu", semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.fake_quant_with_min_max_vars_gradient``: the FakeQuantWithMinMaxVarsGradient op."""
    return _raw.FakeQuantWithMinMaxVarsGradient(gradients=gradients, inputs=inputs, min=min, max=max,
                                                num_bits=num_bits, narrow_range=narrow_range, target=target,
                                                semantics=semantics)


def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8, narrow_range=False, name=None, *,
                                             target="cpu", semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.fake_quant_with_min_max_vars_per_channel``: the FakeQuantWithMinMaxVarsPerChannel op."""
    return _raw.FakeQuantWithMinMaxVarsPerChannel(inputs=inputs, min=min, max=max, num_bits=num_bits,
                                                  narrow_range=narrow_range, target=target, semantics=semantics)


def fake_quant_with_min_max_vars_per_channel_gradient(gradients, inputs, min, max, num_bits=8, narrow_range=False,
                                                      name=None, *, target="cpu", semantics=DEFAULT_SEMANTICS):
    """``tf.quantization.fake_quant_with_min_max_vars_per_channel_gradient``: the
    FakeQuantWithMinMaxVarsPerChannelGradient op."""
    return _raw.FakeQuantWithMinMaxVarsPerChannelGradient(gradients=gradients, inputs=inputs, min=min, max=max,
                                                          num_bits=num_bits, narrow_range=narrow_range, target=target,
                                                          semantics=semantics)


# -- JAX-style (y, vjp) helpers, each from the gradient TF registers for the op ------------------------------


def quantize_and_dequantize_vjp(input, input_min, input_max, *, target="cpu", **kw):
    """(y, vjp) for ``quantize_and_dequantize``: vjp(dy) -> (dy,), straight through (TF's V2 gradient)."""
    y = quantize_and_dequantize(input, input_min, input_max, target=target, **kw)

    def vjp(dy):
        if isinstance(dy, (str, bytes)) or dy is None:
            raise QDQTypeError(f"dy={dy!r} must be an array of {y.dtype}", arg="dy")
        try:
            g = np.asarray(dy)
        except (TypeError, ValueError) as e:
            raise QDQTypeError(f"dy cannot be converted to an array of {y.dtype}: {e}", arg="dy") from None
        if g.dtype.kind not in "iu" and not dtypes.is_float(g.dtype):
            raise QDQTypeError(f"dy has element type {g.dtype}; expected {y.dtype}", arg="dy")
        if g.shape != y.shape:
            raise QDQError(f"dy has shape {list(g.shape)} but the output has shape {list(y.shape)}", arg="dy")
        return (g.astype(y.dtype),)
    return y, vjp


def quantize_and_dequantize_v2_vjp(input, input_min, input_max, *, target="cpu", **kw):
    """(y, vjp) for ``quantize_and_dequantize_v2``: vjp(dy) -> (d_input, d_min, d_max) from V4Grad.

    As in TF, the mask uses the input_min/input_max arguments even when range_given=False.
    """
    y = quantize_and_dequantize_v2(input, input_min, input_max, target=target, **kw)
    axis = wrapper_axis(input, kw.get("axis"))

    def vjp(dy):
        return tuple(_raw.QuantizeAndDequantizeV4Grad(gradients=dy, input=input, input_min=input_min,
                                                      input_max=input_max, axis=axis, target=target,
                                                      semantics=kw.get("semantics", DEFAULT_SEMANTICS)))
    return y, vjp


def fake_quant_with_min_max_args_vjp(inputs, *, target="cpu", **attrs):
    """(y, vjp): vjp(dy) -> (d_inputs,) from FakeQuantWithMinMaxArgsGradient."""
    y = fake_quant_with_min_max_args(inputs, target=target, **attrs)
    return y, lambda dy: (fake_quant_with_min_max_args_gradient(dy, inputs, target=target, **attrs),)


def fake_quant_with_min_max_vars_vjp(inputs, min, max, *, target="cpu", **attrs):
    """(y, vjp): vjp(dy) -> (d_inputs, d_min, d_max) from FakeQuantWithMinMaxVarsGradient."""
    y = fake_quant_with_min_max_vars(inputs, min, max, target=target, **attrs)
    return y, lambda dy: tuple(fake_quant_with_min_max_vars_gradient(dy, inputs, min, max, target=target, **attrs))


def fake_quant_with_min_max_vars_per_channel_vjp(inputs, min, max, *, target="cpu", **attrs):
    """(y, vjp): vjp(dy) -> (d_inputs, d_min, d_max) from FakeQuantWithMinMaxVarsPerChannelGradient."""
    y = fake_quant_with_min_max_vars_per_channel(inputs, min, max, target=target, **attrs)
    return y, lambda dy: tuple(fake_quant_with_min_max_vars_per_channel_gradient(dy, inputs, min, max, target=target,
                                                                                 **attrs))
