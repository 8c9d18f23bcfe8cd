"""The views the Python path runs per-axis data in (config.canonical_view) and the target tunings they ask
for: which view and tuning a shape gets, and that every view gives the oracle's bits on every target."""
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, execute, ops, targets
from qdq_compiler.config import LONG_ROWS, OpConfig, canonical_view
from qdq_compiler.numerics import bit_equal
from qdq_compiler.validation import bind

from targets_util import RUN_TARGETS, require


@pytest.mark.parametrize("shape,axis,dims,attrs,tuning", [
    ((6, 64), 1, (6, 64), {"axis": 1}, ""),                 # channels last: [outer, C], no size-1 inner loop
    ((2, 3, 4, 1), 2, (6, 4), {"axis": 1}, ""),
    ((64, 4096), 0, (1, 64, 4096), {"axis": 1}, LONG_ROWS),  # long rows: the tiles read them whole
    ((2, 3, 130), 1, (2, 3, 130), {"axis": 1}, LONG_ROWS),
    ((2, 3, 48), 1, (2, 3, 48), {"axis": 1}, LONG_ROWS),
    ((2, 3, 10), 1, (2, 3, 10), {"axis": 1}, ""),            # short odd rows: the plain program is faster
])
def test_per_axis_view_and_tuning(shape, axis, dims, attrs, tuning):
    assert canonical_view(ops.AXIS, shape, axis) == (dims, attrs, tuning)


def test_a_target_without_outer_reductions_keeps_channels_last_data_rank_3():
    """vulkan-spirv cannot compile tf-xla's per-channel range over [?, ?] (Limits.outer_reductions)."""
    assert canonical_view(ops.AXIS, (6, 64), 1, rank2=False) == ((6, 64, 1), {"axis": 1}, "")
    x = np.zeros((6, 4), np.float32)
    kw = dict(input=x, input_min=np.zeros(4, np.float32), input_max=np.ones(4, np.float32), axis=1)
    data_range = bind("QuantizeAndDequantizeV4", {**kw, "range_given": False}, semantics="tf-xla")
    given = bind("QuantizeAndDequantizeV4", {**kw, "range_given": True}, semantics="tf-xla")
    assert execute.config_for_call(data_range, "vulkan").shape == (None, None, None)
    assert execute.config_for_call(data_range, "cpu").shape == (None, None)
    assert execute.config_for_call(given, "vulkan").shape == (None, None)   # no reduction: rank 2 anywhere


def test_tuning_reaches_the_compile_flags_and_the_cache_key():
    x = np.zeros((2, 3, 32), np.float32)
    call = bind("QuantizeAndDequantizeV4", dict(input=x, input_min=np.full(3, -1, np.float32),
                                                input_max=np.ones(3, np.float32), range_given=True, axis=1))
    cfg = execute.config_for_call(call, "cpu")
    assert cfg.tuning == LONG_ROWS and cfg.key()["tuning"] == LONG_ROWS and "tuned for long-rows" in cfg.describe()
    flags = targets.get("cpu").tuning_flags(LONG_ROWS)
    assert flags and all(f in execute.artifact_for(cfg).flags for f in flags)
    assert execute.config_for_call(call, "vmvx").tuning == ""   # vmvx has no such tuning: the plain program
    with pytest.raises(QDQError, match="no tuning") as e:
        OpConfig.make("QuantizeAndDequantizeV4", {"axis": 1}, shape="?x?x?", target="vmvx", tuning=LONG_ROWS)
    assert e.value.arg == "tuning"


