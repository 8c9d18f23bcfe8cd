"""The fused moving-average observer (``qdq_compiler.aten.fused_moving_avg_obs_fake_quant``) beyond its PyTorch
goldens (tests/test_aten.py runs those on every target): the functional results, the switches as PyTorch reads
them, the state's shapes, empty inputs, the dtypes PyTorch's observer refuses, and the goldens' deviations."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, goldens
from qdq_compiler.numerics import bit_equal

from targets_util import RUN_TARGETS, dumped_dispatches, require

OP = "fused_moving_avg_obs_fake_quant"
F32 = np.float32


def _call(fn, x, on=1, fq=1, rmin=np.inf, rmax=-np.inf, scale=(1.0,), zp=(0,), c=0.01, qmin=0, qmax=255,
          per_row=False, sym=False, ch_axis=0):
    st = (x.shape[0],) if per_row else ()
    return fn(x, np.array([on]), np.array([fq]), np.full(st, rmin, F32), np.full(st, rmax, F32),
              np.array(scale, F32), np.array(zp, np.int32), c, qmin, qmax, ch_axis, per_row, sym)


def _same(a, b):
    return len(a) == len(b) and all(np.shape(x) == np.shape(y) and bit_equal(np.asarray(x), np.asarray(y))
                                    for x, y in zip(a, b))


def test_results_are_the_state_pytorch_leaves_in_its_arguments():
    x = np.array([-1.3, -0.35, 0.0, 0.51, 1.2, 2.6], F32)
    out = q.oracle.aten.fused_moving_avg_obs_fake_quant(x, np.array([1]), np.array([1]), np.array(np.inf, F32),
                                                        np.array(-np.inf, F32), np.array([1.0], F32),
                                                        np.array([0], np.int32), 0.01, 0, 255, 0)
    assert out._fields == ("output", "running_min", "running_max", "scale", "zero_point")
    assert out.running_min.shape == () and out.scale.shape == (1,)          # as given: 0-d, [1]
    assert out.running_min == F32(-1.3) and out.running_max == F32(2.6)    # a first call takes the batch's range
    assert out.scale[0] == F32((np.float64(F32(2.6)) - np.float64(F32(-1.3))) / 255) and out.zero_point[0] == 85


def test_switches_are_read_as_pytorch_reads_them():
    """observer_on.item().toInt() truncates: 0.7 is off, 1.9 on; off leaves the running range alone."""
    x = np.linspace(-1, 2, 7, dtype=F32)
    off = _call(q.oracle.aten.fused_moving_avg_obs_fake_quant, x, on=0.7)
    assert off.running_min == np.inf and off.running_max == -np.inf
    assert off.scale[0] == F32(0.1) and off.zero_point[0] == 0      # min(inf, 0) = 0 = max(-inf, 0): scale 0 -> 0.1
    on = _call(q.oracle.aten.fused_moving_avg_obs_fake_quant, x, on=1.9)
    assert on.running_min == F32(-1) and on.running_max == F32(2)
    plain = _call(q.oracle.aten.fused_moving_avg_obs_fake_quant, x, fq=0)
    assert bit_equal(plain.output, x) and plain.scale[0] == 1 and plain.zero_point[0] == 0


def test_an_empty_input_changes_nothing():
    """Measured: PyTorch returns before observing (no aminmax error), and leaves every argument as it was."""
    for per_row, x in ((False, np.zeros((0,), F32)), (True, np.zeros((2, 0), F32))):
        st = (2,) if per_row else (1,)
        out = _call(q.aten.fused_moving_avg_obs_fake_quant, x, rmin=-1.0, rmax=1.0, scale=np.full(st, 0.5),
                    zp=np.full(st, 3), per_row=per_row)
        assert out.output.shape == x.shape and np.all(out.running_min == -1) and np.all(out.scale == F32(0.5))


@pytest.mark.parametrize("target", RUN_TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_observing_the_types_pytorch_refuses(dtype, target):
    """PyTorch observes float32 only ("expected scalar type Float but found Half"); here 16-bit inputs are observed
    on their exact values and float64 ones on their ends rounded to float32, then ATen's kernel for the type."""
    require(target)
    rng = np.random.default_rng(3)
    t = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    for per_row, sym in ((False, False), (True, True)):
        x = (rng.standard_normal((5, 40)) * 3).astype(t)
        kw = dict(rmin=-0.5, rmax=0.5, per_row=per_row, sym=sym, qmin=-128, qmax=127,
                  scale=(1.0,) * (5 if per_row else 1), zp=(0,) * (5 if per_row else 1))
        want = _call(q.oracle.aten.fused_moving_avg_obs_fake_quant, x, **kw)
        got = _call(lambda *a: q.aten.fused_moving_avg_obs_fake_quant(*a, target=target), x, **kw)
        assert got.output.dtype == x.dtype and _same(got, want)
    x64 = np.array([1e-300, -3.0000000000000004, 2.9999999999999996], np.float64)
    assert _call(q.oracle.aten.fused_moving_avg_obs_fake_quant, x64).running_min == F32(-3.0)


