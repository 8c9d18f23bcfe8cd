"""NVFP4 fake quantization compiled (``qdq_compiler.mx.fake_quantize(x, "nvfp4", semantics="torchao")``,
templates/nvfp4_blocks.mlir.j2) against torchao 0.18.0: its two-level goldens (the per-tensor scale from the
tensor's amax) through the compiled program on every target, blocks along any axis with a shorter last block, the
special tensors, the CPU targets' subnormal limit measured, and bad input named.

Where the rest is covered: the NumPy reference against every NVFP4 golden (tests/test_mx_numerics.py); the
validation matrix (`qdqc validate --semantics torchao`: two NVFP4 variants, static and dynamic, on cpu, vmvx and
Vulkan, blocks from 2^-40 to 2^40 with zero, subnormal and infinite blocks)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError
from qdq_compiler.ops import mx_fake_quant as MF
from targets_util import require as require_target

GOLDENS = json.loads((Path(MF.__file__).resolve().parent.parent / "goldens" / "mx" / "torchao.json").read_text())
TWO_LEVEL = [c for c in GOLDENS["cases"] if c["elem"] == "nvfp4" and c["scale_rule"] == "nvfp4_per_tensor"
             and "fixed_pts" not in c["tags"] and "error" not in c]


def _u32(a):
    return np.asarray(a, np.float32).view(np.uint32)


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
def test_torchaos_two_level_goldens_compiled(target):
    """Every two-level golden (32 cases: random magnitudes, amax at and around powers of two, ties, zeros, NaN,
    infinities, a subnormal amax, float32's largest): torchao's bits, but where torch's NaN * NaN is not a function
    of its operands (a NaN tensor: its vector loop and scalar tail pick different NaNs; NaN against NaN there)."""
    require_target(target)
    assert len(TWO_LEVEL) >= 30
    for c in TWO_LEVEL:
        x = np.array(c["x"], np.uint64).astype(np.uint32).view(np.float32).reshape(c["shape"])
        want = np.array(c["dequantized"], np.uint64).astype(np.uint32).reshape(c["shape"])
        got = _u32(q.mx.fake_quantize(x, "nvfp4", semantics="torchao", target=target))
        nan_tensor = np.isnan(x).any()
        differ = got != want
        if nan_tensor:
            differ &= ~(np.isnan(got.view(np.float32)) & np.isnan(want.view(np.float32)))
        assert not differ.any(), (c["id"], c["tags"])


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
def test_any_axis_and_the_special_tensors(target):
    """Blocks of 16 along a middle axis with a shorter last block, and the special tensors as torchao gives them:
    an infinity (0xFFF00000 in its block, 0xFFC00000 elsewhere), a NaN (0x7FC00000 everywhere), zeros
    (0xFFF00000: 0 / 0 in the block scales)."""
    require_target(target)
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 35, 2)) * np.exp2(rng.integers(-20, 20, (3, 35, 2)))).astype(np.float32)
    want = q.oracle.mx.fake_quantize(x, "nvfp4", axis=1, semantics="torchao")
    assert np.array_equal(_u32(q.mx.fake_quantize(x, "nvfp4", axis=1, semantics="torchao", target=target)), _u32(want))
    y = np.ones((2, 32), np.float32)
    y[0, 3] = np.inf
    got = _u32(q.mx.fake_quantize(y, "nvfp4", semantics="torchao", target=target))
    assert set(got[0, :16].tolist()) == {0xFFF00000} and set(got[:, 16:].ravel().tolist()) == {0xFFC00000}
    y[0, 3] = np.nan
    assert set(_u32(q.mx.fake_quantize(y, "nvfp4", semantics="torchao", target=target)).ravel().tolist()) == {0x7FC00000}
    z = _u32(q.mx.fake_quantize(np.zeros((2, 32), np.float32), "nvfp4", semantics="torchao", target=target))
    assert set(z.ravel().tolist()) == {0xFFF00000}


def test_the_cpu_targets_subnormal_limit():
    """Measured: the CPU targets flush float32 subnormals, so a tensor whose amax is below 2688 * 2^-126 (its
    per-tensor scale subnormal) comes back wrong there (every element NaN at 2^-130, zeros at 2^-118), while
    amax 2^-100 and above is exact (the products and block scales stay normal); Vulkan keeps subnormals."""
    base = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    for e in (-100, -60, 0, 60, 100):
        x = (base * np.float32(2.0 ** e)).astype(np.float32)
        want = q.oracle.mx.fake_quantize(x, "nvfp4", semantics="torchao")
        assert np.array_equal(_u32(q.mx.fake_quantize(x, "nvfp4", semantics="torchao")), _u32(want)), e
    tiny = (base * np.float32(2.0 ** -130)).astype(np.float32)
    got = q.mx.fake_quantize(tiny, "nvfp4", semantics="torchao")
    assert np.isnan(got).all() and not np.isnan(q.oracle.mx.fake_quantize(tiny, "nvfp4", semantics="torchao")).any()


def test_bad_input_is_named():
    x = np.ones((2, 32), np.float32)
    assert q.mx.fake_quantize(x, "nvfp4", semantics="torchao").shape == (2, 32)   # blocks of 16 by default
    with pytest.raises(QDQError, match="elem='nvfp4' has blocks of 16"):
        q.mx.fake_quantize(x, "nvfp4", block_size=32, semantics="torchao")
    with pytest.raises(QDQError, match="elem='nvfp4' has blocks of 16"):
        q.mx.fake_quantize(x, "nvfp4", scale_rule="rceil", semantics="torchao")
    with pytest.raises(QDQError, match=r"mx.nvfp4_quantize\(x\) returns \(elements, scales, tensor_scale\)"):
        q.mx.quantize(x, "nvfp4")
    with pytest.raises(QDQError, match="torchao 0.18.0 defines no gradient"):
        q.mx.fake_quantize_gradient(x, x, "nvfp4", semantics="torchao")
    with pytest.raises(QDQError, match="NVFP4's stored form is NVIDIA's recipe here"):
        q.mx.nvfp4_quantize(x, semantics="torchao")
