"""TF's answers that are almost certainly mistakes warn (issue 14.7), and stay TF's answers: the oracle and
the cpu target agree bit for bit, and the values are the ones TF 2.21 gives (README, behaviour notes)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler.numerics import bit_equal

X = np.linspace(-2, 2, 9, dtype=np.float32)
F = np.float32


def both(op, match, **kw):
    """The op on the cpu target and in the oracle, each warning once with ``match``; (compiled, oracle)."""
    out = []
    for run in (getattr(q.raw_ops, op), getattr(q.oracle.raw_ops, op)):
        with pytest.warns(q.QDQWarning, match=match) as record:
            out.append(run(**kw))
        assert len([w for w in record if w.category is q.QDQWarning]) == 1, [str(w.message) for w in record]
    return out


def test_qdq_warning_is_a_user_warning():
    assert issubclass(q.QDQWarning, UserWarning) and "QDQWarning" in q.__all__


def test_reversed_vars_range_warns_and_returns_tfs_constant():
    got, want = both("FakeQuantWithMinMaxVars", "min > max: ", inputs=X, min=F(1), max=F(-1))
    assert bit_equal(got, want) and bit_equal(got, np.full_like(X, F(0.9960785)))


def test_reversed_range_in_one_channel_warns_naming_the_count():
    got, want = both("FakeQuantWithMinMaxVarsPerChannel", "min > max in 1 of 3 channels",
                     inputs=X.reshape(3, 3), min=F([1, -1, 0]), max=F([-1, 1, 1]))
    assert bit_equal(got, want) and bit_equal(got[:, 0], np.full(3, F(0.9960785)))
    got, want = both("FakeQuantWithMinMaxVarsPerChannel", "min > max in 1 of 1 channel:",
                     inputs=X.reshape(9, 1), min=F([1]), max=F([-1]))
    assert bit_equal(got, want)


def test_reversed_range_warns_in_the_gradient_too_whose_input_gradient_is_zero():
    got, want = both("FakeQuantWithMinMaxVarsGradient", "min > max", gradients=np.ones_like(X), inputs=X,
                     min=F(1), max=F(-1))
    assert all(bit_equal(a, b) for a, b in zip(got, want)) and not got.backprops_wrt_input.any()


def test_zero_width_nonzero_range_warns_and_returns_nan():
    got, want = both("FakeQuantWithMinMaxVars", "min == max != 0", inputs=X, min=F(1), max=F(1))
    assert bit_equal(got, want) and np.isnan(got).all()
    got, want = both("FakeQuantWithMinMaxVarsPerChannel", "min == max != 0 in 1 of 3 channels",
                     inputs=X.reshape(3, 3), min=F([-1, -2, 0]), max=F([1, -2, 0]))
    assert bit_equal(got, want) and np.isnan(got[:, 1]).all() and not np.isnan(got[:, [0, 2]]).any()


@pytest.mark.parametrize("op", ["QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV4"])
@pytest.mark.parametrize("range_given", [True, False])
def test_one_bit_narrow_qdq_warns_and_returns_infinities(op, range_given):
    kw = dict(input=X, input_min=F(-1), input_max=F(1), narrow_range=True, range_given=range_given)
    kw.update(num_bits=np.int32(1)) if op.endswith("V3") else kw.update(num_bits=1)
    got, want = both(op, "signed num_bits=1 with narrow_range", **kw)
    assert bit_equal(got, want)
    assert np.isneginf(got[:4]).all() and np.isnan(got[4]) and np.isposinf(got[5:]).all()


def test_a_bound_that_is_nan_or_infinite_warns_and_returns_tfs_all_nan():
    """Issue 29.7: a NaN or infinite min/max made every output NaN without a word."""
    got, want = both("FakeQuantWithMinMaxVars", r"min or max is NaN or infinite: .* returns NaN for every element "
                     r"\(argument min\)", inputs=X, min=F("nan"), max=F(1))
    assert bit_equal(got, want) and np.isnan(got).all()
    got, want = both("FakeQuantWithMinMaxArgs", r"NaN or infinite: .*\(argument max\)", inputs=X, min=-1.0,
                     max=float("inf"))
    assert bit_equal(got, want) and np.isnan(got).all()
    got, want = both("FakeQuantWithMinMaxVars", "NaN or infinite", inputs=X, min=F("inf"), max=F("inf"))
    assert bit_equal(got, want) and np.isnan(got).all()
    got, want = both("FakeQuantWithMinMaxVarsPerChannel", "NaN or infinite in 1 of 3 channels: .* of those channels",
                     inputs=X.reshape(3, 3), min=F([-1, -np.inf, 0]), max=F([1, 1, 1]))
    assert bit_equal(got, want) and np.isnan(got[:, 1]).all() and not np.isnan(got[:, [0, 2]]).any()


def test_a_nan_or_infinite_bound_warns_in_the_gradients_whose_gradients_are_then_zero():
    got, want = both("FakeQuantWithMinMaxVarsGradient", r"passes no gradient \(every gradient is zero\)",
                     gradients=np.ones_like(X), inputs=X, min=F(-1), max=F("nan"))
    assert all(bit_equal(a, b) for a, b in zip(got, want)) and not any(np.asarray(a).any() for a in got)
    got, want = both("FakeQuantWithMinMaxArgsGradient", "passes no gradient", gradients=np.ones_like(X), inputs=X,
                     min=-float("inf"), max=1.0)
    assert bit_equal(got, want) and not got.any()


def test_the_warning_points_at_the_callers_line():
    for run in (q.oracle.raw_ops.FakeQuantWithMinMaxVars, q.raw_ops.FakeQuantWithMinMaxVars,
                lambda **kw: q.fake_quant_with_min_max_vars(kw["inputs"], kw["min"], kw["max"])):
        with pytest.warns(q.QDQWarning) as record:
            run(inputs=X, min=F(1), max=F(-1))
        assert record[0].filename == __file__


def test_normal_and_edge_use_that_is_meant_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=F(-1), max=F(1))
        q.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=F(0), max=F(0))          # TF's all-zeros special case
        q.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=F(-0.0), max=F(0))
        q.oracle.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=F(1e-40), max=F(1e-40))  # flushed: zeros
        q.raw_ops.FakeQuantWithMinMaxVarsPerChannel(inputs=X.reshape(3, 3), min=F([-1, 0, -3]), max=F([1, 0, 3]))
        q.raw_ops.FakeQuantWithMinMaxVarsGradient(gradients=X, inputs=X, min=F(-1), max=F(1))
        q.raw_ops.FakeQuantWithMinMaxArgs(inputs=X, min=-1.0, max=1.0)
        for signed, narrow in ((True, False), (False, True), (False, False)):  # 1 bit, 1 or 2 levels
            q.raw_ops.QuantizeAndDequantizeV2(input=X, input_min=F(-1), input_max=F(1), num_bits=1,
                                              signed_input=signed, narrow_range=narrow, range_given=True)
        q.oracle.raw_ops.QuantizeAndDequantizeV3(input=X, input_min=F(-1), input_max=F(1), num_bits=np.int32(2),
                                                 narrow_range=True, range_given=True)
        q.raw_ops.QuantizeAndDequantizeV4Grad(gradients=X, input=X, input_min=F(-1), input_max=F(1))
