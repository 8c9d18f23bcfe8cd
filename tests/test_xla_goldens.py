"""TF 2.21's second answer: the oracle and every runnable target under semantics="tf-xla" against the
goldens of TF's XLA lowering (tf.function(jit_compile=True) on x86-64 with FMA), bit for bit."""
import numpy as np
import pytest

from qdq_compiler import QDQError, ops, targets
from qdq_compiler import raw_ops as compiled
from qdq_compiler.oracle import raw_ops as oracle

from checks import assert_matches_case, compile_ahead, failures_of
from goldens import kwargs_of, xla_cases
import tiers
from targets_util import RUN_TARGETS, require

CASES = xla_cases()
SUCCESS = [c for c in CASES if "outputs" in c["expect"]]
ERRORS = [c for c in CASES if "error" in c["expect"]]


def test_there_are_xla_goldens_for_every_op_xla_lowers():
    names = {c["op"] for c in SUCCESS}
    assert {"QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV4", "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel",
            "FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsGradient",
            "FakeQuantWithMinMaxVarsPerChannelGradient"} <= names
    assert {c["inputs"]["input"]["dtype"] for c in SUCCESS if c["op"].startswith("QuantizeAndDequantize")} == \
        {"float16", "bfloat16", "float32", "float64"}
    assert len(SUCCESS) > 1000 and ERRORS


def _check_oracle_matches_xla(case):
    kw = kwargs_of(case)
    assert_matches_case(case, getattr(oracle, case["op"])(**kw, semantics="tf-xla"), kw)


def _check_oracle_rejects_what_xla_rejects(case):
    with pytest.raises(QDQError) as info:
        getattr(oracle, case["op"])(**kwargs_of(case), semantics="tf-xla")
    assert isinstance(info.value, ValueError)


# One test per op, every failing case listed (a pytest item per case costs more than the check).
@pytest.mark.parametrize("op", sorted({c["op"] for c in SUCCESS}))
def test_oracle_matches_xla(op):
    cases = [c for c in SUCCESS if c["op"] == op]
    failures = failures_of(cases, _check_oracle_matches_xla)
    assert not failures, f"{len(failures)} of {len(cases)} {op} cases differ:\n" + "\n".join(failures[:40])


@pytest.mark.parametrize("op", sorted({c["op"] for c in ERRORS}))
def test_oracle_rejects_what_xla_rejects(op):
    cases = [c for c in ERRORS if c["op"] == op]
    failures = failures_of(cases, _check_oracle_rejects_what_xla_rejects)
    assert not failures, f"{len(failures)} of {len(cases)} {op} error cases differ:\n" + "\n".join(failures[:40])


# Every XLA golden of the FakeQuant family runs on cpu and vmvx, the Vars ones on vulkan (slow compiles). The QDQ goldens need
# about 20 artifacts per dtype and target (op x range x round mode x layout), and the 16-bit ones compile
# slowly (every op rounds through the integer conversions), so the suite runs float32 on cpu, bfloat16 on
# vmvx, and samples of float16 (per-tensor, given range) on cpu and float64 (HALF_UP, the float64 fma) on
# vulkan (CI time; `qdqc validate --semantics tf-xla` runs every dtype everywhere). One test per group, so
# the groups spread over the workers and a failure lists every case of its group at once.
def _per_tensor_given(kw):
    return kw.get("axis", -1) == -1 and kw.get("range_given", True) is True


def _half_up(kw):
    return kw.get("round_mode") == "HALF_UP"


GROUPS = [(t, "FakeQuant", "float32", "all") for t in RUN_TARGETS if t != "vulkan"] + \
    [(t, "FakeQuantWithMinMaxVars", "float32", "all") for t in RUN_TARGETS if t == "vulkan"] + \
    [(t, "QuantizeAndDequantize", d, f) for t, d, f in (("cpu", "float32", "all"), ("vmvx", "bfloat16", "all"),
                                                        ("cpu", "float16", "per-tensor given"),
                                                        ("vulkan", "float64", "HALF_UP"))
     if t in RUN_TARGETS]
SAMPLES = {"all": lambda kw: True, "per-tensor given": _per_tensor_given, "HALF_UP": _half_up}


@pytest.mark.parametrize("target,family,dtype,sample", GROUPS,
                         ids=[f"{t}-{f}-{d}-{s.replace(' ', '_')}" for t, f, d, s in GROUPS])
def test_compiled_matches_xla(target, family, dtype, sample):
    require(target)
    failures = []
    ran = 0
    group = []
    for case in SUCCESS:
        spec = ops.get(case["op"])
        kw = kwargs_of(case)
        if case["op"].startswith(family) and kw[spec.data_input].dtype.name == dtype and SAMPLES[sample](kw):
            group.append((case, kw))
    assert len(group) > 20, len(group)
    sampled = tiers.sample(group, every=2, key=lambda c: f"{c[0]['op']}:{c[0]['id']}")   # CI tier: half
    compile_ahead(lambda c=c, kw=kw: getattr(compiled, c["op"])(**kw, target=target, semantics="tf-xla")
                  for c, kw in sampled)
    for case, kw in sampled:
        ran += 1
        try:
            result = getattr(compiled, case["op"])(**kw, target=target, semantics="tf-xla")
            assert_matches_case(case, result, kw)
        except Exception as e:  # a mismatch, or an error where TF computed a result
            failures.append(f"{case['op']}:{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    assert ran > len(group) // 4 and not failures, f"{len(failures)} of {ran} XLA golden cases differ on {target}:\n" + \
        "\n".join(failures[:40])
