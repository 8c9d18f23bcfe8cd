"""The oracle against every TF 2.21 golden case, bit for bit (NaN positions and zero signs included)."""
import pytest

from qdq_compiler import QDQError
from qdq_compiler.oracle import raw_ops as oracle

from checks import assert_matches_case
from goldens import (OWN_WORDING_KINDS, POLICY_ERROR_KINDS, case_ids, error_cases, is_per_channel_given_range,
                     kwargs_of, success_cases, tf_words)

SUCCESS = success_cases()
# TF's kernel-lookup failures for half types ("No OpKernel was registered ..."): our own dtype wording.
KERNEL_LOOKUP = ("[[", "No OpKernel was registered")
ERRORS = error_cases()


@pytest.mark.parametrize("case", SUCCESS, ids=case_ids(SUCCESS))
def test_oracle_matches_tf(case):
    kw = kwargs_of(case)
    if case.get("deviation") == "per_channel_given_range":
        pytest.fail("a per-channel given range must be an error case in the goldens")
    result = getattr(oracle, case["op"])(**kw)
    assert_matches_case(case, result, kw)


@pytest.mark.parametrize("case", ERRORS, ids=case_ids(ERRORS))
def test_oracle_rejects_like_tf(case):
    err = case["expect"]["error"]
    kw = kwargs_of(case)
    fn = getattr(oracle, case["op"])
    if err["kind"] in POLICY_ERROR_KINDS or is_per_channel_given_range(case):
        fn(**kw)  # policy 1 and 2: we implement what TF 2.21 refuses; it must run cleanly
        return
    with pytest.raises(QDQError) as info:
        fn(**kw)
    assert isinstance(info.value, ValueError)
    if err["kind"] not in OWN_WORDING_KINDS and not tf_words(err["message"]).startswith(KERNEL_LOOKUP):
        assert tf_words(err["message"]) in str(info.value)
