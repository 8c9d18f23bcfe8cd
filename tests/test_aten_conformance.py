"""aten conformance (issue 48) against PyTorch 2.13: 0-d inputs (0-d results), the learnable backward's early return on
an empty input, zero points outside the range in every per-tensor form, fused_moving_avg_obs_fake_quant per row on
any rank, ch_axis and empty input; and TestFusedObsFakeQuant (PyTorch's test_workflow_ops.py) ported. Their golden
cases (tags "zero-d", "empty-lsq", "zp-range", "per-row-nd", "ported"; tools/goldens/aten_torch_more.py) run bit for
bit in test_aten.py's test_oracle_matches_pytorch and test_compiled_matches_pytorch; here, what they cover."""
from __future__ import annotations

import collections

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, goldens
from qdq_compiler.numerics import bit_equal

from targets_util import require

F32, I32 = np.float32, np.int32
OBS = "fused_moving_avg_obs_fake_quant"
FUSED_TESTS = ("test_fused_obs_fake_quant_moving_avg", "test_fused_obs_fake_quant_moving_avg_per_channel", "backward_op",
               "backward_op_fake_quant_off")
# TestFakeQuantizeOps (tools/goldens/aten_torch_ported.py): the cases of each test, and how many PyTorch refused
FAKE_QUANTIZE_TESTS = {
    "test_forward_per_tensor": (6, 0), "test_backward_per_tensor": (8, 0),
    "test_forward_per_tensor_half_precision_numerics": (5, 0), "test_fake_quantize_per_tensor_affine_inf": (4, 0),
    "test_forward_per_tensor_cachemask_cpu": (32, 0), "test_backward_per_tensor_cachemask_cpu": (24, 0),
    "test_learnable_forward_per_tensor_cpu": (6, 0), "test_learnable_backward_per_tensor_cpu": (16, 0),
    "test_learnable_forward_per_channel_cpu": (6, 0), "test_learnable_backward_per_channel_cpu": (16, 0),
    "test_forward_per_channel": (4, 0), "test_backward_per_channel": (12, 0),
    "test_forward_per_channel_cachemask_cpu": (24, 0), "test_backward_per_channel_cachemask_cpu": (18, 0),
    "test_forward_per_channel_half_precision_numerics": (4, 1), "test_fake_quant_per_channel_qparam_range": (6, 2),
    "test_fake_quant_per_channel_qparam_range_empty_input": (2, 1),
    "test_fake_quantize_per_channel_affine_scale_dtypes": (4, 3),
    "test_numerical_consistency_per_tensor": (12, 0), "test_numerical_consistency_per_channel": (18, 0),
    "test_fq_module_per_tensor": (6, 0), "test_fixed_qparams_fq_module": (2, 0), "test_fake_quant_control": (6, 0),
    "test_fake_quant_preserves_qparam_shapes_for_activations": (1, 0)}


def _tagged(tag):
    return [(op, c) for op in goldens.ops("torch-cpu") for c in goldens.load(op, "torch-cpu")["cases"]
            if tag in c["tags"]]


def test_the_goldens_cover_each_class():
    """The cases per class, and what PyTorch answered: 0-d results, (X, scale, zero_point) as given, refusals."""
    zero_d = _tagged("zero-d")
    outs = [o for _, c in zero_d if "outputs" in c["expect"] for n, o in c["expect"]["outputs"].items()
            if n in ("output", "mask", "dX")]
    assert len(zero_d) == 58 and len(outs) == 92 and all(o["shape"] == [] for o in outs)
    lsq = _tagged("empty-lsq")
    assert len(lsq) == 4 and all(c["expect"]["outputs"]["dZeroPoint"]["values"][:2] == c["inputs"]["zero_point"]
                                 ["values"][:2] for _, c in lsq)   # 300.2 as given: not rounded, not clamped
    zp = _tagged("zp-range")
    assert len(zp) == 25 and sum("error" in c["expect"] for _, c in zp) == 13
    rows = _tagged("per-row-nd")
    assert len(rows) == 46 and sum("error" in c["expect"] for _, c in rows) == 7


def test_pytorchs_fused_observer_tests_are_ported():
    """TestFusedObsFakeQuant's CPU calls: every symmetric_quant x use_bool of each test, each its calls in order
    (the state one call leaves is the next one's), the 5x5, [5, 5] and [5, 4, 3] inputs, the empty one."""
    fused = [c for _, c in _tagged("ported") if c["tags"][1] in FUSED_TESTS]
    per_test = collections.Counter(c["tags"][1] for c in fused)
    assert per_test == {"test_fused_obs_fake_quant_moving_avg": 44,
                        "test_fused_obs_fake_quant_moving_avg_per_channel": 80,
                        "backward_op": 1, "backward_op_fake_quant_off": 1}
    shapes = {tuple(c["inputs"]["input"]["shape"]) for c in fused}
    assert shapes == {(5, 5), (0, 5), (5, 4, 3), (10, 10), (4, 4)}


