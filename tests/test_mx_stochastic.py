"""Counter-based stochastic rounding's building blocks (qdq_compiler/ops/mx_stochastic.py): Threefry-2x32 against
the Random123 known answers, the per-element words, the round-up rule and the grid spacing in NumPy, and the
StableHLO macro (templates/threefry.mlir.j2) compiled for llvm-cpu, bit for bit the NumPy function; then stochastic
rounding in the compiled MX programs (rounding="stochastic") against the oracle on every target, independent of the
tiling, unbiased. The validation matrix runs it too (three fake_quantize and two quantize variants)."""
from __future__ import annotations

from pathlib import Path

import jinja2
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError
from qdq_compiler.ops import mx_stochastic as S
from checks import compile_ahead
from targets_util import require as require_target
import tiers

TEMPLATES = Path(S.__file__).resolve().parent.parent.parent / "templates"

# Random123's known answers for threefry2x32_20 (JAX's tests use the same): (key, counter) -> output.
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("key, ctr, expected", KNOWN_ANSWERS)
def test_threefry_known_answers(key, ctr, expected):
    out0, out1 = S.threefry2x32(*key, *ctr)
    assert (int(out0), int(out1)) == expected


def test_threefry_broadcasts_and_matches_elementwise():
    key0 = np.array([[KNOWN_ANSWERS[2][0][0]], [0]], np.uint32)           # [2, 1]
    counters = np.array([KNOWN_ANSWERS[2][1][0], 0, 7], np.uint32)       # [3]
    out0, out1 = S.threefry2x32(key0, np.uint32(KNOWN_ANSWERS[2][0][1]), counters, np.uint32(KNOWN_ANSWERS[2][1][1]))
    assert out0.shape == out1.shape == (2, 3) and out0.dtype == np.uint32
    assert (int(out0[0, 0]), int(out1[0, 0])) == KNOWN_ANSWERS[2][2]
    for i in range(2):
        for j in range(3):
            one = S.threefry2x32(key0[i, 0], KNOWN_ANSWERS[2][0][1], counters[j], KNOWN_ANSWERS[2][1][1])
            assert (int(one[0]), int(one[1])) == (int(out0[i, j]), int(out1[i, j]))


def test_element_random_bits_are_deterministic_and_shaped():
    bits = S.element_random_bits(12345, (3, 5, 7))
    assert bits.shape == (3, 5, 7) and bits.dtype == np.uint32
    np.testing.assert_array_equal(bits, S.element_random_bits(12345, (3, 5, 7)))
    # The word depends on the flat index only: any shape with the same size gives the same sequence.
    np.testing.assert_array_equal(bits.ravel(), S.element_random_bits(12345, 105))
    assert not np.array_equal(bits, S.element_random_bits(12346, (3, 5, 7)))


def test_element_random_bits_follow_the_contract():
    seed = (0x03707344 << 32) | 0x13198A2E
    bits = S.element_random_bits(seed, (4,))
    expected, _ = S.threefry2x32(0x13198A2E, 0x03707344, np.arange(4, dtype=np.uint32), 0)
    np.testing.assert_array_equal(bits, expected)
    assert int(S.element_random_bits(0, (1,))[0]) == KNOWN_ANSWERS[0][2][0]


def test_distinct_indices_get_distinct_words():
    bits = S.element_random_bits(2**64 - 1, (64, 64))
    assert len(np.unique(bits)) == 4096


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "1", None, True])
def test_seed_out_of_range_is_refused(seed):
    with pytest.raises(ValueError, match=r"seed.*\[0, 2\*\*64\)"):
        S.element_random_bits(seed, (2,))


def test_values_on_the_grid_never_move():
    v = np.array([0.0, 0.25, -0.5, 3.0, -6.0, 2.0**-9], np.float64)
    step = np.array([0.25, 0.25, 0.25, 1.0, 2.0, 2.0**-9])
    for r in (0, 1, 2**31, 2**32 - 1):
        out = S.round_stochastic(v, step, np.full(v.shape, r, np.uint32))
        np.testing.assert_array_equal(out, v)
        np.testing.assert_array_equal(np.signbit(out), np.signbit(v))


def test_up_iff_r_below_the_fraction_truncated_to_32_bits():
    # frac = 0.25 -> F = 2**30; frac = 1/3 of a step (not 32-bit exact) -> F = floor(2**32 / 3).
    for v, step, lo in [(1.25, 1.0, 1.0), (1.0 / 3.0, 1.0, 0.0), (-5.25, 2.0, -4.0)]:
        scaled = abs(v) / step
        threshold = int(np.floor(np.ldexp(scaled - np.floor(scaled), 32)))
        rs = np.array([0, threshold - 1, threshold, threshold + 1, 2**32 - 1], np.uint32)
        out = S.round_stochastic(np.full(5, v), np.full(5, step), rs)
        up = lo + np.copysign(step, v)
        np.testing.assert_array_equal(out, [up, up, lo, lo, lo])