def _ranges(rng, c, dtype):
    lo, hi = -rng.random(c).astype(dtype), rng.random(c).astype(dtype)
    lo[0] = 0                     # a channel with no negative side,
    hi[min(1, c - 1)] = 0         # one with no positive side
    return lo, hi


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_every_view_gives_the_oracles_bits(target):
    """Per-axis QDQ (given range and from the data) and PerChannel over the view classes: channels last,
    short rows, long rows (multiple of 16 and odd), with NaN, signed zeros, infinities and ties."""
    require(target)
    rng = np.random.default_rng(7)
    shapes = [((33, 5), 1), ((4, 3, 10), 1), ((3, 4, 32), 1), ((2, 3, 131), 1)]
    if target != "vulkan":  # lavapipe compiles slowly: the channels-last and long-row views suffice there
        shapes += [((5, 70), 0)]
    else:
        shapes = [shapes[0], shapes[3]]
    for shape, axis in shapes:
        x = (rng.standard_normal(shape) * 1.5).astype(np.float32)
        flat = x.reshape(-1)
        flat[::17], flat[3::19], flat[5::23], flat[7::29] = np.nan, -0.0, np.inf, 0.5
        lo, hi = _ranges(rng, shape[axis], np.float32)
        # NaN or inf in a channel makes its range from the data give NaN: a second input keeps them in channel 0
        # only, so that the other channels' minima and maxima are compared too.
        clean = np.where(np.isfinite(x), x, np.float32(0.25))
        first = [slice(None)] * x.ndim
        first[axis] = 0
        clean[tuple(first)] = x[tuple(first)]
        for data, range_given in ((x, True), (x, False), (clean, False)):
            kw = dict(input=data, input_min=lo, input_max=hi, range_given=range_given, axis=axis)
            got = q.raw_ops.QuantizeAndDequantizeV4(**kw, target=target)
            want = q.oracle.raw_ops.QuantizeAndDequantizeV4(**kw)
            assert bit_equal(got, want), (shape, axis, range_given)
        assert not np.isnan(want).all()
    x = (rng.standard_normal((40, 6)) * 1.5).astype(np.float32)
    x.reshape(-1)[::11] = np.nan
    lo, hi = _ranges(rng, 6, np.float32)
    kw = dict(inputs=x, min=lo, max=hi)
    assert bit_equal(q.raw_ops.FakeQuantWithMinMaxVarsPerChannel(**kw, target=target),
                     q.oracle.raw_ops.FakeQuantWithMinMaxVarsPerChannel(**kw))


def test_long_rows_reduce_each_channel_with_many_lanes_on_cpu():
    """The tuned per-axis program reduces its range as one linalg.generic per channel row block (macro
    lane_head "rows", 32 lanes); the untuned one keeps StableHLO's reductions, as vmvx does."""
    from qdq_compiler import emit
    tuned = emit.render(OpConfig.make("QuantizeAndDequantizeV4", {"axis": 1}, shape="?x?x?", target="cpu",
                                      tuning=LONG_ROWS))
    assert 'iterator_types = ["parallel", "reduction", "reduction"]' in tuned
    assert "vector_reduction = [0, 1, 32]" in tuned and "stablehlo.reduce(" not in tuned
    plain = emit.render(OpConfig.make("QuantizeAndDequantizeV4", {"axis": 1}, shape="?x?x?", target="cpu"))
    assert "linalg.generic" not in plain and plain.count("stablehlo.reduce(") == 2


