"""MX fake quantization's gradients: ``qdq_compiler.mx.fake_quantize_gradient`` (clipped straight-through, compiled,
templates/mx_fake_quant.mlir.j2's "gradient" kind) against its NumPy reference on every target, worked by hand,
and ``fake_quantize_vjp`` (clipped or straight through) with bad input named.

Where the rest is covered: the validation matrix (`qdqc validate --ops MXFakeQuantizeGradient`: each format once,
static and dynamic, float16 and bfloat16, random blocks with specials, on cpu, vmvx and Vulkan), a lit e2e case per
target."""
from __future__ import annotations

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, QDQTypeError
from qdq_compiler.ops import mx_fake_quant as MF
from checks import compile_ahead
from targets_util import require as require_target


def _x(shape, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-130, 120, shape[:1] + (1,) * (len(shape) - 1))))
    x = x.astype(np.float32)
    x.reshape(-1)[:3] = np.nan, 7.0, -0.0
    return x, rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
def test_clipped_gradient_is_the_references_bits(target):
    """Every format, one rule each in turn (each rule's scale is fake_quantize's, tested rule by rule in
    tests/test_mx.py), along the last axis and a ragged middle one: the mask |x| <= max * X as the reference
    computes it in float64."""
    require_target(target)
    cases = [(elem, rule, shape, axis, *_x(shape, i)) for i, elem in enumerate(MF.MX_ELEMS)
             for shape, axis in (((4, 64), -1), ((3, 33, 2), 1)) for rule in MF.SCALE_RULES[i % 4:][:1]]
    compile_ahead(lambda c=c: q.mx.fake_quantize_gradient(c[5], c[4], c[0], axis=c[3], scale_rule=c[1], target=target)
                  for c in cases)
    for elem, rule, shape, axis, x, dy in cases:
        got = q.mx.fake_quantize_gradient(dy, x, elem, axis=axis, scale_rule=rule, target=target)
        want = q.oracle.mx.fake_quantize_gradient(dy, x, elem, axis=axis, scale_rule=rule)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (elem, rule, shape)


def test_the_range_by_hand():
    """MXFP4, amax 7: floor gives X = 1, range 6 (7 is clamped: gradient 0); ceil gives X = 2, range 12 (all pass);
    a NaN block passes nothing; -0 in dy stays -0 where it passes."""
    x = np.zeros((2, 32), np.float32)
    x[0, :3] = 7.0, -6.0, 0.1
    x[1, :2] = np.nan, 1.0
    dy = np.ones_like(x)
    dy[0, 1] = -0.0
    g = q.mx.fake_quantize_gradient(dy, x, "mxfp4_e2m1")
    assert g[0, :3].tolist() == [0.0, 0.0, 1.0] and g.view(np.uint32)[0, 1] == 0x80000000 and not g[1].any()
    ceil = q.mx.fake_quantize_gradient(dy, x, "mxfp4_e2m1", scale_rule="ceil")
    assert np.array_equal(ceil[0].view(np.uint32), dy[0].view(np.uint32))


def test_vjp_clipped_and_straight_through():
    x, dy = _x((4, 64), 9)
    y, vjp = q.mx.fake_quantize_vjp(x, "mxfp8_e4m3", scale_rule="even")
    assert np.array_equal(y.view(np.uint32), q.mx.fake_quantize(x, "mxfp8_e4m3", scale_rule="even").view(np.uint32))
    (dx,) = vjp(dy)
    assert np.array_equal(dx, q.mx.fake_quantize_gradient(dy, x, "mxfp8_e4m3", scale_rule="even"))
    y, vjp = q.mx.fake_quantize_vjp(x, "mxfp4_e2m1", gradient="ste", rounding="stochastic", seed=5)
    assert np.array_equal(vjp(dy)[0], dy)
    y, vjp = q.oracle.mx.fake_quantize_vjp(x, "mxint8", rounding="stochastic", seed=5)
    assert np.array_equal(vjp(dy)[0], q.oracle.mx.fake_quantize_gradient(dy, x, "mxint8"))


def test_bad_input_is_named():
    x, dy = _x((2, 32), 1)
    with pytest.raises(QDQError, match="gradient='exact' is not known; allowed: clipped, ste"):
        q.mx.fake_quantize_vjp(x, "mxfp8_e4m3", gradient="exact")
    _, vjp = q.mx.fake_quantize_vjp(x, "mxfp8_e4m3")
    with pytest.raises(QDQError, match=r"dy has shape \[2, 31\] but the output has shape \[2, 32\]"):
        vjp(dy[:, :31])
    with pytest.raises(QDQTypeError, match="dy=None must be an array of float32"):
        vjp(None)
    with pytest.raises(QDQError, match=r"gradients has shape \[2, 31\] but x has shape \[2, 32\]"):
        q.mx.fake_quantize_gradient(dy[:, :31], x, "mxfp8_e4m3")
    with pytest.raises(QDQError, match="torchao 0.18.0 defines no gradient"):
        q.mx.fake_quantize_gradient(dy, x, "mxfp8_e4m3", semantics="torchao")
