"""TF's answers that are almost certainly mistakes warn (issue 14.7), and stay TF's answers."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler.numerics import bit_equal

X = np.linspace(-2, 2, 9, dtype=np.float32)


def test_reversed_vars_range_warns_and_returns_tfs_constant():
    with pytest.warns(q.QDQWarning, match="min > max"):
        y = q.oracle.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=np.float32(1), max=np.float32(-1))
    assert bit_equal(y, np.full_like(X, np.float32(0.9960785)))
    with pytest.warns(q.QDQWarning, match="1 of 3 channels"):
        got = q.raw_ops.FakeQuantWithMinMaxVarsPerChannel(inputs=X.reshape(3, 3), min=np.float32([1, -1, 0]),
                                                          max=np.float32([-1, 1, 1]))
    with pytest.warns(q.QDQWarning):
        want = q.oracle.raw_ops.FakeQuantWithMinMaxVarsPerChannel(inputs=X.reshape(3, 3), min=np.float32([1, -1, 0]),
                                                                  max=np.float32([-1, 1, 1]))
    assert bit_equal(got, want)


def test_one_bit_narrow_qdq_warns_and_returns_infinities():
    kw = dict(input=X, input_min=np.float32(-1), input_max=np.float32(1), num_bits=1, narrow_range=True,
              range_given=True)
    with pytest.warns(q.QDQWarning, match="num_bits=1"):
        got = q.raw_ops.QuantizeAndDequantizeV2(**kw)
    with pytest.warns(q.QDQWarning):
        want = q.oracle.raw_ops.QuantizeAndDequantizeV2(**kw)
    assert bit_equal(got, want) and np.isinf(got[0]) and got[0] < 0 and np.isnan(got[4])


def test_the_warning_points_at_the_callers_line():
    with pytest.warns(q.QDQWarning) as record:
        q.oracle.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=np.float32(1), max=np.float32(-1))
    assert record[0].filename == __file__


def test_normal_use_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=np.float32(-1), max=np.float32(1))
        q.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=np.float32(0), max=np.float32(0))  # min == max: TF's 0s
        q.raw_ops.QuantizeAndDequantizeV2(input=X, input_min=np.float32(-1), input_max=np.float32(1), num_bits=1,
                                          range_given=True)