def test_long_flat_tensors_that_reduce_split_into_rows_on_cpu_only():
    """A per-tensor op that reduces runs a long tensor (a multiple of 1024, 2^16 and more) as [n / 1024,
    1024] with tuning split-rows on cpu (macro split_view; the FakeQuant gradients' rows also write the
    masked gradient, macro masked_sums). Other sizes, element-wise ops and other targets keep the flat
    view."""
    from qdq_compiler import emit
    from qdq_compiler.config import SPLIT_ROWS
    n = 1 << 16
    assert canonical_view("flat", (64, 1024), None, split=True) == ((64, 1024), {}, SPLIT_ROWS)
    assert canonical_view("flat", (n + 1024,), None, split=True)[0] == ((n + 1024) // 1024, 1024)
    for shape in ((n + 8,), (n // 2,)):
        assert canonical_view("flat", shape, None, split=True) == ((shape[0],), {}, "")
    assert canonical_view("flat", (n,), None) == ((n,), {}, "")
    x = np.linspace(-3, 5, n, dtype=np.float32)
    v2 = bind("QuantizeAndDequantizeV2", dict(input=x, input_min=np.float32(0), input_max=np.float32(0)))
    args = bind("FakeQuantWithMinMaxArgs", dict(inputs=x))
    assert execute.config_for_call(v2, "cpu").tuning == SPLIT_ROWS
    assert execute.config_for_call(v2, "vmvx").shape == (None,)
    assert execute.config_for_call(args, "cpu").shape == (None,)          # nothing to reduce
    grad = bind("FakeQuantWithMinMaxVarsGradient", dict(gradients=x, inputs=x, min=np.float32(-1), max=np.float32(1)))
    assert execute.config_for_call(grad, "cpu").tuning == SPLIT_ROWS
    text = emit.render(execute.config_for_call(v2, "cpu"))
    assert "tensor.expand_shape" in text and 'iterator_types = ["parallel", "parallel", "reduction"]' in text
    text = emit.render(execute.config_for_call(grad, "cpu"))  # one pass: masked gradient, per-row partial sums
    assert text.count("linalg.generic") == 2 and 'iterator_types = ["parallel", "reduction"]' in text
    assert "%backprops_wrt_input = stablehlo.select" not in text  # no masked pass of the template's own


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_split_rows_give_the_oracles_bits(target):
    """QDQ over the split view and VarsGradient's fused flat pass on 2^16 elements, with NaN and -0."""
    require(target)
    rng = np.random.default_rng(11)
    n = 1 << 16
    x = (rng.standard_normal(n) * 2).astype(np.float32)
    x[::977] = -0.0
    g = np.round(rng.standard_normal(n) * 8).astype(np.float32)  # integer gradients: every order sums exactly
    for data in (x, np.where(np.arange(n) == 4099, np.float32(np.nan), x)):
        for half_up in (False, True):
            kw = dict(input=data, input_min=np.float32(0), input_max=np.float32(0),
                      round_mode="HALF_UP" if half_up else "HALF_TO_EVEN")
            assert bit_equal(q.raw_ops.QuantizeAndDequantizeV4(**kw, target=target),
                             q.oracle.raw_ops.QuantizeAndDequantizeV4(**kw)), (half_up, np.isnan(data).any())
        kw = dict(gradients=g, inputs=data, min=np.float32(-1.25), max=np.float32(1.5))
        got = q.raw_ops.FakeQuantWithMinMaxVarsGradient(**kw, target=target)
        want = q.oracle.raw_ops.FakeQuantWithMinMaxVarsGradient(**kw)
        assert all(bit_equal(a, b) for a, b in zip(got, want))
        assert want[1] != 0 and want[2] != 0
    # min == max == 0: the gradient passes through with its raw bits (-0, NaN); float16 takes the same view
    g_special = g.copy()
    g_special[::1031] = -0.0
    g_special[7] = np.nan
    for dtype in (np.float32, np.float16):
        for lo, hi in ((0.0, 0.0), (-1.25, 1.5)):
            kw = dict(gradients=g_special.astype(dtype), inputs=x.astype(dtype), min=dtype(lo), max=dtype(hi))
            got = q.raw_ops.FakeQuantWithMinMaxVarsGradient(**kw, target=target)
            want = q.oracle.raw_ops.FakeQuantWithMinMaxVarsGradient(**kw)
            assert all(bit_equal(a, b) for a, b in zip(got, want)), (dtype, lo)


def test_long_channels_last_data_that_reduces_splits_its_rows_into_groups_on_cpu():
    """Channels-last data that reduces, long enough (2^16 elements) and with rows that divide by 16, asks
    for tuning split-columns: its reductions walk 16 groups of rows in parallel, then the [16, C] partials
    (macro group_view). Element-wise ops, other sizes and other targets keep the plain columns."""
    from qdq_compiler import emit
    from qdq_compiler.config import SPLIT_COLUMNS
    assert canonical_view(ops.AXIS, (1024, 64), 1, split=True) == ((1024, 64), {"axis": 1}, SPLIT_COLUMNS)
    assert canonical_view(ops.LAST, (64, 16, 64), 2, split=True) == ((1024, 64), {}, SPLIT_COLUMNS)
    assert canonical_view(ops.AXIS, (1024, 64), 1) == ((1024, 64), {"axis": 1}, "")          # no reduction
    assert canonical_view(ops.AXIS, (1032, 64), 1, split=True)[2] == ""   # rows do not divide by 16
    assert canonical_view(ops.AXIS, (512, 64), 1, split=True)[2] == ""    # 2^15 elements: too short
    x = np.zeros((1024, 64), np.float32)
    z = np.zeros(64, np.float32)
    data = bind("QuantizeAndDequantizeV4", dict(input=x, input_min=z, input_max=z, axis=1))
    given = bind("QuantizeAndDequantizeV4", dict(input=x, input_min=z - 1, input_max=z + 1, axis=1, range_given=True))
    assert execute.config_for_call(data, "cpu").tuning == SPLIT_COLUMNS
    assert execute.config_for_call(data, "vmvx").tuning == ""
    assert execute.config_for_call(given, "cpu").tuning == ""
    text = emit.render(execute.config_for_call(data, "cpu"))
    assert "tensor<16x?x?xf32>" in text and text.count("linalg.generic") == 2
    grad = bind("FakeQuantWithMinMaxVarsPerChannelGradient", dict(gradients=x, inputs=x, min=z - 1, max=z + 1))
    assert execute.config_for_call(grad, "cpu").tuning == SPLIT_COLUMNS


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_row_groups_give_the_oracles_bits(target):
    """Per-axis QDQ from the data and PerChannelGradient over [1024, 64] (split-columns on cpu), with NaN,
    -0, infinities, a zero range and float16: the oracle's bits (integer gradients sum exactly)."""
    require(target)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((1024, 64)) * 2).astype(np.float32)
    x[::97, 3] = -0.0
    x[500, 7] = np.nan
    x[900, 9] = np.inf
    for half_up in (False, True):
        kw = dict(input=x, input_min=np.zeros(64, np.float32), input_max=np.zeros(64, np.float32), axis=1,
                  round_mode="HALF_UP" if half_up else "HALF_TO_EVEN")
        want = q.oracle.raw_ops.QuantizeAndDequantizeV4(**kw)
        assert bit_equal(q.raw_ops.QuantizeAndDequantizeV4(**kw, target=target), want), half_up
        assert np.isnan(want[:, 7]).all() and not np.isnan(want[:, 8]).any()
    g = np.round(rng.standard_normal(x.shape) * 8).astype(np.float32)
    g[11, 2] = np.nan
    lo, hi = np.full(64, -1.25, np.float32), np.full(64, 1.5, np.float32)
    lo[5] = hi[5] = 0  # a zero range: the gradient passes through, its range gradients are 0
    for dtype in (np.float32, np.float16):
        kw = dict(gradients=g.astype(dtype), inputs=np.nan_to_num(x, nan=0.5, posinf=3).astype(dtype),
                  min=lo.astype(dtype), max=hi.astype(dtype))
        got = q.raw_ops.FakeQuantWithMinMaxVarsPerChannelGradient(**kw, target=target)
        want = q.oracle.raw_ops.FakeQuantWithMinMaxVarsPerChannelGradient(**kw)
        assert all(bit_equal(a, b) for a, b in zip(got, want)), dtype


def test_a_calls_configuration_is_made_without_validating_it_again():
    """OpConfig.from_call (the executor's) gives the configuration OpConfig.make (validating every attribute
    again, then bind on stand-in arrays) would: same key, so the same artifacts (issue 22, item 4)."""
    import warnings
    from qdq_compiler import execute
    from qdq_compiler.config import OpConfig
    from qdq_compiler.errors import QDQError, QDQWarning
    from qdq_compiler.validation import bind
    from goldens import kwargs_of, success_cases, xla_cases
    seen = 0
    for case in list(success_cases())[::7] + list(xla_cases())[::5]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", QDQWarning)
            try:
                call = bind(case["op"], kwargs_of(case), semantics=case.get("semantics", "tf-cpu"))
            except QDQError:
                continue
        for target in ("cpu", "vmvx", "vulkan"):
            shape, override, _, tuning = execute._shape_plan(call, target)
            structural = call.spec.family.structural(call.spec)
            attrs = {**{k: v for k, v in call.attrs.items() if k in structural}, **override}
            # in process the host's FMA unit where it has one (make's default is the portable choice)
            made = OpConfig.make(call.op, attrs, call.dtype_name, shape, target, "runtime", call.semantics,
                                 tuning if execute.targets.get(target).has_tuning(tuning) else "",
                                 fma=execute.targets.get(target).fma_units()[0])
            assert execute.config_for_call(call, target) == made and execute.config_for_call(call, target).key() == made.key()
            seen += 1
    assert seen > 300
