"""The oracle against every TF 2.21 golden case, bit for bit (NaN positions and zero signs included): the
float32/float64 ones and the float16/bfloat16 FakeQuant ones of goldens/half/ (ids ...-f16, ...-bf16)."""
import json

import pytest

from qdq_compiler import QDQError
from qdq_compiler import goldens as package_goldens
from qdq_compiler.oracle import raw_ops as oracle

from checks import assert_matches_case, failures_of
from goldens import (OWN_WORDING_KINDS, POLICY_ERROR_KINDS, case_ids, error_cases, half_cases,
                     is_per_channel_given_range, kwargs_of, success_cases, tf_words)

HALF = half_cases()
# 16-bit Args ranges beyond the type's (float16: |min| or |max| > 65504, or infinite): the definition answers
# them, the package refuses them (its grid ends would be infinities in the storage type).
HALF_REFUSED = [c for c in HALF if c.get("deviation") == "range_not_representable"]
SUCCESS = success_cases() + [c for c in HALF if not c.get("deviation")]
# TF's kernel-lookup failures for half types ("No OpKernel was registered ..."): our own dtype wording.
KERNEL_LOOKUP = ("[[", "No OpKernel was registered")
ERRORS = error_cases()


def _by_op(cases) -> dict[str, list]:
    out = {}
    for c in cases:
        out.setdefault(c["op"] + ("-" + c["id"].rsplit("-", 1)[1] if c["id"].endswith(("-f16", "-bf16")) else ""),
                       []).append(c)
    return out


# One test per op (and 16-bit type), each case checked and every failing one listed: 7,000 pytest items
# cost more in pytest-xdist's bookkeeping than the checks themselves (a case's id names it in the message).
SUCCESS_BY_OP = _by_op(SUCCESS)
ERRORS_BY_OP = _by_op(ERRORS)


def _check_oracle_matches_tf(case):
    kw = kwargs_of(case)
    if case.get("deviation") == "per_channel_given_range":
        pytest.fail("a per-channel given range must be an error case in the goldens")
    result = getattr(oracle, case["op"])(**kw)
    assert_matches_case(case, result, kw)


def _check_oracle_rejects_like_tf(case):
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


@pytest.mark.parametrize("op", list(SUCCESS_BY_OP))
def test_oracle_matches_tf(op):
    cases = SUCCESS_BY_OP[op]
    failures = failures_of(cases, _check_oracle_matches_tf)
    assert not failures, f"{len(failures)} of {len(cases)} {op} cases differ:\n" + "\n".join(failures[:40])


@pytest.mark.parametrize("op", list(ERRORS_BY_OP))
def test_oracle_rejects_like_tf(op):
    cases = ERRORS_BY_OP[op]
    failures = failures_of(cases, _check_oracle_rejects_like_tf)
    assert not failures, f"{len(failures)} of {len(cases)} {op} error cases differ:\n" + "\n".join(failures[:40])


@pytest.mark.parametrize("case", HALF_REFUSED, ids=case_ids(HALF_REFUSED))
def test_oracle_refuses_half_range_beyond_the_type(case):
    dtype = case["inputs"]["inputs"]["dtype"]
    with pytest.raises(QDQError, match=f"is not representable in {dtype}"):
        getattr(oracle, case["op"])(**kwargs_of(case))


def test_half_goldens_cover_every_fake_quant_op():
    """Each FakeQuant op has float16 and bfloat16 cases, each from a float32 success case (its id and
    attrs), every tensor in the case's 16-bit type, the tf-cpu semantics and the stated definition."""
    fq = tuple(op for op in package_goldens.ops() if op.startswith("FakeQuant"))
    assert package_goldens.half_ops() == fq and len(fq) == 6
    for op in fq:
        data = package_goldens.load_half(op)
        assert set(data) == {"op", "tf_version", "semantics", "definition", "cases"}
        assert data["op"] == op and data["semantics"] == "tf-cpu" and "rounded once" in data["definition"]
        f32 = {c["id"]: c for c in package_goldens.load(op)["cases"] if "outputs" in c["expect"]}
        ids = [c["id"] for c in data["cases"]]
        assert len(ids) == len(set(ids))
        for dtype, short in (("float16", "f16"), ("bfloat16", "bf16")):
            mine = [c for c in data["cases"] if c["id"].endswith("-" + short)]
            assert len(mine) >= 0.9 * len(f32), (op, dtype, len(mine), len(f32))
            for c in mine:
                src = f32[c["id"][: -len(short) - 1]]
                assert c["op"] == op and c["attrs"] == src["attrs"] and "outputs" in c["expect"]
                assert c.get("sum_outputs") == src.get("sum_outputs")
                tensors = list(c["inputs"].values()) + list(c["expect"]["outputs"].values())
                assert {t["dtype"] for t in tensors} == {dtype}, c["id"]
                assert [t["shape"] for t in c["inputs"].values()] == [t["shape"] for t in src["inputs"].values()]
        keys = [json.dumps([c["attrs"], c["inputs"]], sort_keys=True) for c in data["cases"]]
        assert len(keys) == len(set(keys)), f"{op}: duplicate 16-bit cases"