def test_pytorchs_fake_quantize_tests_are_ported():
    """TestFakeQuantizeOps' CPU calls of these ops (242 cases): each test's, with its shapes, dtypes, qparams and
    ranges (a fixed set of draws for hypothesis'), forward and, for the backward tests, autograd's backward ops."""
    cases = [(op, c) for op, c in _tagged("ported") if c["tags"][1] not in FUSED_TESTS]
    got = collections.defaultdict(lambda: [0, 0])
    for _, c in cases:
        got[c["tags"][1]][0] += 1
        got[c["tags"][1]][1] += "error" in c["expect"]
    assert {k: tuple(v) for k, v in got.items()} == FAKE_QUANTIZE_TESTS
    assert len(cases) == 242 and all(c["id"].startswith("ported-") for _, c in cases)
    ops_of = collections.defaultdict(set)
    for op, c in cases:
        ops_of[c["tags"][1]].add(op)
    # a backward test runs its forward op and autograd's backward op
    assert ops_of["test_backward_per_tensor"] == {"fake_quantize_per_tensor_affine_cachemask",
                                                  "fake_quantize_per_tensor_affine_cachemask_backward"}
    assert ops_of["test_learnable_backward_per_channel_cpu"] == {"_fake_quantize_learnable_per_channel_affine",
                                                                 "_fake_quantize_learnable_per_channel_affine_backward"}
    dts = {c["inputs"]["input"]["dtype"] for _, c in cases if c["tags"][1] == "test_forward_per_tensor_cachemask_cpu"}
    assert dts == {"float32", "float64", "float16", "bfloat16"}


@pytest.mark.parametrize("op", ["fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask"])
def test_a_python_float_zero_point_matches_no_schema(op):
    """torch.ops.aten's per-tensor ops take ``int zero_point`` or a tensor: a Python float matches neither."""
    x = np.linspace(-1, 1, 5, dtype=F32)
    for zp in (3.5, 3.0, float("nan")):
        with pytest.raises(QDQError, match="failed to match any schema") as info:
            getattr(q.aten, op)(x, 0.1, zp, 0, 255, target="oracle")
        assert info.value.arg == "zero_point"
    assert getattr(q.aten, op)(x, 0.1, np.array([3.5], F32), 0, 255, target="oracle") is not None   # a tensor: 3


@pytest.mark.parametrize("target", ["oracle", "cpu"])
def test_the_learnable_backward_returns_an_empty_inputs_arguments(target):
    """PyTorch's early return: X, and scale and zero_point as given (their dtype, shape and value: a bfloat16 scale
    stays bfloat16, a [2] per-tensor scale [2], an out-of-range zero point unclamped)."""
    if target != "oracle":
        require(target)
    e = np.zeros((0, 4), ml_dtypes.bfloat16)
    sc, zp = np.array([0.1, 0.7], ml_dtypes.bfloat16), np.array([300.5, 2.0], ml_dtypes.bfloat16)
    dx, ds, dz = q.aten._fake_quantize_learnable_per_tensor_affine_backward(np.zeros((0, 4), F32), e, sc, zp, 0, 255,
                                                                             target=target)
    assert dx.shape == (0, 4) and dx.dtype == e.dtype and bit_equal(ds, sc) and bit_equal(dz, zp)


@pytest.mark.parametrize("target", ["oracle", "cpu"])
def test_an_empty_observer_input_changes_nothing_whatever_the_state(target):
    """PyTorch returns a copy before reading any argument: a state of any shape and type comes back as given."""
    if target != "oracle":
        require(target)
    state = (np.full(3, 2.5, F32), np.array([[1.0]], np.float64), np.array([0.5], F32), np.array([7], np.int64))
    out = q.aten.fused_moving_avg_obs_fake_quant(np.zeros((0, 5), F32), np.array([1]), np.array([1]), *state, 0.01, 5,
                                                  2, 9, True, False, target=target)
    assert out[0].shape == (0, 5) and all(bit_equal(a, b) for a, b in zip(out[1:], state))


def test_per_row_refusals_keep_pytorchs_words():
    """Per row: rank 1 (PyTorch's flatten(1)), ch_axis other than 0 with the observer on; a negative ch_axis beyond a
    2-D input is refused in our words (PyTorch indexes a C++ vector with it: undefined behaviour)."""
    st = lambda n: (np.full(n, -1.0, F32), np.full(n, 1.0, F32), np.ones(n, F32), np.zeros(n, I32))
    call = lambda x, on, ax, n: q.oracle.aten.fused_moving_avg_obs_fake_quant(
        x, np.array([on]), np.array([1]), *st(n), 0.01, 0, 255, ax, True)
    with pytest.raises(QDQError, match=r"expected to be in range of \[-1, 0\], but got 1"):
        call(np.zeros(4, F32), 1, 0, 4)
    with pytest.raises(QDQError, match="only supported on axis == 0"):
        call(np.zeros((3, 4, 5), F32), 1, 2, 5)
    with pytest.raises(QDQError, match="ch_axis=-1") as info:
        call(np.zeros((3, 4, 5), F32), 0, -1, 5)
    assert info.value.arg == "ch_axis"
    y, *state = call(np.ones((3, 4, 5), F32), 0, 2, 5)   # observer off: quantized along axis 2, range kept
    assert bit_equal(state[0], st(5)[0]) and y.shape == (3, 4, 5)
