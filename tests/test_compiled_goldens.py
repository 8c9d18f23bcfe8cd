"""Every TF 2.21 golden case through the compiled path, bit for bit, on each runnable target."""
import pytest

from qdq_compiler import QDQError
from qdq_compiler import raw_ops as compiled

from checks import assert_matches_case
from goldens import case_ids, error_cases, is_per_channel_given_range, kwargs_of, success_cases, POLICY_ERROR_KINDS
from targets_util import RUN_TARGETS, require

SUCCESS = success_cases()


@pytest.mark.parametrize("target", RUN_TARGETS)
def test_compiled_matches_tf(target):
    """One test per target over all cases, so that a failure lists every mismatching case at once."""
    require(target)
    failures = []
    for case in SUCCESS:
        kw = kwargs_of(case)
        try:
            result = getattr(compiled, case["op"])(**kw, target=target)
            assert_matches_case(case, result, kw)
        except Exception as e:  # a mismatch, or an error where TF computed a result
            failures.append(f"{case['op']}:{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    assert not failures, f"{len(failures)} of {len(SUCCESS)} golden cases differ on {target}:\n" + "\n".join(failures[:40])


def test_compiled_path_validates_before_compiling():
    """Errors come from validation, identical to the oracle's, before any artifact is built."""
    for case in error_cases():
        if case["expect"]["error"]["kind"] in POLICY_ERROR_KINDS or is_per_channel_given_range(case):
            continue
        with pytest.raises(QDQError):
            getattr(compiled, case["op"])(**kwargs_of(case), target="cpu")
