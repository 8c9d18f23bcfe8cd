"""Issue 28: programs on a loop-limited target (lavapipe stops a shader loop after 65535 iterations) are
exact at sizes around the limit, for every op family x semantics x dtype class.

Each item compiles one dynamic artifact (the one the validation matrix and tests/test_matrix.py use, so
the cache shares it) and runs it at every size: per-tensor 65,535 / 65,536 / 65,537 / 2^17 + 3 / 200,000
elements, and per-channel shapes whose reduced extent per channel crosses the limit. The extremes of the
range and non-zero gradients sit at the END of each channel's elements, so a loop that stops early gives
another range or sum; the gradients are sparse +-1 and +-2, so their sums are exact in any order (policy 6)
and compare bit for bit. Before the fix, tf-xla's data range (QDQ V2/V3/V4, every dtype) failed here.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from qdq_compiler import dtypes as DT
from qdq_compiler import execute, ops, targets
from qdq_compiler.errors import QDQError, QDQWarning
from qdq_compiler.oracle import compute
from qdq_compiler.validation import bind

from qdq_compiler.numerics import bit_equal

from checks import describe_diff
from targets_util import RUN_TARGETS, require
import tiers

LOOP_LIMITED = [t for t in RUN_TARGETS if targets.get(t).limits.max_loop_iterations]
FLAT_SIZES = (65_535, 65_536, 65_537, (1 << 17) + 3, 200_000)
# (shape, axis): [3, n] along axis 0 (the issue's), channels last [n, C], and [outer, C, inner]; each
# channel reduces just under, just over, and twice the limit.
AXIS_SHAPES = (((3, 65_535), 0), ((3, 65_537), 0), ((3, 131_075), 0), ((65_537, 2), 1), ((6_554, 4, 10), 1))
CHANNELS_LAST = ((65_535, 2), (65_537, 2), ((1 << 17) + 3, 2))
# (family, op, structural attributes, shapes): every family, and every reducing program of it.
CASES = [
    ("qdq", "QuantizeAndDequantizeV4", {"range_given": False}, "flat"),
    ("qdq", "QuantizeAndDequantizeV2", {"range_given": False, "round_mode": "HALF_UP"}, "flat"),
    ("qdq", "QuantizeAndDequantizeV3", {"range_given": False}, "flat"),
    ("qdq", "QuantizeAndDequantizeV4", {"range_given": False, "axis": 1}, "axis"),
    ("qdq", "QuantizeAndDequantizeV4", {"range_given": True}, "flat"),
    ("qdq_grad", "QuantizeAndDequantizeV4Grad", {}, "flat"),
    ("fake_quant", "FakeQuantWithMinMaxArgs", {}, "flat"),
    ("fake_quant", "FakeQuantWithMinMaxVars", {}, "flat"),
    ("fake_quant", "FakeQuantWithMinMaxVarsPerChannel", {}, "last"),
    ("fake_quant_grad", "FakeQuantWithMinMaxArgsGradient", {}, "flat"),
    ("fake_quant_grad", "FakeQuantWithMinMaxVarsGradient", {}, "flat"),
    ("fake_quant_grad", "FakeQuantWithMinMaxVarsPerChannelGradient", {}, "last"),
]
SEMANTICS = ("tf-cpu", "tf-xla")


def _items():
    """Each case under each semantics, in each dtype class the op has there: float32, float64 and one 16-bit
    type (float16 and bfloat16 by turns)."""
    for n, (family, op, attrs, shapes) in enumerate(CASES):
        spec = ops.get(op)
        for sem in SEMANTICS:
            if spec.family.rules(sem).unsupported(spec):
                continue
            have = spec.family.rules(sem).dtypes
            narrow = [d for d in ("float16", "bfloat16")[::(-1) ** n] if d in have][:1]
            for dt in [d for d in ("float32", "float64") if d in have] + narrow:
                a = ",".join(f"{k}={v}" for k, v in attrs.items())
                yield pytest.param(op, attrs, shapes, sem, dt, id=f"{op}[{a}]-{dt}-{sem}")


def _shapes(kind: str):
    if kind == "flat":
        return [((n,), None) for n in FLAT_SIZES]
    if kind == "last":
        return [(s, 1) for s in CHANNELS_LAST]
    return list(AXIS_SHAPES)


def _data(rng, shape, axis, dt):
    """Normal data with each channel's extremes (+40, -40) as its last two elements in row-major order."""
    x = rng.standard_normal(shape) * 2
    inner = max(d for d in range(len(shape)) if d != axis)   # the last reduced dimension
    at = [slice(None) if d == axis else -1 for d in range(len(shape))]
    x[tuple(at)] = 40.0
    at[inner] = -2
    x[tuple(at)] = -40.0
    return x.astype(dt)


def _sparse_gradients(rng, shape, dt):
    """Zero but for ~150 entries of +-1 and +-2, the last 8 among them: sums exact in any order."""
    g = np.zeros(int(np.prod(shape)))
    picks = np.concatenate([rng.choice(g.size - 8, 150, replace=False), np.arange(g.size - 8, g.size)])
    g[picks] = rng.choice([-2.0, -1.0, 1.0, 2.0], picks.size)
    return g.reshape(shape).astype(dt)


