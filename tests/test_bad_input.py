"""Bad input at every public entry (issue 8.1): the compiled ``raw_ops`` (target "cpu"), the oracle's
``raw_ops`` and TF's wrappers. (The CLI is in test_cli.py; the bundle loader's bad input is tested with
the bundle.)

Every bad input is a ``QDQError`` (a ``ValueError``; type and dtype problems are ``QDQTypeError``, also a
``TypeError``) raised by validation, before anything is compiled: it names the op and the argument,
is one line, and is the same on the oracle and on the compiled path. Nothing reaches IREE.

Non-finite min/max follow TF 2.21: Vars/PerChannel (and Args with an infinite bound, and a given QDQ
range with an infinite bound) compute, with NaN outputs where the range is not finite; a per-tensor
given QDQ range with a NaN, or Args with a NaN bound, is TF's error. Those cases are checked to compute
the same bits on both paths, with the NaN pattern TF gives.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, QDQTypeError, TargetUnavailableError, ops as registry, targets
from qdq_compiler.oracle import raw_ops as oracle
from qdq_compiler.numerics import bit_equal
from qdq_compiler.validation import bind

from checks import as_tuple, describe_diff, sum_bound

F = np.float32
D = np.float64
X = np.linspace(-2, 2, 8, dtype=F)
X2 = X.reshape(2, 4)
NAN, INF = math.nan, math.inf


def f(v):
    return np.float32(v)


class Bad(NamedTuple):
    id: str
    op: str
    kwargs: dict
    arg: str            # the argument the error must name (QDQError.arg, and in the message)
    type_error: bool    # QDQTypeError (a TypeError too), else a plain QDQError
    words: tuple = ()   # further words the message must contain


def bad(id, op, arg, type_error=False, words=(), **kwargs):
    return Bad(id, op, kwargs, arg, type_error, tuple(words))


V2 = "QuantizeAndDequantizeV2"
V3 = "QuantizeAndDequantizeV3"
V4 = "QuantizeAndDequantizeV4"
G4 = "QuantizeAndDequantizeV4Grad"
V1 = "QuantizeAndDequantize"
ARGS = "FakeQuantWithMinMaxArgs"
ARGS_G = "FakeQuantWithMinMaxArgsGradient"
VARS = "FakeQuantWithMinMaxVars"
VARS_G = "FakeQuantWithMinMaxVarsGradient"
PC = "FakeQuantWithMinMaxVarsPerChannel"
PC_G = "FakeQuantWithMinMaxVarsPerChannelGradient"
MN, MX = f(-1), f(1)
BF16 = ml_dtypes.bfloat16
MN4, MX4 = np.full(4, -1, F), np.full(4, 1, F)

BAD = [
    # -- wrong dtype
    bad("int-array", ARGS, "inputs", True, ["int64", "float32"], inputs=np.arange(4)),
    bad("f64-for-float-only-op", ARGS, "inputs", True, ["float64"], inputs=X.astype(D)),
    bad("f64-fake-quant-vars", VARS, "inputs", True, ["float64"], inputs=X.astype(D), min=D(-1), max=D(1)),
    bad("f16-qdq-under-tf-cpu", V2, "input", True, ["float16", "semantics='tf-xla'"], input=X.astype(np.float16),
        input_min=-1.0, input_max=1.0),
    bad("bf16-v4grad-under-tf-cpu", "QuantizeAndDequantizeV4Grad", "gradients", True, ["bfloat16", "semantics='tf-xla'"],
        gradients=X.astype(BF16), input=X.astype(BF16), input_min=BF16(-1), input_max=BF16(1)),
    bad("f16-vars-with-f32-range", VARS, "min", True, ["float32", "float16"], inputs=X.astype(np.float16), min=MN,
        max=MX),
    bad("f16-args-range-beyond-half", ARGS, "max", False, ["max=100000", "float16", "65504"],
        inputs=X.astype(np.float16), min=-1.0, max=1e5),
    bad("bf16-args-range-beyond-bfloat16", ARGS, "min", False, ["min=-inf", "bfloat16"], inputs=X.astype(BF16),
        min=-np.inf, max=1.0),
    bad("int32-qdq", V4, "input", True, ["int32"], input=np.arange(4, dtype=np.int32), input_min=-1.0, input_max=1.0),
    bad("bool-array", ARGS, "inputs", True, ["bool"], inputs=np.ones(3, bool)),
    bad("complex-array", V2, "input", True, ["complex64"], input=np.ones(3, np.complex64), input_min=-1.0,
        input_max=1.0),
    bad("object-array", ARGS, "inputs", True, ["object"], inputs=np.array([1, "a"], dtype=object)),
    bad("datetime-array", ARGS, "inputs", True, inputs=np.array(["2024-01-01"], dtype="datetime64[D]")),
    bad("v3-num_bits-int64", V3, "num_bits", True, ["int64", "int32"], input=X, input_min=MN, input_max=MX,
        num_bits=np.int64(8)),
    bad("v3-num_bits-float", V3, "num_bits", True, ["int32"], input=X, input_min=MN, input_max=MX, num_bits=8.0),
    bad("v3-num_bits-f32-scalar", V3, "num_bits", True, ["float32"], input=X, input_min=MN, input_max=MX,
        num_bits=f(8)),
    bad("v3-num_bits-bool", V3, "num_bits", True, ["bool"], input=X, input_min=MN, input_max=MX, num_bits=True),
    bad("grad-f64-inputs-f32", VARS_G, "gradients", True, ["float64"], gradients=X.astype(D), inputs=X, min=MN,
        max=MX),
    # -- mixed dtypes
    bad("mixed-input-f32-min-f64", V2, "input_min", True, ["float64", "same dtype"], input=X, input_min=D(-1),
        input_max=f(1)),
    bad("mixed-input-f64-max-f32", V4, "input_max", True, ["float32"], input=X.astype(D), input_min=D(-1),
        input_max=f(1)),
    bad("mixed-grad-f64-rest-f32", G4, "input", True, ["float32", "float64"], gradients=X.astype(D), input=X,
        input_min=MN, input_max=MX),
    bad("mixed-v3-min-f64", V3, "input_min", True, input=X, input_min=D(-1), input_max=f(1), num_bits=8),
    bad("mixed-vars-max-f64", VARS, "max", True, ["float64"], inputs=X, min=MN, max=D(1)),
    # -- strings and other non-numbers
    bad("string-input", ARGS, "inputs", True, ["'abc'"], inputs="abc"),
    bad("bytes-input", ARGS, "inputs", True, inputs=b"abc"),
    bad("string-min", V2, "input_min", True, input=X, input_min="0", input_max=1.0),
    bad("none-input", VARS, "inputs", True, ["None"], inputs=None, min=MN, max=MX),
    bad("dict-input", ARGS, "inputs", True, ["dict"], inputs={"a": 1}),
    bad("set-input", ARGS, "inputs", True, inputs={1.0, 2.0}),
    bad("object-input", ARGS, "inputs", True, inputs=object()),
    bad("string-num_bits-attr", ARGS, "num_bits", True, ["'8'", "int"], inputs=X, num_bits="8"),
    bad("string-float-attr", ARGS, "min", True, ["float"], inputs=X, min="-1"),
    bad("string-bool-attr", V2, "narrow_range", True, ["bool"], input=X, input_min=-1.0, input_max=1.0,
        narrow_range="yes"),
    bad("int-round_mode", V2, "round_mode", True, ["string"], input=X, input_min=-1.0, input_max=1.0, round_mode=1),
    # -- Python lists that are not arrays of numbers
    bad("list-of-strings", ARGS, "inputs", True, ["<U1"], inputs=["a", "b"]),
    bad("list-mixed-str-number", ARGS, "inputs", True, inputs=["1", 2.0]),
    bad("ragged-list", ARGS, "inputs", True, ["inhomogeneous"], inputs=[[1.0], [2.0, 3.0]]),
    bad("ragged-list-of-arrays", ARGS, "inputs", True, inputs=[X, X[:3]]),
    bad("list-with-none", ARGS, "inputs", True, inputs=[1.0, None]),
    bad("list-of-bools", ARGS, "inputs", True, ["bool"], inputs=[True, False]),
    bad("list-of-complex", ARGS, "inputs", True, ["complex"], inputs=[1j, 2.0]),
    bad("list-int-beyond-64-bits", ARGS, "inputs", True, ["64 bits"], inputs=[2**80, 1]),
    bad("list-of-dicts", ARGS, "inputs", True, inputs=[{"a": 1}]),
    bad("v3-num_bits-list-float", V3, "num_bits", True, ["integer"], input=X, input_min=MN, input_max=MX,
        num_bits=[8.5]),
    bad("v3-num_bits-beyond-int32", V3, "num_bits", False, ["does not fit"], input=X, input_min=MN, input_max=MX,
        num_bits=2**40),
    # -- shape mismatches between gradients and inputs
    bad("args-grad-shorter", ARGS_G, "gradients", False, ["[3]", "[8]"], gradients=X[:3], inputs=X),
    bad("args-grad-same-size-other-shape", ARGS_G, "gradients", False, ["[2, 4]"], gradients=X2, inputs=X),
    bad("vars-grad-longer", VARS_G, "gradients", False, gradients=np.zeros(9, F), inputs=X, min=MN, max=MX),
    bad("pc-grad-transposed", PC_G, "gradients", False, gradients=X2.T.copy(), inputs=X2, min=MN4, max=MX4),
    bad("v4grad-scalar-vs-vector", G4, "gradients", False, gradients=f(1), input=X, input_min=MN, input_max=MX),
    bad("v4grad-empty-vs-vector", G4, "gradients", False, gradients=np.zeros(0, F), input=X, input_min=MN,
        input_max=MX),
    # -- min/max of the wrong rank or length
    bad("vars-min-rank1", VARS, "min", False, ["rank 0"], inputs=X, min=np.array([-1], F), max=MX),
    bad("vars-max-rank2", VARS, "max", False, inputs=X, min=MN, max=np.ones((1, 1), F)),
    bad("vars-grad-min-vector", VARS_G, "min", False, gradients=X, inputs=X, min=MN4, max=MX),
    bad("pc-min-short", PC, "min", False, ["length 3", "expected 4"], inputs=X2, min=np.full(3, -1, F), max=MX4),
    bad("pc-max-long", PC, "max", False, inputs=X2, min=MN4, max=np.ones(5, F)),
    bad("pc-min-scalar", PC, "min", False, ["rank"], inputs=X2, min=MN, max=MX4),
    bad("pc-max-rank2", PC, "max", False, inputs=X2, min=MN4, max=MX4.reshape(1, 4)),
    bad("pc-grad-min-short", PC_G, "min", False, gradients=X2, inputs=X2, min=np.full(2, -1, F), max=MX4),
    bad("pc-rank0-inputs", PC, "inputs", False, ["rank"], inputs=f(1), min=np.full(1, -1, F), max=np.ones(1, F)),
    bad("pc-grad-rank5", PC_G, "inputs", False, ["rank 5"], gradients=np.zeros((1, 1, 1, 1, 2), F),
        inputs=np.zeros((1, 1, 1, 1, 2), F), min=np.full(2, -1, F), max=np.ones(2, F)),
    bad("v2-given-min-vector-per-tensor", V2, "input_min", False, ["scalar"], input=X, input_min=MN4,
        input_max=MX, range_given=True),
    bad("v2-min-vector-per-tensor", V2, "input_min", False, input=X, input_min=MN4, input_max=MX),
    bad("v2-axis0-min-scalar", V2, "input_min", False, ["axis=0"], input=X2, input_min=MN, input_max=MX, axis=0),
    bad("v4-axis1-max-wrong-length", V4, "input_max", False, input=X2, input_min=MN4, input_max=np.ones(3, F),
        axis=1, range_given=True),
    bad("v4-axis1-min-max-differ", V4, "input_max", False, input=X2, input_min=MN4, input_max=np.ones(2, F), axis=1),
    bad("v3-given-min-vector-per-tensor", V3, "input_min", False, input=X, input_min=np.full(1, -1, F),
        input_max=MX, num_bits=8),
    bad("v3-axis0-min-wrong-length", V3, "input_min", False, input=X2, input_min=MN4, input_max=MX4, num_bits=8,
        axis=0),
    bad("v4grad-min-rank2", G4, "input_min", False, ["rank 0 or 1"], gradients=X, input=X,
        input_min=np.ones((1, 1), F), input_max=MX),
    bad("v4grad-axis0-min-scalar", G4, "input_min", False, gradients=X2, input=X2, input_min=MN, input_max=MX4,
        axis=0),
    bad("v4grad-axis1-max-short", G4, "input_max", False, gradients=X2, input=X2, input_min=MN4,
        input_max=np.ones(3, F), axis=1),
    bad("v4grad-per-tensor-vector", G4, "input_min", False, ["scalar"], gradients=X, input=X, input_min=MN4,
        input_max=MX),
    # -- inverted and non-finite given ranges that TF rejects
    bad("v2-given-min-nan", V2, "input_min", False, ["Invalid range", "nan"], input=X, input_min=f(NAN),
        input_max=MX, range_given=True),
    bad("v4-given-max-nan", V4, "input_min", False, ["Invalid range"], input=X, input_min=MN, input_max=f(NAN),
        range_given=True),
    bad("v3-given-both-nan", V3, "input_min", False, ["Invalid range"], input=X, input_min=f(NAN),
        input_max=f(NAN), num_bits=8),
    bad("v1-given-nan-attr", V1, "input_min", False, ["Invalid range"], input=X, input_min=NAN, input_max=1.0,
        range_given=True),
    bad("v2-given-inverted", V2, "input_min", False, ["Invalid range: input_min 1 > input_max -1"], input=X,
        input_min=MX, input_max=MN, range_given=True),
    bad("v1-given-inverted", V1, "input_min", False, input=X, input_min=2.0, input_max=1.0, range_given=True),
    bad("args-min-nan", ARGS, "min", False, ["min has to be smaller than max"], inputs=X, min=NAN),
    bad("args-max-nan", ARGS, "min", False, ["smaller"], inputs=X, max=NAN),
    bad("args-min-equals-max", ARGS, "min", False, inputs=X, min=1.0, max=1.0),
    bad("args-grad-inverted", ARGS_G, "min", False, gradients=X, inputs=X, min=1.0, max=-1.0),
    bad("args-min-int-beyond-float", ARGS, "min", False, ["float"], inputs=X, min=10**400),
    # -- num_bits out of range
    bad("fq-num_bits-1", ARGS, "num_bits", False, ["2..16"], inputs=X, num_bits=1),
    bad("fq-num_bits-17", VARS, "num_bits", False, ["2..16"], inputs=X, min=MN, max=MX, num_bits=17),
    bad("fq-num_bits-negative", PC_G, "num_bits", False, gradients=X2, inputs=X2, min=MN4, max=MX4, num_bits=-8),
    bad("qdq-num_bits-0", V2, "num_bits", False, ["1..61"], input=X, input_min=-1.0, input_max=1.0, num_bits=0),
    bad("qdq-num_bits-62-signed", V4, "num_bits", False, ["1..61"], input=X, input_min=-1.0, input_max=1.0,
        num_bits=62),
    bad("qdq-num_bits-63-unsigned", V2, "num_bits", False, ["1..62"], input=X, input_min=-1.0, input_max=1.0,
        num_bits=63, signed_input=False),
    bad("qdq-num_bits-huge", V1, "num_bits", False, input=X, num_bits=2**70),
    bad("v3-num_bits-0", V3, "num_bits", False, ["1..61"], input=X, input_min=MN, input_max=MX, num_bits=0),
    bad("v3-num_bits-62", V3, "num_bits", False, input=X, input_min=MN, input_max=MX, num_bits=np.int32(62)),
    bad("v3-num_bits-vector", V3, "num_bits", False, ["scalar"], input=X, input_min=MN, input_max=MX, num_bits=[8]),
    bad("num_bits-float", V2, "num_bits", True, ["int"], input=X, input_min=-1.0, input_max=1.0, num_bits=8.0),
    bad("num_bits-bool", ARGS, "num_bits", True, inputs=X, num_bits=True),
    bad("num_bits-none", ARGS, "num_bits", True, inputs=X, num_bits=None),
    # -- axis out of range
    bad("axis-past-rank", V2, "axis", False, ["axis=1", "rank 1"], input=X, input_min=-1.0, input_max=1.0, axis=1),
    bad("axis-minus-2", V4, "axis", False, ["-2"], input=X, input_min=-1.0, input_max=1.0, axis=-2),
    bad("axis-on-scalar", V2, "axis", False, input=f(1), input_min=-1.0, input_max=1.0, axis=0),
    bad("axis-huge", V2, "axis", False, input=X, input_min=-1.0, input_max=1.0, axis=2**70),
    bad("v3-axis-past-rank", V3, "axis", False, ["larger than input dimensions"], input=X, input_min=MN,
        input_max=MX, num_bits=8, axis=5),
    bad("v3-axis-minus-2", V3, "axis", False, input=X2, input_min=MN, input_max=MX, num_bits=8, axis=-2),
    bad("v4grad-axis-past-rank", G4, "axis", False, gradients=X2, input=X2, input_min=MN4, input_max=MX4, axis=2),
    bad("v4grad-axis-minus-3", G4, "axis", False, gradients=X2, input=X2, input_min=MN, input_max=MX, axis=-3),
    bad("axis-float", V2, "axis", True, ["int"], input=X, input_min=-1.0, input_max=1.0, axis=0.0),
    bad("axis-string", V2, "axis", True, input=X, input_min=-1.0, input_max=1.0, axis="0"),
    # -- unknown attribute values, unknown arguments, missing arguments
    bad("round_mode-unknown", V2, "round_mode", False, ["HALF_TO_EVEN", "HALF_UP"], input=X, input_min=-1.0,
        input_max=1.0, round_mode="HALF_DOWN"),
    bad("round_mode-lowercase", V4, "round_mode", False, input=X, input_min=-1.0, input_max=1.0,
        round_mode="half_up"),
    bad("unknown-argument", V2, "foo", False, ["unknown argument", "input_min"], input=X, input_min=-1.0,
        input_max=1.0, foo=1),
    bad("attr-of-another-op", ARGS, "axis", False, ["unknown argument"], inputs=X, axis=0),
    bad("tf-attr-T-not-accepted", ARGS, "T", False, inputs=X, T="float32"),
    bad("range_given-int", V2, "range_given", True, ["bool"], input=X, input_min=-1.0, input_max=1.0, range_given=1),
    bad("signed_input-none", V2, "signed_input", True, input=X, input_min=-1.0, input_max=1.0, signed_input=None),
    bad("missing-max", VARS, "max", False, ["missing required input"], inputs=X, min=MN),
    bad("missing-gradients", G4, "gradients", False, ["missing"], input=X, input_min=MN, input_max=MX),
    bad("missing-v3-num_bits", V3, "num_bits", False, ["missing"], input=X, input_min=MN, input_max=MX),
    bad("missing-everything", ARGS, "inputs", False, ["missing"]),
]




def _entry(name):
    if name == "oracle":
        return lambda op, **kw: getattr(oracle, op)(**kw)
    return lambda op, **kw: getattr(q.raw_ops, op)(**kw, target=name)


def assert_clean(info, case: Bad):
    e = info.value
    msg = str(e)
    assert isinstance(e, QDQError) and isinstance(e, ValueError)
    assert isinstance(e, QDQTypeError) == case.type_error, f"{type(e).__name__}: {msg}"
    assert isinstance(e, TypeError) == case.type_error
    assert e.op == case.op and msg.startswith(f"{case.op}: ")
    assert e.arg == case.arg and case.arg in msg, msg
    for w in case.words:
        assert w in msg, f"{w!r} not in {msg!r}"
    assert "\n" not in msg
    frames = [str(entry.path) for entry in info.traceback]
    assert not any("/iree/" in p for p in frames), frames
    # Raised by the checks (validation, a family module through errors.Checker, or the registry lookup).
    assert frames[-1].endswith(("errors.py", "ops/__init__.py")), frames[-1]
    assert any(p.endswith(("validation.py", "config.py", "ops/__init__.py")) for p in frames), frames
    # Raised afresh by validation: no NumPy/IREE exception chained in a traceback ("during handling ...").
    cause = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    assert cause is None or isinstance(cause, (OverflowError, ValueError, TypeError)), repr(cause)


@pytest.mark.parametrize("entry", ["oracle", "cpu"])
@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_bad_input_is_a_clear_error(entry, case, no_compile):
    with pytest.raises(QDQError) as info:
        _entry(entry)(case.op, **case.kwargs)
    assert_clean(info, case)


@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_bad_input_same_error_on_every_path(case, no_compile):
    msgs = set()
    for entry in ("oracle", "cpu", "vmvx"):
        with pytest.raises(QDQError) as info:
            _entry(entry)(case.op, **case.kwargs)
        msgs.add((type(info.value), str(info.value)))
    assert len(msgs) == 1, msgs


def test_every_op_is_covered():
    """TF's ops here; aten's in test_aten_bad_input.py."""
    assert {c.op for c in BAD} == {n for n, s in registry.OPS.items() if s.namespace == "tf"}


def test_positional_arguments_are_a_type_error():
    for fn in (q.raw_ops.FakeQuantWithMinMaxArgs, oracle.FakeQuantWithMinMaxArgs):
        with pytest.raises(TypeError, match="positional"):
            fn(X)


def test_unknown_op():
    with pytest.raises(QDQError, match="unknown op 'Foo'.*FakeQuantWithMinMaxArgs") as info:
        registry.get("Foo")
    assert info.value.arg == "op"
    with pytest.raises(QDQError, match="unknown op"):
        bind("Foo", {})
    with pytest.raises(QDQError, match="unknown op"):
        registry.get(None)
    for ns in (q.raw_ops, oracle):
        with pytest.raises(AttributeError, match="Foo"):
            getattr(ns, "Foo")


# ------------------------------------------------------------------------------------------------
# Targets


@pytest.mark.parametrize("target", ["tpu", "CPU", "", None, 3, ["cpu"], "llvm-cpu"])
def test_unknown_target(target, no_compile):
    for call in (lambda: q.raw_ops.FakeQuantWithMinMaxArgs(inputs=X, target=target),
                 lambda: q.fake_quant_with_min_max_vars(X, MN, MX, target=target),
                 lambda: q.quantize_and_dequantize_v2(X, -1.0, 1.0, target=target)):
        with pytest.raises(QDQError, match="unknown target") as info:
            call()
        assert info.value.arg == "target" and "cpu" in str(info.value) and "oracle" in str(info.value)


def test_target_not_available_here(no_compile):
    ok, _ = targets.get("cuda").availability()
    if ok:
        pytest.skip("this machine can run cuda")
    for call in (lambda: q.raw_ops.FakeQuantWithMinMaxArgs(inputs=X, target="cuda"),
                 lambda: q.raw_ops.QuantizeAndDequantizeV4Grad(gradients=X, input=X, input_min=MN, input_max=MX,
                                                               target="cuda"),
                 lambda: q.fake_quant_with_min_max_args(X, target="cuda"),
                 lambda: q.quantize_and_dequantize_v2_vjp(X, -1.0, 1.0, target="cuda")):
        with pytest.raises(TargetUnavailableError) as info:
            call()
        e = info.value
        assert isinstance(e, QDQError) and e.arg == "target"
        assert str(e).startswith("target 'cuda' cannot run here")


def test_bad_input_is_reported_before_the_target(no_compile):
    """Validation comes first: the message is about the input even on an unavailable target."""
    with pytest.raises(QDQError, match="num_bits") as info:
        q.raw_ops.FakeQuantWithMinMaxArgs(inputs=X, num_bits=99, target="cuda")
    assert not isinstance(info.value, TargetUnavailableError)


def test_oracle_does_not_take_a_target():
    with pytest.raises(QDQError, match="unknown argument 'target'"):
        oracle.FakeQuantWithMinMaxArgs(inputs=X, target="cpu")
    assert bit_equal(q.raw_ops.FakeQuantWithMinMaxArgs(inputs=X, target="oracle"), oracle.FakeQuantWithMinMaxArgs(inputs=X))


# ------------------------------------------------------------------------------------------------
# Non-finite min/max: TF 2.21 computes (NaN outputs), and both paths give the same bits


def all_nan(y):
    return bool(np.isnan(y).all())


def channel0_nan_only(y):
    return bool(np.isnan(y[..., 0]).all() and not np.isnan(y[..., 1:]).any())


def finite(y):
    return bool(np.isfinite(y).all())


class Computed(NamedTuple):
    id: str
    op: str
    kwargs: dict
    expect: Any          # a predicate on the first output
    what: str            # the documented outcome
    warns: str = ""      # the QDQWarning both calls raise (README, behaviour notes), or none


PC_NAN = np.array([NAN, -1, -1, -1], F)
NF = "min or max is NaN or infinite"   # the warning of a non-finite FakeQuant range (issue 29.7)
XG = np.linspace(-3, 3, 8, dtype=F)
COMPUTED = [
    Computed("vars-min-nan", VARS, dict(inputs=X, min=f(NAN), max=MX), all_nan, "all NaN", NF),
    Computed("vars-max-nan", VARS, dict(inputs=X, min=MN, max=f(NAN)), all_nan, "all NaN", NF),
    Computed("vars-max-inf", VARS, dict(inputs=X, min=MN, max=f(INF)), all_nan, "all NaN", NF),
    Computed("vars-min-minus-inf", VARS, dict(inputs=X, min=f(-INF), max=MX), all_nan, "all NaN", NF),
    Computed("vars-both-inf", VARS, dict(inputs=X, min=f(-INF), max=f(INF)), all_nan, "all NaN", NF),
    Computed("vars-inverted", VARS, dict(inputs=X, min=MX, max=MN), finite, "computed (TF does not check order)",
             "min > max"),
    Computed("vars-grad-min-nan", VARS_G, dict(gradients=XG, inputs=X, min=f(NAN), max=MX), None,
             "computed; same bits as the oracle", NF),
    Computed("vars-grad-max-inf", VARS_G, dict(gradients=XG, inputs=X, min=MN, max=f(INF)), None,
             "computed; same bits as the oracle", NF),
    Computed("pc-one-channel-nan", PC, dict(inputs=X2, min=PC_NAN, max=MX4), channel0_nan_only,
             "NaN in that channel only", NF),
    Computed("pc-one-channel-inf", PC, dict(inputs=X2, min=np.array([-INF, -1, -1, -1], F), max=MX4),
             channel0_nan_only, "NaN in that channel only", NF),
    Computed("pc-grad-one-channel-nan", PC_G, dict(gradients=X2, inputs=X2, min=PC_NAN, max=MX4), None,
             "computed; same bits as the oracle", NF),
    Computed("args-max-inf", ARGS, dict(inputs=X, min=-1.0, max=INF), all_nan, "all NaN", NF),
    Computed("args-min-minus-inf", ARGS, dict(inputs=X, min=-INF, max=1.0), all_nan, "all NaN", NF),
    Computed("args-max-beyond-float32", ARGS, dict(inputs=X, min=-1.0, max=1e300), all_nan,
             "1e300 rounds to +inf (a float32 attr): all NaN", NF),
    Computed("args-grad-max-inf", ARGS_G, dict(gradients=XG, inputs=X, min=-1.0, max=INF), None,
             "computed; same bits as the oracle", NF),
    Computed("v2-given-min-minus-inf", V2, dict(input=X, input_min=f(-INF), input_max=MX, range_given=True), None,
             "computed; same bits as the oracle"),
    Computed("v4-given-max-inf", V4, dict(input=X, input_min=MN, input_max=f(INF), range_given=True), None,
             "computed; same bits as the oracle"),
    Computed("v3-given-inf", V3, dict(input=X, input_min=MN, input_max=f(INF), num_bits=8), None,
             "computed; same bits as the oracle"),
    Computed("v1-given-inf-attr", V1, dict(input=X, input_min=-INF, input_max=1.0, range_given=True), None,
             "computed; same bits as the oracle"),
    Computed("v2-min-max-nan-not-given", V2, dict(input=X, input_min=f(NAN), input_max=f(NAN)), finite,
             "ignored: the range comes from the data"),
    Computed("v2-nan-in-data", V2, dict(input=np.array([1, NAN, -1], F), input_min=MN, input_max=MX), all_nan,
             "all NaN (policy 5)"),
    Computed("v4-per-channel-given-nan", V4, dict(input=X2, input_min=np.array([NAN, -1], F),
                                                  input_max=np.ones(2, F), range_given=True, axis=0), None,
             "computed per channel (policy 1); same bits as the oracle"),
    Computed("v3-per-channel-given-nan", V3, dict(input=X2, input_min=np.array([NAN, -1], F),
                                                  input_max=np.ones(2, F), num_bits=8, axis=0), None,
             "computed per channel; same bits as the oracle"),
    Computed("v4grad-min-nan", G4, dict(gradients=XG, input=X, input_min=f(NAN), input_max=MX), None,
             "computed: the mask is false everywhere"),
    Computed("inputs-inf-nan", VARS, dict(inputs=np.array([-INF, INF, NAN, 0], F), min=MN, max=MX), None,
             "inf clamps, NaN stays NaN"),
]


def assert_same_bits(op, kw, got, want):
    spec = registry.get(op)
    for name, g, w in zip(spec.outputs, as_tuple(got), as_tuple(want)):
        if bit_equal(g, w):
            continue
        assert name in spec.sum_outputs, f"{name}: {describe_diff(g, w)}"
        bound = sum_bound(kw, name, w)
        assert np.array_equal(np.isnan(g), np.isnan(w)) and np.all(np.abs(g - w)[~np.isnan(w)] <= bound[~np.isnan(w)])


@pytest.mark.parametrize("case", COMPUTED, ids=[c.id for c in COMPUTED])
def test_non_finite_ranges_compute_like_tf(case):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        want = getattr(oracle, case.op)(**case.kwargs)
        got = getattr(q.raw_ops, case.op)(**case.kwargs, target="cpu")
    said = [str(w.message) for w in record if issubclass(w.category, q.QDQWarning)]
    assert len(said) == (2 if case.warns else 0) and all(case.warns in m for m in said), said
    assert_same_bits(case.op, case.kwargs, got, want)
    if case.expect is not None:
        assert case.expect(as_tuple(want)[0]), (case.what, want)


# ------------------------------------------------------------------------------------------------
# Accepted input that is not a plain C-contiguous native array: same result as the plain array


ACCEPTED = [
    ("list-of-floats", ARGS, dict(inputs=[-1.5, 0.25, 2.0]), dict(inputs=np.array([-1.5, 0.25, 2.0], F))),
    ("list-of-ints", ARGS, dict(inputs=[-2, 0, 3]), dict(inputs=np.array([-2, 0, 3], F))),
    ("nested-list", PC, dict(inputs=[[1.0, -1.0], [0.5, 3.0]], min=[-1.0, -2.0], max=[1.0, 2.0]),
     dict(inputs=np.array([[1, -1], [0.5, 3]], F), min=np.array([-1, -2], F), max=np.array([1, 2], F))),
    ("list-of-numpy-scalars", ARGS, dict(inputs=[f(1), f(2)]), dict(inputs=np.array([1, 2], F))),
    ("python-float", ARGS, dict(inputs=3.0), dict(inputs=f(3))),
    ("python-float-beyond-float32", ARGS, dict(inputs=1e300), dict(inputs=f(INF))),
    ("python-min-max", VARS, dict(inputs=X, min=-1.0, max=1.0), dict(inputs=X, min=MN, max=MX)),
    ("empty-list", ARGS, dict(inputs=[]), dict(inputs=np.zeros(0, F))),
    ("empty-2d", VARS, dict(inputs=np.zeros((0, 3), F), min=MN, max=MX), dict(inputs=np.zeros((0, 3), F), min=MN,
                                                                                max=MX)),
    ("big-endian", ARGS, dict(inputs=X.astype(">f4")), dict(inputs=X)),
    ("big-endian-f64-qdq", V4, dict(input=X.astype(">f8"), input_min=np.array(-1, ">f8"),
                                    input_max=np.array(1, ">f8"), range_given=True),
     dict(input=X.astype(D), input_min=D(-1), input_max=D(1), range_given=True)),
    ("strided", ARGS, dict(inputs=np.linspace(-2, 2, 16, dtype=F)[::2]),
     dict(inputs=np.linspace(-2, 2, 16, dtype=F)[::2].copy())),
    ("fortran-order", PC, dict(inputs=np.asfortranarray(np.arange(12, dtype=F).reshape(3, 4) / 4), min=MN4, max=MX4),
     dict(inputs=np.arange(12, dtype=F).reshape(3, 4) / 4, min=MN4, max=MX4)),
    ("broadcast-view", ARGS, dict(inputs=np.broadcast_to(f(0.3), (5,))), dict(inputs=np.full(5, 0.3, F))),
    ("read-only", ARGS, dict(inputs=np.frombuffer(X.tobytes(), F)), dict(inputs=X)),
    ("v3-num_bits-python-int", V3, dict(input=X, input_min=MN, input_max=MX, num_bits=4),
     dict(input=X, input_min=MN, input_max=MX, num_bits=np.int32(4))),
    ("v3-num_bits-big-endian", V3, dict(input=X, input_min=MN, input_max=MX, num_bits=np.array(4, ">i4")),
     dict(input=X, input_min=MN, input_max=MX, num_bits=np.int32(4))),
    ("round_mode-bytes", V2, dict(input=X, input_min=-1.0, input_max=1.0, round_mode=b"HALF_UP"),
     dict(input=X, input_min=-1.0, input_max=1.0, round_mode="HALF_UP")),
    ("numpy-int-attr", ARGS, dict(inputs=X, num_bits=np.int64(4), narrow_range=np.bool_(True)),
     dict(inputs=X, num_bits=4, narrow_range=True)),
    ("tf-name-argument", ARGS, dict(inputs=X, name="fq"), dict(inputs=X)),
]


@pytest.mark.parametrize("entry", ["oracle", "cpu"])
@pytest.mark.parametrize("id_, op, odd, plain", ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_accepted_input_like_tf_convert_to_tensor(entry, id_, op, odd, plain):
    fn = _entry(entry)
    got, want = as_tuple(fn(op, **odd)), as_tuple(fn(op, **plain))
    for g, w in zip(got, want):
        assert g.dtype.isnative and g.dtype == w.dtype
        assert bit_equal(g, w), describe_diff(g, w)


def test_inputs_are_not_modified():
    x = X.copy()
    mn, mx = MN4.copy(), MX4.copy()
    q.raw_ops.FakeQuantWithMinMaxVarsPerChannel(inputs=x.reshape(2, 4), min=mn, max=mx)
    assert bit_equal(x, X) and bit_equal(mn, MN4) and bit_equal(mx, MX4)


# ------------------------------------------------------------------------------------------------
# TF's wrappers and the vjp helpers


WRAPPER_BAD = [
    ("qdq-axis-string", lambda: q.quantize_and_dequantize(X, -1.0, 1.0, axis="0"), QDQError, "axis"),
    ("qdq-axis-float", lambda: q.quantize_and_dequantize_v2(X, -1.0, 1.0, axis=1.0), QDQError, "axis"),
    ("qdq-negative-axis-scalar", lambda: q.quantize_and_dequantize_v2(f(1), -1.0, 1.0, axis=-1), QDQError,
     "known rank"),
    ("qdq-string-input", lambda: q.quantize_and_dequantize("x", -1.0, 1.0), QDQTypeError, "input"),
    ("qdq-num_bits-0", lambda: q.quantize_and_dequantize_v2(X, -1.0, 1.0, num_bits=0), QDQError, "num_bits"),
    ("qdq-round-mode", lambda: q.quantize_and_dequantize(X, -1.0, 1.0, round_mode="UP"), QDQError, "round_mode"),
    ("qdq-given-nan", lambda: q.quantize_and_dequantize_v2(X, NAN, 1.0, range_given=True), QDQError,
     "Invalid range"),
    ("qdq-axis-min-scalar", lambda: q.quantize_and_dequantize_v2(X2, -1.0, 1.0, axis=0), QDQError, "input_min"),
    ("fq-args-num_bits", lambda: q.fake_quant_with_min_max_args(X, num_bits=20), QDQError, "num_bits"),
    ("fq-args-f64", lambda: q.fake_quant_with_min_max_args(X.astype(D)), QDQTypeError, "float64"),
    ("fq-vars-min-vector", lambda: q.fake_quant_with_min_max_vars(X, MN4, MX), QDQError, "min"),
    ("fq-pc-len", lambda: q.fake_quant_with_min_max_vars_per_channel(X2, MN4[:3], MX4), QDQError, "min"),
    ("fq-grad-shape", lambda: q.fake_quant_with_min_max_args_gradient(X[:3], X), QDQError, "gradients"),
    ("fq-vars-grad-shape", lambda: q.fake_quant_with_min_max_vars_gradient(X[:3], X, MN, MX), QDQError, "gradients"),
    ("fq-pc-grad-list-strings", lambda: q.fake_quant_with_min_max_vars_per_channel_gradient(["a"], X2, MN4, MX4),
     QDQTypeError, "gradients"),
    ("fq-missing-arguments", lambda: q.fake_quant_with_min_max_vars(X), TypeError, "min"),
    ("fq-unknown-keyword", lambda: q.fake_quant_with_min_max_args(X, foo=1), TypeError, "foo"),
]


@pytest.mark.parametrize("id_, call, exc, word", WRAPPER_BAD, ids=[w[0] for w in WRAPPER_BAD])
def test_wrapper_bad_input(id_, call, exc, word, no_compile):
    with pytest.raises(exc) as info:
        call()
    assert word in str(info.value)
    assert isinstance(info.value, (ValueError, TypeError))
    assert not any("/iree/" in str(e.path) for e in info.traceback)


# The forward runs (and compiles) first; the bad ``dy`` must then be refused before anything more compiles.
VJP_BAD = [
    ("vjp-v2-dy-shape", lambda: q.quantize_and_dequantize_v2_vjp(X, -1.0, 1.0), X[:2], QDQError, "gradients"),
    ("vjp-v2-dy-string", lambda: q.quantize_and_dequantize_v2_vjp(X, -1.0, 1.0), "a", QDQTypeError, "gradients"),
    ("vjp-vars-dy-shape", lambda: q.fake_quant_with_min_max_vars_vjp(X, -1.0, 1.0), X2, QDQError, "gradients"),
    ("vjp-args-dy-dtype", lambda: q.fake_quant_with_min_max_args_vjp(X), X.astype(D), QDQTypeError, "gradients"),
    ("vjp-pc-dy-string", lambda: q.fake_quant_with_min_max_vars_per_channel_vjp(X2, MN4, MX4), "a", QDQTypeError,
     "gradients"),
]


@pytest.mark.parametrize("id_, forward, dy, exc, word", VJP_BAD, ids=[w[0] for w in VJP_BAD])
def test_vjp_bad_dy(id_, forward, dy, exc, word, request):
    _, vjp = forward()
    request.getfixturevalue("no_compile")
    with pytest.raises(exc) as info:
        vjp(dy)
    assert word in str(info.value)
    assert not any("/iree/" in str(e.path) for e in info.traceback)


@pytest.mark.parametrize("dy", ["a", X[:2]], ids=["string", "wrong-shape"])
def test_straight_through_vjp_validates_dy(dy):
    _, vjp = q.quantize_and_dequantize_vjp(X, -1.0, 1.0)
    with pytest.raises(QDQError, match="dy|gradients"):
        vjp(dy)


def test_wrappers_accept_lists_like_tf():
    """Lists of numbers are arrays (TF's convert_to_tensor); axis=-1 on a rank-1 input is axis 0 (TF's rule)."""
    a = q.quantize_and_dequantize_v2([-1.0, 0.3, 2.0], [-1.0, -2, -4], [1, 2, 4], range_given=True, axis=-1)
    b = q.quantize_and_dequantize_v2(np.array([-1.0, 0.3, 2.0], F), np.array([-1, -2, -4], F), np.array([1, 2, 4], F),
                                     range_given=True, axis=0)
    assert bit_equal(a, b)
    c = q.fake_quant_with_min_max_vars([[0.1, 0.7]], -1, 1)
    assert bit_equal(c, q.fake_quant_with_min_max_vars(np.array([[0.1, 0.7]], F), MN, MX))