def _deviations():
    return [c for c in goldens.load(OP, "torch-cpu")["cases"] if c.get("deviation")]


def test_the_goldens_deviations_are_what_they_say():
    """Per row, a NaN range makes PyTorch raise after mutating its state; a program cannot raise: it returns the
    row's NaN scale, an INT32_MIN zero point and a NaN row (the golden's "deviation" says so)."""
    from goldens import decode
    cases = _deviations()
    assert len(cases) >= 3 and all("NaN range" in c["deviation"] for c in cases)
    for case in cases:
        kw = {k: decode(v) for k, v in case["inputs"].items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = q.oracle.aten.fused_moving_avg_obs_fake_quant(**kw, **case["attrs"])
        bad = out.zero_point == np.iinfo(np.int32).min
        assert bad.any() and np.isnan(out.scale[bad]).all() and np.isnan(out.output[bad]).all()


@pytest.mark.parametrize("kw, arg, words", [
    (dict(zp_dtype=F32), "zero_point", "allowed: int32"),
    (dict(scale=(1.0, 1.0)), "scale", "a Tensor with 2 elements cannot be converted to Scalar"),
    (dict(qmin=5, qmax=2), "quant_min", "`quant_min` should be less than or"),
    (dict(ch_axis=1), "ch_axis", "ch_axis must be < self.dim()"),
    (dict(per_row=True, ch_axis=1), "ch_axis", "only supported on axis == 0"),
])
def test_bad_input_names_the_argument(kw, arg, words):
    x = np.linspace(-1, 1, 6, dtype=F32).reshape(2, 3) if kw.get("per_row") else np.linspace(-1, 1, 6, dtype=F32)
    zp_dtype = kw.pop("zp_dtype", np.int32)
    fn = q.aten.fused_moving_avg_obs_fake_quant
    with pytest.raises(QDQError) as info:
        _call(lambda *a: fn(*a[:6], a[6].astype(zp_dtype), *a[7:]), x, **kw)
    assert info.value.arg == arg and words in str(info.value)


def _dispatch_bindings(cfg, tmp_path) -> list[int]:
    """The buffers each dispatch of ``cfg``'s program binds, from IREE's dumped executable sources."""
    import re
    layouts = [re.search(r"#hal\.pipeline\.layout<[^\n]*", text) for text in dumped_dispatches(cfg, tmp_path)]
    return [m.group(0).count("#hal.pipeline.binding<") for m in layouts if m]


@pytest.mark.parametrize("attrs", [{}, {"symmetric_quant": True}, {"per_row_fake_quant": True},
                                   {"per_row_fake_quant": True, "symmetric_quant": True}], ids=str)
def test_no_dispatch_binds_more_buffers_than_cuda_takes(attrs, tmp_path):
    """CUDA loads no module with a dispatch of more than 16 bindings (Limits.max_dispatch_bindings, measured: the
    first symmetric per-tensor program had 23, its constants as parameters). float64 takes the most parameters."""
    from qdq_compiler import targets
    from qdq_compiler.config import OpConfig
    limit = targets.get("cuda").limits.max_dispatch_bindings
    cfg = OpConfig.make(OP, attrs, "float64", "?x?" if attrs.get("per_row_fake_quant") else "?", "cuda", "runtime",
                        "torch-cpu")
    counts = _dispatch_bindings(cfg, tmp_path)
    assert len(counts) >= 4 and 0 < max(counts) <= limit, counts