def _kwargs(op, attrs, x, axis, rng):
    """The call's arguments: the range [-1.5, 1.5] (per channel where the op has channels)."""
    spec = ops.get(op)
    rng_shape = (x.shape[axis],) if axis is not None else ()
    lo, hi = np.full(rng_shape, -1.5, x.dtype), np.full(rng_shape, 1.5, x.dtype)
    if op.startswith("FakeQuant"):
        kw = {spec.data_input: x, "min": -1.5, "max": 1.5} if "Args" in op else {spec.data_input: x, "min": lo, "max": hi}
    else:
        kw = {"input": x, "input_min": lo, "input_max": hi, **attrs}
        if axis is not None:
            kw["axis"] = axis
    inputs = {i.name for i in spec.inputs}
    if "num_bits" in inputs:   # V3's num_bits tensor
        kw["num_bits"] = np.int32(8)
    if "gradients" in inputs:
        kw["gradients"] = _sparse_gradients(rng, x.shape, x.dtype)
    return kw


@pytest.mark.sample(every=3)   # CI tier: one op configuration in 3 (each a large input on a slow driver)
@pytest.mark.parametrize("target", LOOP_LIMITED)
@pytest.mark.parametrize("op, attrs, shapes, semantics, dtype", list(_items()))
def test_exact_around_the_loop_limit(target, op, attrs, shapes, semantics, dtype):
    require(target)
    rng = np.random.default_rng(28)
    failures = []
    for shape, axis in _shapes(shapes):
        x = _data(rng, shape, axis, DT.get(dtype).np)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", QDQWarning)
            call = bind(op, _kwargs(op, attrs, x, axis, rng), semantics=semantics)
        want = compute(call)
        got = execute.run(call, target)
        for i, (g, w) in enumerate(zip(got, want)):
            if not bit_equal(g, w):
                failures.append(f"{shape} output {i}: {describe_diff(g, w)}")
    assert not failures, f"{op} {semantics} {dtype} on {target}:\n" + "\n".join(failures)


def test_a_reduction_beyond_what_the_target_can_loop_over_is_refused_before_compiling(monkeypatch):
    """Past REDUCTION_BLOCK * max_loop_iterations elements per channel the two stages are not enough: a
    clear error naming the argument, the bound and the other targets, raised before any compile."""
    small = dataclasses.replace(targets.get("vulkan"), limits=targets.Limits(max_loop_iterations=4096))
    bound = small.limits.max_reduced_elements
    assert bound == 4096 * targets.REDUCTION_BLOCK
    x = np.zeros(bound + 1, np.float32)
    call = bind("QuantizeAndDequantizeV4", {"input": x, "input_min": np.float32(0), "input_max": np.float32(0),
                                             "range_given": False})
    monkeypatch.setattr(execute, "artifact_for", lambda cfg: pytest.fail("compiled before refusing"))
    with pytest.raises(QDQError, match=r"input input has 16,777,217 elements per tensor to reduce; target 'vulkan' "
                                       r"reduces at most 16,777,216 .*another target \(cpu, "):
        execute._check_reduction_bound(call, small, (x.size,))
    execute._check_reduction_bound(bind("QuantizeAndDequantizeV4", {"input": x[:bound], "input_min": np.float32(0),
                                                                   "input_max": np.float32(0), "range_given": False}),
                                   small, (bound,))
    given = bind("QuantizeAndDequantizeV4", {"input": x, "input_min": np.float32(-1), "input_max": np.float32(1),
                                             "range_given": True})
    execute._check_reduction_bound(given, small, (x.size,))  # nothing to reduce: no bound


@pytest.mark.parametrize("shape", ["?", "12"])
def test_rank_1_per_channel_sums_render_for_vulkan(shape):
    """Rank-1 per-channel data (each channel one element; a bundle entry of shape '?' gets it) folds to [C, 1]
    in the bounded reduction; it used to render a cast from tensor<?xf32> to tensor<?x?xf32> (a known bug since
    issue 22's session). Its bits: test_rank_1_per_channel_bundle_on_vulkan."""
    from qdq_compiler import emit
    from qdq_compiler.config import OpConfig
    text = emit.render(OpConfig.make("FakeQuantWithMinMaxVarsPerChannelGradient", {}, "float32", shape, "vulkan"))
    assert "folded to [C, 1]" in text and "tensor.expand_shape" in text


def test_rank_1_per_channel_bundle_on_vulkan(tmp_path):
    """A bundle entry of shape '?' for the per-channel gradient: the oracle's bits on Vulkan."""
    require("vulkan")
    import json
    import qdq_compiler as q
    from qdq_compiler.jobs.bundle import build_bundle
    cfg = tmp_path / "pcg.json"
    cfg.write_text(json.dumps({"name": "pcg", "targets": ["vulkan"], "entries": [
        {"name": "g", "op": "FakeQuantWithMinMaxVarsPerChannelGradient", "attrs": {"num_bits": 8}, "shape": "?"}]}))
    build_bundle(cfg, tmp_path / "b")
    x = np.array([-3, -1, 0, .5, 1, 3, 2, -2], np.float32)
    g, mn, mx = np.arange(1, 9, dtype=np.float32), np.full(8, -1, np.float32), np.full(8, 1, np.float32)
    mn[2] = mx[2] = 0
    got = q.load_bundle(tmp_path / "b", target="vulkan").g(gradients=g, inputs=x, min=mn, max=mx)
    want = q.oracle.raw_ops.FakeQuantWithMinMaxVarsPerChannelGradient(gradients=g, inputs=x, min=mn, max=mx)
    assert all(bit_equal(a, w) for a, w in zip(got, want))
