"""Assertions shared by the tests: bit-exact comparison and the project-policy comparisons."""
from __future__ import annotations

import numpy as np

from qdq_compiler import ops as registry
from qdq_compiler.numerics import bit_equal, bits, flush, three_d
from goldens import decode


def as_tuple(result):
    return tuple(result) if isinstance(result, tuple) else (result,)


def describe_diff(got: np.ndarray, want: np.ndarray) -> str:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape}/{got.dtype} != {want.shape}/{want.dtype}"
    g, w = got.ravel(), want.ravel()
    bad = np.nonzero((bits(g) != bits(w)) & ~(np.isnan(g) & np.isnan(w)))[0]
    i = bad[:5]
    return (f"{bad.size} of {g.size} differ; first at {list(i)}: got {[float(v).hex() for v in g[i]]} "
            f"want {[float(v).hex() for v in w[i]]}")


def sum_bound(case_inputs: dict, out_name: str, want: np.ndarray) -> np.ndarray:
    """The error bound of a float32 sum whose order is free (policy 6): (n-1) * eps * sum |g|."""
    g = case_inputs["gradients"].astype(np.float64)
    n = g.size // max(want.size, 1)
    axes = tuple(range(g.ndim - want.ndim))
    return (max(n - 1, 0) * np.finfo(np.float32).eps * np.abs(g).sum(axis=axes)).astype(np.float64)


def zero_bound_from_data(case: dict, kwargs: dict) -> bool:
    """A QDQ range taken from the data whose min or max is a zero (of either sign, after DAZ).

    Which zero a min/max reduction returns depends on its tie order, in TF as anywhere; so, as for
    all-zero data (policy 7), the sign of zero outputs is free there.
    """
    spec = registry.get(case["op"])
    given = spec.attr_map.get("range_given")
    if given is None or kwargs.get("range_given", given.default):
        return False
    x = flush(kwargs["input"])
    if x.size == 0:
        return False
    axis = kwargs.get("axis", -1)
    x3 = three_d(x, None if axis == -1 else axis)
    with np.errstate(invalid="ignore"):
        return bool(np.any(x3.min(axis=(0, 2)) == 0) or np.any(x3.max(axis=(0, 2)) == 0))


def assert_matches_case(case: dict, result, kwargs: dict):
    """Compare a result with the golden outputs: bit for bit, and the deviation policies where tagged."""
    spec = registry.get(case["op"])
    outs = as_tuple(result)
    expected = case["expect"]["outputs"]
    deviation = case.get("deviation") or ("zero_sign" if zero_bound_from_data(case, kwargs) else None)
    for name, got in zip(spec.outputs, outs):
        want = decode(expected[name])
        if deviation == "zero_sign":  # policy 7: either sign of zero
            got_c = np.where(got == 0, 0, got).astype(got.dtype)
            want_c = np.where(want == 0, 0, want).astype(want.dtype)
            assert bit_equal(got_c, want_c), f"{name}: {describe_diff(got_c, want_c)}"
        elif deviation == "nan_in_data_range":  # policy 5: NaN anywhere -> all NaN
            assert np.isnan(got).all(), f"{name}: expected all NaN (policy 5), got {got}"
        elif name in spec.sum_outputs and not bit_equal(got, want):
            bound = sum_bound(kwargs, name, want)
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            assert np.array_equal(np.isnan(got), np.isnan(want)) and np.all(diff[~np.isnan(want)] <= bound[~np.isnan(want)]), \
                f"{name}: sum beyond the float32 summation bound: {describe_diff(got, want)}"
        else:
            assert bit_equal(got, want), f"{name}: {describe_diff(got, want)}"


def failures_of(cases, check) -> list[str]:
    """``check(case)`` on every case; one line per case that failed ('<id>: <error>'), for one test that
    lists every failing case at once (cheaper than a pytest item per case, and the id names it)."""
    failures = []
    for case in cases:
        try:
            check(case)
        except Exception as e:  # an assertion, an unexpected error
            failures.append(f"{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
        except BaseException as e:  # pytest.fail (not an Exception); KeyboardInterrupt and SystemExit go on
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            failures.append(f"{case['id']}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    return failures


def compile_ahead(calls) -> int:
    """Compile, many to a module (qdq_compiler.together), the configurations that ``calls`` (functions of no
    argument, each a public call as the test makes it) will run, before the test makes them one by one: a test
    over many reference cases then pays iree-compile's per-module cost a few times instead of once per
    configuration. Each call runs up to where it would load its artifact (execute.gathering), so the
    configurations are the calls' own; a call that fails before (a case that expects an error) adds none.
    Returns how many were compiled together."""
    import warnings
    from qdq_compiler.execute import Gathered, gathering
    from qdq_compiler.together import compile_together
    with gathering() as cfgs, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in calls:
            try:
                call()
            except (Gathered, Exception):   # stopped at its artifact, or its own error (the test sees it later)
                pass
    return compile_together(cfgs)
