"""A result's shape is the reference's, on every target (issue 48): every op of every namespace (the benchmark's
cases: each op's arguments built by its own family, TF, aten, ONNX, MX and NVFP4) called with 0-d, empty and
one-element data. Each reference keeps the data's shape in a data-shaped result (TF's ops, PyTorch's kernels,
ONNX's Q/DQ, torchao's MX); where a reference refuses a shape, so do we, on the oracle and on every target alike.
The exact values of these shapes are the goldens' (aten's "zero-d" cases, ONNX's node tests and shape mixes)."""
from __future__ import annotations

import numpy as np
import pytest

from qdq_compiler import QDQError
from qdq_compiler.jobs.bench.cases import CASES
from qdq_compiler.jobs.bench.measure import ORACLES, PUBLIC
from qdq_compiler.numerics import bit_equal
from qdq_compiler.ops.spec import DATA

from checks import compile_ahead
from targets_util import RUN_TARGETS, require
import tiers

PER_TENSOR_SHAPES = ((), (0,), (1,), (1, 1))
PER_CHANNEL_SHAPES = ((0, 4), (1, 4), (1, 1))   # per channel along the last axis (the cases' layout)


# The (case, shape) pairs whose family cannot make a benchmark call (the per-row observer's ramp of states needs a
# row: its empty inputs are aten's "per-row-nd" goldens)
NO_BENCH_CALL = {("fused_moving_avg_obs_fake_quant[per_row]", (0, 4))}


def _calls():
    """(case, data shape, keyword arguments): each case on each small shape, the family's own arguments."""
    out, none = [], set()
    for case in CASES:
        for shape in PER_CHANNEL_SHAPES if case.per_channel else PER_TENSOR_SHAPES:
            try:
                kw = case.spec.family.bench_kwargs(case.spec, case.attrs, shape, np.random.default_rng(0))
            except ValueError:
                none.add((case.name, shape))
                continue
            out.append((case, np.shape(kw[case.spec.data_input]), kw))   # (the family's own: the observer's
    return out, none                                                       # module calls take [1] for [])


CALLS, WITHOUT_CALL = _calls()


def _outcome(fn, kw, **extra):
    """The results as a tuple, or the QDQError's class name where the call is refused."""
    try:
        r = fn(**kw, **extra)
    except QDQError as e:
        return type(e).__name__
    return tuple(np.asarray(a) for a in (r if isinstance(r, tuple) else (r,)))


def test_every_namespace_and_shape_is_called():
    spaces = {case.spec.namespace for case, _, _ in CALLS}
    assert spaces == {"tf", "aten", "onnx", "mx"} and len(CALLS) >= 100, (spaces, len(CALLS))
    assert WITHOUT_CALL == NO_BENCH_CALL


@pytest.mark.parametrize("target", ["oracle"] + RUN_TARGETS)
def test_data_shaped_results_keep_the_datas_shape(target):
    """On the oracle: every data-shaped result has the data's shape (0-d stays 0-d, empty stays empty), and
    enough calls answer for the check to mean something. On a compiled target: the oracle's outcome exactly:
    the same refusals, the same shapes and dtypes, the same bits (vmvx and Vulkan: a sample in the CI tier)."""
    calls = CALLS
    if target != "oracle":
        require(target)
        if target in tiers.SLOW_TARGETS:   # the CI tier: one call in 3 there (tests/tiers.py); the full tier all
            calls = tiers.sample(CALLS, every=3, key=lambda c: f"{c[0].name}{list(c[1])}")
        compile_ahead(lambda c=c, kw=kw: getattr(PUBLIC[c.spec.namespace], c.spec.function_name)(
            **kw, target=target, semantics=c.semantics) for c, _, kw in calls)
    answered, zero_d, empty = 0, 0, 0
    wrong = []
    for case, shape, kw in calls:
        oracle = getattr(ORACLES[case.spec.namespace], case.spec.function_name)
        want = _outcome(oracle, kw, semantics=case.semantics)
        where = f"{case.name} on {list(shape)}"
        if target == "oracle":
            if isinstance(want, str):
                continue
            answered += 1
            zero_d += shape == ()
            empty += 0 in shape
            for out, got in zip(case.spec.results, want):
                if out.layout == DATA and got.shape != shape:
                    wrong.append(f"{where}: {out.name} has shape {list(got.shape)}")
            continue
        got = _outcome(getattr(PUBLIC[case.spec.namespace], case.spec.function_name), kw, target=target,
                       semantics=case.semantics)
        if isinstance(want, str) or isinstance(got, str):
            if want != got:
                wrong.append(f"{where}: oracle {want if isinstance(want, str) else 'answers'}, {target} "
                             f"{got if isinstance(got, str) else 'answers'}")
            continue
        for out, g, w in zip(case.spec.results, got, want):
            if g.shape != w.shape or g.dtype != w.dtype or not bit_equal(g, w):
                wrong.append(f"{where}: {out.name} {g.dtype}{list(g.shape)} where the oracle gives "
                             f"{w.dtype}{list(w.shape)}")
    assert not wrong, "\n".join(wrong)
    if target == "oracle":   # each namespace answers some of these shapes: a test that checks something
        assert answered >= 60 and zero_d >= 10 and empty >= 20, (answered, zero_d, empty)
