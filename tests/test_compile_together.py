"""Configurations compiled together (qdq_compiler.together): one iree-compile run, one module, a function each.

What they must keep: the bits of each configuration compiled alone, the single-configuration artifact wherever
one leaves the process (the on-disk index, ``qdqc compile``, a cluster's ``shipped``), and each call's own error.
"""
from __future__ import annotations

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import compile as C
from qdq_compiler import execute
from qdq_compiler.execute import Gathered, config_for_call, gathering
from qdq_compiler.together import compile_together
from qdq_compiler.numerics import bit_equal
from qdq_compiler.validation import bind

from checks import compile_ahead
from targets_util import RUN_TARGETS, require

F32 = np.float32
X = np.array([-2.5, -1.0, -0.37, -0.0, 0.0, 0.1, 0.5, 0.75, 1.0, 3.0, np.nan, np.inf, -np.inf,
              1e-40, -1e-40, 0.49999997], F32)

# Three families, two semantics, a per-axis layout and a gradient: functions of several shapes in one module.
CALLS = [
    ("FakeQuantWithMinMaxVars", dict(inputs=X, min=F32(-1), max=F32(1), num_bits=8, narrow_range=False)),
    ("FakeQuantWithMinMaxVarsGradient", dict(gradients=np.ones_like(X), inputs=X, min=F32(-1), max=F32(1))),
    ("QuantizeAndDequantizeV2", dict(input=X, input_min=F32(-1), input_max=F32(1), range_given=True)),
    ("FakeQuantWithMinMaxVarsPerChannel", dict(inputs=X.reshape(4, 4), min=np.full(4, -1, F32),
                                               max=np.array([1, 2, 0.5, 3], F32))),
]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A cache of this test's own and no artifact in the process: every configuration is compiled here."""
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("_artifacts", "_run_plans", "_fast_plans"):
        monkeypatch.setattr(execute, name, {})
    monkeypatch.setattr(q.runtime, "_functions", {})
    return tmp_path / "cache"


def _run_all(target):
    return [execute.run(bind(op, kw), target) for op, kw in CALLS]


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_together_gives_each_configurations_bits_alone(target, fresh, monkeypatch):
    require(target)
    alone = _run_all(target)
    monkeypatch.setenv("QDQ_CACHE_DIR", str(fresh) + "-together")   # (its index now names the single artifacts)
    monkeypatch.setattr(execute, "_artifacts", {})
    monkeypatch.setattr(execute, "_run_plans", {})
    monkeypatch.setattr(execute, "_fast_plans", {})
    cfgs = [config_for_call(bind(op, kw), target) for op, kw in CALLS]
    assert compile_together(cfgs) == len(CALLS)
    arts = [execute.artifact_for(c) for c in cfgs]
    assert len({a.key for a in arts}) == 1 and [a.function_name for a in arts] == \
        [f"{c.op}__{i}" for i, c in enumerate(cfgs)]
    together = _run_all(target)
    for (op, _), a, b in zip(CALLS, alone, together):
        for x, y in zip(a, b):
            assert bit_equal(x, y), (op, x, y)


def test_one_iree_compile_for_the_group_and_none_the_second_time(fresh, monkeypatch):
    runs = []
    real = C.compile_mlir
    monkeypatch.setattr(C, "compile_mlir", lambda mlir, flags, **kw: runs.append(mlir.count("func.func @")) or
                        real(mlir, flags, **kw))
    cfgs = [config_for_call(bind(op, kw), "cpu") for op, kw in CALLS]
    assert compile_together(cfgs) == len(CALLS) and len(runs) == 1 and runs[0] >= len(CALLS)
    monkeypatch.setattr(execute, "_artifacts", {})
    assert compile_together(cfgs) == len(CALLS) and len(runs) == 1      # the module, from the cache
    assert all(execute.artifact_for(c).from_cache for c in cfgs)
    assert compile_together(cfgs) == 0                                  # held in the process: nothing to do


def test_groups_split_by_flags_and_size(fresh):
    cfgs = [config_for_call(bind(op, kw), t) for op, kw in CALLS for t in ("cpu", "vmvx")]
    by_flags = {}
    for c in cfgs:
        by_flags.setdefault(execute.flags_for(c), []).append(c)
    shared = sum(n - (n % 3 == 1) for n in (len(v) for v in by_flags.values()))   # a group of one stays alone
    assert compile_together(cfgs, group=3) == shared
    modules = {}
    for c in cfgs:
        art = execute.artifact_for(c)
        modules.setdefault(art.key, []).append((c.target, art.flags))
    assert all(len(v) <= 3 and len(set(v)) == 1 for v in modules.values()), modules


def test_what_leaves_the_process_is_the_configuration_alone(fresh):
    cfgs = [config_for_call(bind(op, kw), "cpu") for op, kw in CALLS]
    compile_together(cfgs)
    art = execute.artifact_for(cfgs[0])
    config, flags, key, vmfb, record = execute.shipped(art)
    assert key == C.cache_key(art.mlir, flags) != art.key and vmfb != art.vmfb
    fn = q.runtime.load("local-sync", key, vmfb, cfgs[0].op)          # the function under its own name
    assert fn is not None
    # The on-disk index names single artifacts only: a fresh process finds nothing compiled together there.
    assert C.lookup_index(execute._index_identity(cfgs[1], flags)) is None


def test_a_group_that_does_not_compile_leaves_each_configuration_to_its_own_error(fresh, monkeypatch):
    good = config_for_call(bind(*CALLS[0]), "cpu")
    bad = config_for_call(bind(*CALLS[2]), "cpu")
    real_render = execute.emit.render
    monkeypatch.setattr(execute.emit, "render", lambda cfg: real_render(cfg).replace(
        "stablehlo.constant", "stablehlo.no_such_op", 1) if cfg == bad else real_render(cfg))
    assert compile_together([good, bad]) == 0
    assert not execute.in_process(good) and not execute.in_process(bad)
    with pytest.raises(q.CompileError, match="no_such_op"):
        execute.artifact_for(bad)
    assert execute.artifact_for(good).function_name == good.op


def test_gathering_stops_each_call_at_its_artifact_and_collects_its_configuration(fresh, monkeypatch):
    monkeypatch.setattr(C, "compile_mlir", lambda *a, **k: pytest.fail("gathering compiled"))
    with gathering() as cfgs:
        for op, kw in CALLS:
            with pytest.raises(Gathered):
                getattr(q.raw_ops, op)(**kw)
        with pytest.raises(q.QDQError):   # an error of the call's own comes first, and adds nothing
            q.raw_ops.FakeQuantWithMinMaxVars(inputs=X, min=F32(-1), max=F32(1), num_bits=1)
    assert cfgs == [config_for_call(bind(op, kw), "cpu") for op, kw in CALLS]


def test_compile_ahead_then_the_calls_compile_nothing(fresh, monkeypatch):
    calls = [lambda op=op, kw=kw: getattr(q.raw_ops, op)(**kw, target="vmvx") for op, kw in CALLS]
    assert compile_ahead(calls) == len(CALLS)
    monkeypatch.setattr(C, "compile_mlir", lambda *a, **k: pytest.fail("a call compiled after compile_ahead"))
    for (op, kw), call in zip(CALLS, calls):
        got = call()
        want = getattr(q.oracle.raw_ops, op)(**kw)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert bit_equal(g, w), op
