"""NVFP4 under NVIDIA's recipe (semantics "ocp", ops/nvfp4_spec.py, templates/nvfp4_blocks.mlir.j2 and
nvfp4_decode.mlir.j2): worked by hand on two blocks, the clipped gradient, the compiled fake quantization and stored form
(``mx.nvfp4_quantize``, ``mx.nvfp4_dequantize``) against the NumPy reference on every target, the special tensors,
the CPU targets' subnormal limit measured, where torchao's recipe gives other bits, and bad input named.

Where the rest is covered: the validation matrix (`qdqc validate`, semantics ocp: NVFP4's fake quantization and
stored form, static and dynamic, a shorter last block along a middle axis, on cpu, vmvx and Vulkan)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, QDQTypeError
from targets_util import require as require_target

TARGETS = ["cpu", "vmvx", "vulkan"]


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view({4: np.uint32, 2: np.uint16, 1: np.uint8}[a.dtype.itemsize])


def _example():
    """Two blocks of 16 in a tensor whose amax is 2688 (s_enc = s_dec = 1)."""
    x = np.zeros((1, 32), np.float32)
    x[0, :5] = [2688.0, 1000.0, -0.0, 1.4, -12.5]
    x[0, 16:19] = [0.01, -0.004, 0.0]
    return x


def test_worked_by_hand():
    """Block 0: amax 2688, S = e4m3(2688 / 6) = 448, e = 1 / 448: 2688 -> 6, 1000 -> 2.23 -> 2 (896), -0 stays -0
    (TE's Python reference writes +0), 1.4 -> 0.003 -> 0, -12.5 -> -0.028 -> -0. Block 1: amax 0.01, d = 0.01 / 6 =
    0.00167, an E4M3 subnormal: the nearest multiple of 2^-9 is 2^-9 (code 1), e = 512: 0.01 -> 5.12 -> 6 (6 * 2^-9),
    -0.004 -> -2.05 -> -2, 0 -> 0."""
    x = _example()
    elements, scales, tensor_scale = q.oracle.mx.nvfp4_quantize(x)
    assert tensor_scale == np.float32(1.0)
    assert _bits(scales).tolist() == [[0x7E, 0x01]]                     # 448 and 2^-9
    assert elements[0, :5].astype(np.float32).tolist() == [6.0, 2.0, -0.0, 0.0, -0.0]
    assert _bits(elements)[0, 2] & 0x8                                    # -0 keeps its sign
    y = q.oracle.mx.fake_quantize(x, "nvfp4")
    assert y[0, :5].tolist() == [2688.0, 896.0, 0.0, 0.0, 0.0] and np.signbit(y[0, [2, 4]]).all()
    assert y[0, 16:19].tolist() == [6 * 2.0 ** -9, -2 * 2.0 ** -9, 0.0]


@pytest.mark.parametrize("target", TARGETS)
def test_clipped_gradient(target):
    """Clipped straight-through under NVIDIA's recipe: dy where |x| is within the block's largest value, (6 * S_b) *
    s_dec. The tensor's amax 2688 gives s_enc = 1 and block 0's scale 448: 2688 passes (though 2688 * fl(1 / 448) is
    one ulp above 6, which is why the bound is not |x * e_b| <= 6). Block 1's amax 25.5 gives 25.5 / 6 = 4.25, a tie
    between E4M3's 4 and 4.5 that rounds to 4: its largest value is 24, so 25.5 gets no gradient and 24 and -3 do.
    A NaN anywhere: no gradient."""
    require_target(target)
    x = np.zeros((1, 32), np.float32)
    x[0, :2] = 2688.0, -100.0
    x[0, 16:19] = 25.5, 24.0, -3.0
    dy = np.arange(1, 33, dtype=np.float32).reshape(1, 32)
    g = q.mx.fake_quantize_gradient(dy, x, "nvfp4", target=target)
    assert np.array_equal(_bits(g), _bits(q.oracle.mx.fake_quantize_gradient(dy, x, "nvfp4")))
    assert g[0, :2].tolist() == [1.0, 2.0] and g[0, 16:19].tolist() == [0.0, 18.0, 19.0]
    x[0, 5] = np.nan
    assert not q.mx.fake_quantize_gradient(dy, x, "nvfp4", target=target).any()
    y, vjp = q.mx.fake_quantize_vjp(np.ones((1, 16), np.float32), "nvfp4", target=target)
    assert vjp(np.ones((1, 16), np.float32))[0].tolist() == [[1.0] * 16]


def _cases(rng):
    x = (rng.standard_normal((6, 48)) * np.exp2(rng.integers(-20, 20, (6, 48)))).astype(np.float32)
    yield "mixed", x, -1
    yield "example", _example(), -1
    z = np.zeros((2, 32), np.float32)
    z[0, ::2] = -0.0
    yield "zeros", z, -1
    n = x.copy()
    n[1, 3] = np.nan
    yield "a NaN", n, -1
    i = x.copy()
    i[2, 5], i[3, 7] = np.inf, -np.inf
    yield "infinities", i, -1
    t = x.copy()
    t[0, :16] = rng.standard_normal(16) * 2.0 ** -135
    t[1, 16:32] *= 2.0 ** -60
    yield "tiny and subnormal blocks", t, -1
    yield "a middle axis, a shorter last block", rng.standard_normal((3, 37, 5)).astype(np.float32), 1
    for e in range(-100, 101, 50):
        yield f"scale 2^{e}", (rng.standard_normal((2, 32)) * 2.0 ** e).astype(np.float32), -1


@pytest.mark.parametrize("target", TARGETS)
def test_compiled_equals_reference(target):
    """fake_quantize, nvfp4_quantize (codes, E4M3 codes, tensor scale) and nvfp4_dequantize, bit for bit, and
    dequantize(quantize(x)) is fake_quantize(x)."""
    require_target(target)
    for name, x, axis in _cases(np.random.default_rng(1)):
        want = q.oracle.mx.fake_quantize(x, "nvfp4", axis=axis)
        assert np.array_equal(_bits(q.mx.fake_quantize(x, "nvfp4", axis=axis, target=target)), _bits(want)), name
        got = q.mx.nvfp4_quantize(x, axis=axis, target=target)
        ref = q.oracle.mx.nvfp4_quantize(x, axis=axis)
        for g, r in zip(got, ref):
            assert g.dtype == r.dtype and np.array_equal(_bits(g), _bits(r)), name
        assert np.array_equal(_bits(q.mx.nvfp4_dequantize(*got, axis=axis, target=target)), _bits(want)), name


@pytest.mark.parametrize("target", TARGETS)
def test_float16_and_bfloat16(target):
    require_target(target)
    x32 = np.random.default_rng(2).standard_normal((4, 32)).astype(np.float32)
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = x32.astype(dt)
        y = q.mx.fake_quantize(x, "nvfp4", target=target)
        assert y.dtype == dt and np.array_equal(_bits(y), _bits(q.oracle.mx.fake_quantize(x, "nvfp4")))


def test_special_tensors():
    """A NaN: every element 0x7FC00000, codes 0, block scales 0x7F, tensor scale 0x7FC00000. An infinity: the
    recipe's guard s_enc = 1, its block's scale 448 and the infinities +-6 * 448. Zeros: signed zeros and the
    tensor scale 1 / FLT_MAX = 2^-128 (bits 0x00200000; the CPU targets flush the quotient, the program does not)."""
    x = np.ones((2, 32), np.float32)
    x[1, 4] = np.nan
    y = q.mx.fake_quantize(x, "nvfp4")
    assert set(_bits(y).ravel().tolist()) == {0x7FC00000}
    e, s, ts = q.mx.nvfp4_quantize(x)
    assert not _bits(e).any() and set(_bits(s).ravel().tolist()) == {0x7F} and _bits(ts) == 0x7FC00000
    x[1, 4] = -np.inf
    e, s, ts = q.mx.nvfp4_quantize(x)
    assert ts == 1.0 and _bits(s)[1, 0] == 0x7E and e[1, 4] == -6.0
    assert q.mx.fake_quantize(x, "nvfp4")[1, 4] == -2688.0
    z = np.zeros((2, 32), np.float32)
    z[1] = -0.0
    assert np.array_equal(_bits(q.mx.fake_quantize(z, "nvfp4")), _bits(z))
    assert _bits(q.mx.nvfp4_quantize(z)[2]) == 0x00200000


@pytest.mark.parametrize("target", ["cpu", "vmvx"])
def test_cpu_subnormal_limit(target):
    """The CPU targets flush subnormals: a tensor whose amax is below 2688 * 2^-126 (its tensor scale subnormal)
    comes back otherwise (measured: most elements at amax 3 * 2^-120); from 3 * 2^-116 up it is exact (2^-149 to
    2^-80 swept when this was written; Vulkan exact throughout)."""
    require_target(target)
    rng = np.random.default_rng(3)
    for e, exact in ((-120, False), (-116, True), (-100, True)):
        x = (rng.standard_normal((4, 64)) * 2.0 ** e).astype(np.float32)
        x[0, 0] = np.float32(3 * 2.0 ** e)
        x = np.clip(x, -x[0, 0], x[0, 0])
        same = np.array_equal(_bits(q.mx.fake_quantize(x, "nvfp4", target=target)),
                              _bits(q.oracle.mx.fake_quantize(x, "nvfp4")))
        assert same == exact, e


def test_differs_from_torchaos_recipe():
    """torchao's multiplier (1 / pts) / scale and dequantizer pts * scale round otherwise than NVIDIA's 1 / (scale *
    s_dec) and (P * scale) * s_dec, and it clamps block scales at 2^-6: on random data some elements differ, by one
    ulp where both are normal."""
    x = np.random.default_rng(4).standard_normal((64, 64)).astype(np.float32)
    a, b = q.oracle.mx.fake_quantize(x, "nvfp4"), q.oracle.mx.fake_quantize(x, "nvfp4", semantics="torchao")
    diff = _bits(a).astype(np.int64) - _bits(b).astype(np.int64)
    assert 0 < np.count_nonzero(diff) < diff.size and np.abs(diff).max() == 1


def test_bad_input_is_named():
    x = np.ones((2, 32), np.float32)
    e, s, ts = q.oracle.mx.nvfp4_quantize(x)
    with pytest.raises(QDQTypeError, match="elements must be a NumPy array of float4_e2m1fn"):
        q.mx.nvfp4_dequantize(e.astype(np.float32), s, ts)
    with pytest.raises(QDQTypeError, match="scales must be a NumPy array of float8_e4m3fn"):
        q.mx.nvfp4_dequantize(e, s.astype(np.float32), ts)
    with pytest.raises(QDQError, match="scales has shape"):
        q.mx.nvfp4_dequantize(e, s[:, :1], ts)
    with pytest.raises(QDQError, match="tensor_scale"):
        q.mx.nvfp4_dequantize(e, s, np.ones(2, np.float32))
    with pytest.raises(QDQError, match="axis=2 is out of range"):
        q.mx.nvfp4_quantize(x, axis=2)
