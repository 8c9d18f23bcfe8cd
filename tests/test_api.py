"""TF's public wrappers: names, axis rule, gradients (spec 4.3), on the oracle and a compiled target."""
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError
from qdq_compiler.numerics import bit_equal

X = np.array([-2.0, -1.0, -0.3, 0.0, 0.4, 1.0, 1.7], np.float32)
TARGETS = ["oracle", "cpu"]


def f32(*v):
    return np.array(v, np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_v34_masked_gradient_of_quantize_and_dequantize_v2(target):
    y, vjp = q.quantize_and_dequantize_v2_vjp(X, -1.0, 1.0, range_given=True, target=target)
    assert bit_equal(y, f32(-1.007874, -1.0, -0.2992126, 0.0, 0.4015748, 1.0, 1.0))
    dx, dmin, dmax = vjp(np.ones_like(X))
    assert bit_equal(dx, f32(0, 1, 1, 1, 1, 1, 0))
    assert bit_equal(dmin, np.float32(0)) and bit_equal(dmax, np.float32(0))


@pytest.mark.parametrize("target", TARGETS)
def test_v35_mask_uses_the_arguments_even_when_the_range_comes_from_data(target):
    y, vjp = q.quantize_and_dequantize_v2_vjp(X, -0.5, 0.5, range_given=False, target=target)
    assert bit_equal(y, f32(-2.0, -1.0, -0.296875, 0.0, 0.40625, 1.0, 1.703125))
    assert bit_equal(vjp(np.ones_like(X))[0], f32(0, 0, 1, 1, 1, 0, 0))


@pytest.mark.parametrize("target", TARGETS)
def test_v36_quantize_and_dequantize_is_straight_through(target):
    y, vjp = q.quantize_and_dequantize_vjp(X, -1.0, 1.0, range_given=True, target=target)
    assert bit_equal(y, f32(-1.007874, -1.0, -0.2992126, 0.0, 0.4015748, 1.0, 1.0))
    (dx,) = vjp(np.full_like(X, 3.0))
    assert bit_equal(dx, np.full_like(X, 3.0))


@pytest.mark.parametrize("target", TARGETS)
def test_v65_fake_quant_vars_gradient(target):
    y, vjp = q.fake_quant_with_min_max_vars_vjp(X, np.float32(-1), np.float32(1), target=target)
    assert bit_equal(y, f32(-0.9960785, -0.9960785, -0.29803923, 0.0, 0.40000004, 1.0039216, 1.0039216))
    dx, dmin, dmax = vjp(np.ones_like(X))
    assert bit_equal(dx, f32(0, 0, 1, 1, 1, 1, 0))
    assert bit_equal(dmin, np.float32(2)) and bit_equal(dmax, np.float32(1))


@pytest.mark.parametrize("target", TARGETS)
def test_args_and_per_channel_vjp_match_their_gradient_ops(target):
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    dy = np.arange(24, dtype=np.float32).reshape(4, 6)
    y, vjp = q.fake_quant_with_min_max_args_vjp(x, min=-1.0, max=2.0, num_bits=4, target=target)
    assert bit_equal(y, q.oracle.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, min=-1.0, max=2.0, num_bits=4))
    assert bit_equal(vjp(dy)[0], q.oracle.raw_ops.FakeQuantWithMinMaxArgsGradient(
        gradients=dy, inputs=x, min=-1.0, max=2.0, num_bits=4))
    mn, mx = np.full(6, -1, np.float32), np.full(6, 1.5, np.float32)
    y, vjp = q.fake_quant_with_min_max_vars_per_channel_vjp(x, mn, mx, target=target)
    want = q.oracle.raw_ops.FakeQuantWithMinMaxVarsPerChannelGradient(gradients=dy, inputs=x, min=mn, max=mx)
    for g, w in zip(vjp(dy), want):
        assert bit_equal(g, w)


def test_wrapper_axis_rule():
    """axis=None is per-tensor (op axis -1); a negative axis counts from the end (per-channel)."""
    x = np.array([[-1.0, 0.5, 0.25], [0.3, -0.2, 2.0]], np.float32)
    per_tensor = q.oracle.raw_ops.QuantizeAndDequantizeV4(input=x, input_min=0.0, input_max=0.0, axis=-1)
    last_dim = q.oracle.raw_ops.QuantizeAndDequantizeV4(input=x, input_min=np.zeros(3, np.float32),
                                                       input_max=np.zeros(3, np.float32), axis=1)
    assert bit_equal(q.quantize_and_dequantize_v2(x, 0.0, 0.0, axis=None, target="oracle"), per_tensor)
    got = q.quantize_and_dequantize_v2(x, np.zeros(3, np.float32), np.zeros(3, np.float32), axis=-1, target="cpu")
    assert bit_equal(got, last_dim)
    assert not bit_equal(per_tensor, last_dim)


def test_negative_axis_needs_a_rank():
    with pytest.raises(QDQError, match="negative axis"):
        q.quantize_and_dequantize_v2(np.float32(1.0), 0.0, 0.0, axis=-1, target="oracle")


def test_wrappers_build_the_ops_tf_builds():
    """quantize_and_dequantize is V2 and quantize_and_dequantize_v2 is V4: same forward bits."""
    a = q.quantize_and_dequantize(X, -1.0, 1.0, range_given=True, round_mode="HALF_UP", target="oracle")
    b = q.oracle.raw_ops.QuantizeAndDequantizeV2(input=X, input_min=-1.0, input_max=1.0, range_given=True,
                                                 round_mode="HALF_UP")
    assert bit_equal(a, b)


def test_raw_op_signatures_mirror_tf():
    import inspect
    sig = inspect.signature(q.raw_ops.QuantizeAndDequantizeV2)
    assert list(sig.parameters)[:3] == ["input", "input_min", "input_max"]
    assert sig.parameters["round_mode"].default == "HALF_TO_EVEN" and sig.parameters["target"].default == "cpu"
    res = q.oracle.raw_ops.FakeQuantWithMinMaxVarsGradient(gradients=X, inputs=X, min=-1.0, max=1.0)
    assert res._fields == ("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max")


def test_template_bug_reports_the_line():
    from qdq_compiler.emit import verify
    from qdq_compiler.errors import TemplateError
    text = "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n  %y = stablehlo.bogus %x : tensor<f32>\n  return %y : tensor<f32>\n}\n"
    with pytest.raises(TemplateError) as info:
        verify(text, what="probe")
    assert "line 2" in str(info.value) and "stablehlo.bogus" in str(info.value)
