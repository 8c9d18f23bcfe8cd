"""Inputs far beyond lavapipe's 65535-iteration loop limit, on every target, static and dynamic (the sizes
around the limit, for every family, semantics and dtype class: tests/test_loop_limits.py)."""
import numpy as np
import pytest

from qdq_compiler.execute import run
from qdq_compiler.oracle import compute
from qdq_compiler.numerics import bit_equal
from qdq_compiler.validation import bind

from targets_util import RUN_TARGETS, require
import tiers

N = (1 << 20) + 3


def _cases():
    rng = np.random.default_rng(3)
    ramp = (np.arange(N, dtype=np.float32) - N / 3)  # min first, max last: a truncated loop misses it
    per_axis = rng.standard_normal((N // 40, 4, 10)).astype(np.float32)
    per_axis[-1, :, -1] = 50.0
    g = rng.integers(-3, 4, N).astype(np.float32)
    return {
        "qdq_data_range": ("QuantizeAndDequantizeV4", dict(input=ramp, input_min=np.float32(0), input_max=np.float32(0))),
        "qdq_data_range_f64": ("QuantizeAndDequantizeV2", dict(input=ramp.astype(np.float64), input_min=0.0,
                                                                input_max=0.0, round_mode="HALF_UP")),
        "qdq_per_axis": ("QuantizeAndDequantizeV4", dict(input=per_axis, input_min=np.zeros(4, np.float32),
                                                          input_max=np.zeros(4, np.float32), axis=1)),
        # tf-xla's template: its range once fed the element-wise pass inside one dispatch (issue 28)
        "qdq_data_range_xla": ("QuantizeAndDequantizeV4", dict(input=ramp, input_min=np.float32(0),
                                                                input_max=np.float32(0)), "tf-xla"),
        "qdq_per_axis_xla": ("QuantizeAndDequantizeV2", dict(input=per_axis, input_min=np.zeros(4, np.float32),
                                                              input_max=np.zeros(4, np.float32), axis=1,
                                                              round_mode="HALF_UP"), "tf-xla"),
        "fq_args": ("FakeQuantWithMinMaxArgs", dict(inputs=ramp / 1e4, min=-1.0, max=1.0)),
        "fq_vars_grad_sums": ("FakeQuantWithMinMaxVarsGradient", dict(gradients=g, inputs=ramp / 1e5,
                                                                      min=np.float32(-1), max=np.float32(1))),
    }


CASES = _cases()


@pytest.mark.sample(every=3, only=tiers.SLOW_TARGETS)   # CI tier: cpu every case, vmvx/vulkan one in 3
@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("target", RUN_TARGETS)
def test_large_input_is_exact(target, name, static):
    require(target)
    op, kw, *semantics = CASES[name]
    call = bind(op, kw, *semantics)
    want = compute(call)
    got = run(call, target, static=static)
    for g, w in zip(got, want):
        assert bit_equal(g, w), f"{op} on {target}: {np.count_nonzero(g != w)} of {g.size} differ"