def test_probability_of_rounding_up_is_the_fraction():
    rs = S.element_random_bits(2024, (200_000,))
    out = S.round_stochastic(np.full(rs.shape, 2.5), np.full(rs.shape, 2.0), rs)   # 2.5 = 2 + 0.25 steps
    assert set(np.unique(out)) == {2.0, 4.0}
    assert abs(np.mean(out == 4.0) - 0.25) < 0.005


def test_signs_zero_and_nan():
    v = np.array([-0.1, 0.1, -0.0, 0.0, np.nan, -0.75])
    step = np.full(v.shape, 0.5)
    out = S.round_stochastic(v, step, np.full(v.shape, 2**32 - 1, np.uint32))   # never up
    np.testing.assert_array_equal(out[:4], [0.0, 0.0, 0.0, 0.0])
    assert list(np.signbit(out[:4])) == [True, False, True, False]
    assert np.isnan(out[4])
    assert out[5] == -0.5
    out = S.round_stochastic(v, step, np.zeros(v.shape, np.uint32))             # up where frac > 0
    np.testing.assert_array_equal(out[[0, 1, 5]], [-0.5, 0.5, -1.0])
    assert np.isnan(out[4]) and list(np.signbit(out[2:4])) == [True, False]


def test_grid_step():
    # fp8 e4m3: 3 mantissa bits, emin = -6; fp4 e2m1: 1 mantissa bit, emin = 0.
    a = np.array([0.0, 2.0**-9, 2.0**-7, 2.0**-6, 0.02, 1.0, 1.5, 3.9, 448.0])
    np.testing.assert_array_equal(S.grid_step(a, 3, -6),
                                  [2.0**-9, 2.0**-9, 2.0**-9, 2.0**-9, 2.0**-9, 2.0**-3, 2.0**-3, 2.0**-2, 2.0**5])
    np.testing.assert_array_equal(S.grid_step(np.array([0.0, 0.5, 1.0, 2.5, 6.0]), 1, 0), [0.5, 0.5, 0.5, 1.0, 2.0])


MODULE = """{% import "threefry.mlir.j2" as tf %}
{% macro const(name, value) %}
  {{ name }}_s = stablehlo.constant dense<{{ value }}> : tensor<i32>
  {{ name }} = stablehlo.dynamic_broadcast_in_dim {{ name }}_s, %shape, dims = [] : (tensor<i32>, tensor<1xi32>) -> {{ T }}
{%- endmacro %}
func.func @main(%k0: {{ T }}, %k1: {{ T }}, %c0: {{ T }}, %c1: {{ T }}) -> ({{ T }}, {{ T }}) {
  %n = stablehlo.get_dimension_size %c0, dim = 0 : ({{ T }}) -> tensor<i32>
  %shape = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
{{ tf.threefry2x32("tf", "%k0", "%k1", "%c0", "%c1", T, const) }}
  return %tf_x0, %tf_x1 : {{ T }}, {{ T }}
}
"""


def render_threefry_module() -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.from_string(MODULE).render(T="tensor<?xi32>")


def test_macro_names_are_prefixed_and_defined_once():
    mlir = render_threefry_module()
    defined = [line.split("=")[0].strip() for line in mlir.splitlines() if " = stablehlo." in line]
    assert len(defined) == len(set(defined))
    assert all(name.startswith("%tf_") for name in defined if name not in ("%n", "%shape"))
    assert "%tf_x0 = " in mlir and "%tf_x1 = " in mlir


def test_macro_compiled_for_llvm_cpu_matches_numpy():
    iree_compiler = pytest.importorskip("iree.compiler")
    iree_runtime = pytest.importorskip("iree.runtime")
    vmfb = iree_compiler.compile_str(render_threefry_module(), target_backends=["llvm-cpu"], input_type="stablehlo",
                                     extra_args=["--iree-llvmcpu-target-cpu=host"])
    module = iree_runtime.load_vm_flatbuffer(vmfb, driver="local-task")
    rng = np.random.default_rng(7)
    words = rng.integers(0, 2**32, size=(4, 10_000), dtype=np.uint64).astype(np.uint32)
    words[:, :3] = np.array([[*key, *ctr] for key, ctr, _ in KNOWN_ANSWERS], np.uint32).T
    results = module.main(*(w.view(np.int32) for w in words))
    got = [np.asarray(r.to_host() if hasattr(r, "to_host") else r).view(np.uint32) for r in results]
    expected = S.threefry2x32(*words)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert [(int(a), int(b)) for a, b in zip(got[0][:3], got[1][:3])] == [out for _, _, out in KNOWN_ANSWERS]


# -- stochastic rounding in the compiled MX programs (qdq_compiler.mx, rounding="stochastic") ----------------

