"""Every TF 2.21 golden case through the compiled path, bit for bit, on each runnable target."""
import json

import pytest

from qdq_compiler import QDQError
from qdq_compiler import raw_ops as compiled

from checks import assert_matches_case, compile_ahead
from goldens import (case_ids, error_cases, half_cases, is_per_channel_given_range, kwargs_of, success_cases,
                     POLICY_ERROR_KINDS)
from targets_util import RUN_TARGETS, require
import tiers

SUCCESS = success_cases()
HALF = tuple(c for c in half_cases() if "outputs" in c["expect"] and not c.get("deviation"))
# Every case on cpu; on the slower drivers (a Vulkan call on lavapipe is ~50 ms) the spec's cases, the ties,
# the infinities with narrow_range (vmvx's NaN zero point) and every 20th: ~1/7 of them. The whole set runs
# per target in `qdqc validate --targets all --dtypes f16,bf16` (its 16-bit FakeQuant cells take every one).
HALF_SAMPLE = tuple(c for i, c in enumerate(HALF) if i % 20 == 0 or {"spec", "tie"} & set(c.get("tags", ()))
                    or {"inf", "narrow"} <= set(c.get("tags", ())))


# Where a call pays a driver's round trip (Vulkan on lavapipe: 4 ms quiet, 15-20 ms beside a busy core, so
# 3,782 cases took 60-150 s of CI), a sample that still runs every configuration: each configuration's first
# case, every case whose tags meet that target's quirks, and every sixth (~1/3). The whole set on that target:
# `qdqc validate --targets vulkan` (its cells run 190-333 golden cases each).
# The CI tier (tests/tiers.py) samples every target so (cpu every 8th, vmvx 12th, vulkan 24th, every configuration's
# first case, and its quirks' cases: all on cpu, one in 2 by the tiers rule on vmvx and vulkan); the full tier runs
# every case on every target, 16-bit included.
QUIRKS = {"spec", "nan", "empty", "large", "subnormal_intermediate"}
SAMPLED_TARGETS = {"vulkan": QUIRKS}
CI_EVERY = {"vulkan": 24, "vmvx": 12, "cpu": 8}
CI_QUIRK_EVERY = {"vulkan": 2, "vmvx": 2, "cpu": 1}   # of the quirk-tagged cases (most of the slow drivers' sample)


def _config_key(case, target: str) -> str:
    """The configuration (artifact) the compiled path runs ``case`` in on ``target``."""
    from qdq_compiler.execute import config_for_call
    from qdq_compiler.validation import bind
    return json.dumps(config_for_call(bind(case["op"], kwargs_of(case)), target).key(), sort_keys=True, default=str)


def golden_sample(cases, target: str, quirk_tags, every: int = 6, quirk_every: int = 1) -> list:
    configs, out = set(), []
    for i, case in enumerate(cases):
        key = _config_key(case, target)
        quirk = quirk_tags & set(case.get("tags", ())) and tiers.kept(f"{case['op']}:{case['id']}", quirk_every)
        if key not in configs or i % every == 0 or quirk:
            configs.add(key)
            out.append(case)
    return out


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_compiled_matches_tf(target):
    """One test per target over all cases (a sample on SAMPLED_TARGETS), so that a failure lists every
    mismatching case at once."""
    require(target)
    cases = SUCCESS if tiers.full() else golden_sample(SUCCESS, target, QUIRKS, CI_EVERY.get(target, 1),
                                                       CI_QUIRK_EVERY.get(target, 1))
    compile_ahead(lambda c=c: getattr(compiled, c["op"])(**kwargs_of(c), target=target) for c in cases)
    failures = []
    for case in cases:
        kw = kwargs_of(case)
        try:
            result = getattr(compiled, case["op"])(**kw, target=target)
            assert_matches_case(case, result, kw)
        except Exception as e:  # a mismatch, or an error where TF computed a result
            failures.append(f"{case['op']}:{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    assert not failures, f"{len(failures)} of {len(cases)} golden cases differ on {target}:\n" + "\n".join(failures[:40])


def test_the_sample_runs_every_configuration_of_the_goldens():
    """The CI tier's samples still compile and run every configuration the goldens reach, on every target."""
    def configs(cases, target):
        return {_config_key(c, target) for c in cases}
    for target, every in CI_EVERY.items():
        sample = golden_sample(SUCCESS, target, QUIRKS, every, CI_QUIRK_EVERY[target])
        assert configs(sample, target) == configs(SUCCESS, target), target
        assert len(sample) < len(SUCCESS) * (1 / every + 0.25), (target, len(sample), len(SUCCESS))
    for target in SAMPLED_TARGETS:
        half = golden_sample(HALF, target, {"spec"}, 25)
        assert configs(half, target) == configs(HALF, target) and len(half) < len(HALF_SAMPLE), target


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_compiled_matches_tf_in_16_bit(target):
    """The float16/bfloat16 FakeQuant goldens (TF's float32 kernel on the exact 16-bit inputs, rounded once).
    They caught vmvx's nudge answering an infinite range with narrow_range wrongly: its float NaN test and
    ordered compares of a NaN zero point (templates/_nudge.mlir.j2)."""
    require(target)
    failures = []
    # Vulkan: every configuration, the spec's cases and every 25th (its calls are the slow ones; vmvx keeps
    # HALF_SAMPLE, whose inf + narrow cases meet its NaN zero point).
    cases = HALF if target == "cpu" or tiers.full() else golden_sample(HALF, target, {"spec"}, 25) \
        if target in SAMPLED_TARGETS else HALF_SAMPLE
    compile_ahead(lambda c=c: getattr(compiled, c["op"])(**kwargs_of(c), target=target) for c in cases)
    for case in cases:
        kw = kwargs_of(case)
        try:
            assert_matches_case(case, getattr(compiled, case["op"])(**kw, target=target), kw)
        except Exception as e:
            failures.append(f"{case['op']}:{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    assert not failures, f"{len(failures)} of {len(cases)} 16-bit cases differ on {target}:\n" + "\n".join(failures[:40])


def test_compiled_path_validates_before_compiling():
    """Errors come from validation, identical to the oracle's, before any artifact is built."""
    for case in error_cases():
        if case["expect"]["error"]["kind"] in POLICY_ERROR_KINDS or is_per_channel_given_range(case):
            continue
        with pytest.raises(QDQError):
            getattr(compiled, case["op"])(**kwargs_of(case), target="cpu")