def _x(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-130, 100, shape[:1] + (1,) * (len(shape) - 1))))
    x = x.astype(np.float32)
    x.reshape(-1)[:4] = 0.0, -0.0, 1e-45, -3e-40
    return x


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
def test_compiled_is_the_references_bits(target):
    """fake_quantize and quantize, every format on cpu (in the CI tier the half vmvx does not run; every other one
    on vmvx and Vulkan; one rule each, in turn),
    blocks along the last axis and along a middle one with a shorter last block: the oracle's bits (its words from
    ops/mx_stochastic.py)."""
    require_target(target)
    elems = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4_e2m1", "mxint8")
    cases = []
    for i, elem in enumerate(elems):
        if target != "cpu" and i % 2 != ("vmvx", "vulkan").index(target):
            continue
        if target == "cpu" and i % 2 == 0 and not tiers.full():   # the CI tier: vmvx's half runs there
            continue
        rule = ("floor", "ceil", "even", "rceil")[i % 4]
        for shape, axis in (((5, 64), -1), ((3, 33, 2), 1)):
            x, seed = _x(shape, i), 2 ** 64 - 1 - i * 977
            cases.append((elem, shape, x, {"axis": axis, "scale_rule": rule, "rounding": "stochastic", "seed": seed}))
    expected = [(q.oracle.mx.fake_quantize(x, elem, **kw), q.oracle.mx.quantize(x, elem, **kw))
                for elem, _, x, kw in cases]
    compile_ahead([call for (e, _, x, kw), (_, (we, ws)) in zip(cases, expected) for call in (
        lambda x=x, e=e, kw=kw: q.mx.fake_quantize(x, e, target=target, **kw),
        lambda x=x, e=e, kw=kw: q.mx.quantize(x, e, target=target, **kw),
        lambda we=we, ws=ws, kw=kw: q.mx.dequantize(we, ws, axis=kw["axis"], target=target))])
    for (elem, shape, x, kw), (want, (we, ws)) in zip(cases, expected):
        assert np.array_equal(q.mx.fake_quantize(x, elem, target=target, **kw).view(np.uint32),
                              want.view(np.uint32)), (elem, shape)
        e, s = q.mx.quantize(x, elem, target=target, **kw)
        assert np.array_equal(e.view(np.uint8), we.view(np.uint8)) and np.array_equal(s.view(np.uint8),
                                                                                       ws.view(np.uint8))
        assert np.array_equal(q.mx.dequantize(e, s, axis=kw["axis"], target=target).view(np.uint32),
                              want.view(np.uint32))


def test_the_bits_follow_the_flat_index_not_the_tiling():
    """The same x viewed as [4, 64] or [2, 2, 64] (blocks along the last axis, the same blocks) gives the same bits:
    each element's word comes from its flat index; another seed gives other bits."""
    x = _x((4, 64), 7)
    a = q.mx.fake_quantize(x, "mxfp4_e2m1", rounding="stochastic", seed=12345)
    b = q.mx.fake_quantize(x.reshape(2, 2, 64), "mxfp4_e2m1", rounding="stochastic", seed=12345)
    c = q.mx.fake_quantize(x, "mxfp4_e2m1", rounding="stochastic", seed=12346)
    assert np.array_equal(a.view(np.uint32), b.reshape(4, 64).view(np.uint32))
    assert not np.array_equal(a.view(np.uint32), c.view(np.uint32))


def test_stochastic_rounding_is_unbiased_and_stays_on_the_grid():
    """0.3 in MXFP4 blocks whose amax is 6 (X = 1, grid 0 and 0.5 there): over 4 seeds of 8,160 elements, the mean
    is 0.3 within 0.01 and every answer is 0 or 0.5; a value on the grid never moves."""
    x = np.full((255, 32), 0.3, np.float32)
    x[:, 0] = 6.0
    ys = np.stack([q.mx.fake_quantize(x, "mxfp4_e2m1", rounding="stochastic", seed=s)[:, 1:] for s in range(4)])
    assert set(np.unique(ys).tolist()) == {0.0, 0.5} and abs(ys.mean() - 0.3) < 0.01
    on_grid = np.tile(np.array([6, 4, 3, 2, 1.5, 1, 0.5, 0] * 4, np.float32), (3, 1))
    assert np.array_equal(q.mx.fake_quantize(on_grid, "mxfp4_e2m1", rounding="stochastic", seed=9), on_grid)


def test_bad_arguments_are_named():
    x = _x((2, 32))
    with pytest.raises(QDQError, match="rounding='up' is not allowed"):
        q.mx.fake_quantize(x, "mxfp8_e4m3", rounding="up")
    with pytest.raises(QDQError, match=r"seed=-1 is out of range; allowed: 0 .. 2\*\*64 - 1"):
        q.mx.fake_quantize(x, "mxfp8_e4m3", rounding="stochastic", seed=-1)
    with pytest.raises(QDQError, match="torchao 0.18.0 rounds to nearest only"):
        q.mx.fake_quantize(x, "mxfp8_e4m3", rounding="stochastic", semantics="torchao")
