"""MX fake quantization compiled (qdq_compiler.mx, ops/mx_fake_quant.py, templates/mx_fake_quant.mlir.j2) against
torchao 0.18.0, bit for bit: its goldens (qdq_compiler/goldens/mx/torchao.json) through the compiled program, the
scale rules at every exponent where they turn (RCEIL's float32 log2 thresholds), subnormal and special blocks,
blocks along any axis with a shorter last block, and bad input named.

Where the rest is covered: the validation matrix (`qdqc validate --semantics torchao`: 20 format x rule variants,
static and dynamic, on cpu, vmvx and Vulkan, random blocks with zeros, subnormals, NaN and infinities), the
NumPy reference against the goldens (tests/test_mx_numerics.py). Here every golden kind runs on cpu; vmvx and
Vulkan run one scale rule per format (rotating), which is 5 programs each, not 20."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, QDQTypeError
from qdq_compiler.ops import mx_fake_quant as MF
from qdq_compiler.ops import mx_specs as MS
from qdq_compiler.ops import mx_numerics as MXN
from checks import compile_ahead
from targets_util import require as require_target

GOLDENS = json.loads((Path(MF.__file__).resolve().parent.parent / "goldens" / "mx" / "torchao.json").read_text())
KINDS = sorted({(c["elem"], c["scale_rule"]) for c in GOLDENS["cases"] if c["elem"] != "nvfp4"})
ROTATING = [(e, MF.SCALE_RULES[i % 4]) for i, e in enumerate(MXN.ELEMS)]   # torchao's formats, one rule each
OCP_ROTATING = [(e, MF.SCALE_RULES[i % 4]) for i, e in enumerate(MF.MX_ELEMS)]   # every format (MXINT8 too)
SWEEP = [(e, r, sem) for e in MF.MX_ELEMS for r in MF.SCALE_RULES for sem in ("ocp", "torchao")
         if sem == "ocp" or e in MXN.ELEMS]


@pytest.fixture(scope="module", autouse=True)
def _compiled_together():
    """The cpu programs of the sweeps below (one configuration a test), many to a module before the tests run
    (checks.compile_ahead); under xdist both workers ask for the same modules and the cache's lock shares them."""
    calls = [lambda e=e, r=r, s=s: q.mx.fake_quantize(np.zeros((2, 32), np.float32), e, scale_rule=r, semantics=s)
             for e, r, s in SWEEP]
    calls += [lambda e=e, r=r, x=x: q.mx.fake_quantize(x, e, scale_rule=r, semantics="torchao")
              for e, r in KINDS for x, _, _ in _golden_batch(e, r)]
    compile_ahead(calls)


def _bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


def _golden_batch(elem, rule):
    """The kind's goldens (shape [rows, 64] or so, blocks of 32 along the last axis) as one [n, cols] batch per
    width, with torchao's dequantized bits and where NaN against NaN is all that is asserted (NaN * NaN)."""
    by_width = {}
    for c in GOLDENS["cases"]:
        if (c["elem"], c["scale_rule"]) != (elem, rule) or "error" in c or c["block_size"] != 32:
            continue
        x = np.array(c["x"], np.uint64).astype(np.uint32).view(np.float32).reshape(c["shape"])
        want = np.array(c["dequantized"], np.uint64).astype(np.uint32).reshape(c["shape"])
        nan_blocks = np.repeat(np.asarray(c["scales"]).reshape(c["shape"][0], -1) == 255, 32, axis=1)
        xs, ws, ns = by_width.setdefault(c["shape"][1], ([], [], []))
        xs.append(x), ws.append(want), ns.append(nan_blocks)
    return [(np.concatenate(x), np.concatenate(w), np.concatenate(n)) for x, w, n in by_width.values()]


def _assert_torchao(got, want, nan_blocks):
    differ = _bits(got) != want
    both_nan = np.isnan(got) & np.isnan(want.view(np.float32)) & nan_blocks
    assert not (differ & ~both_nan).any(), np.argwhere(differ & ~both_nan)[:5]


@pytest.mark.parametrize("elem,rule", KINDS)
def test_torchaos_goldens_compiled_on_cpu(elem, rule):
    batches = _golden_batch(elem, rule)
    assert sum(len(x) for x, _, _ in batches) >= 30
    for x, want, nan_blocks in batches:
        _assert_torchao(q.mx.fake_quantize(x, elem, scale_rule=rule, semantics="torchao"), want, nan_blocks)


@pytest.mark.parametrize("target", ["vmvx", "vulkan"])
@pytest.mark.parametrize("elem,rule", ROTATING)
def test_torchaos_goldens_compiled_elsewhere(target, elem, rule):
    require_target(target)
    for x, want, nan_blocks in _golden_batch(elem, rule):
        _assert_torchao(q.mx.fake_quantize(x, elem, scale_rule=rule, target=target, semantics="torchao"), want,
                        nan_blocks)


def _amax_sweep(e: MXN.Elem) -> np.ndarray:
    """Block magnitudes at every power of two and just around it (1 to 40 ulps: where RCEIL's float32 log2
    rounds down), around the subnormal thresholds, zero, and the largest float: one block each."""
    k = np.arange(1, 255, dtype=np.int64)[:, None] << 23
    around = np.concatenate([k + np.arange(0, 41), k - np.arange(1, 4), (k | 0x7FFFFF) - np.arange(0, 3)], axis=1)
    maxm = int(np.float32(e.max_value).view(np.uint32)) & 0x7FFFFF
    near_max = k + maxm + np.arange(-3, 4)
    fam = MF.FAMILY.template_vars(MS.SPECS[0], {"elem": e.name, "scale_rule": "rceil", "block_size": 32,
                                                  "ragged": False})
    edges = np.concatenate([fam["thr_normal"] + np.arange(-40, 40), fam["thr_one"] + np.arange(-40, 40),
                            np.arange(0, 64), [0x7F7FFFFF, 0x7F800000],
                            # subnormal amaxes where an emax of 0 (MXINT8) still tells them apart
                            [0x3FFFFF, 0x400000, 0x400001, 0x7EFFEF, 0x7F0000, 0x7F0001, 0x7FFFFF]])
    a = np.concatenate([around.ravel(), near_max.ravel(), edges])
    return a[(a >= 0) & (a <= 0x7F800000)].astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("elem,rule,semantics", SWEEP)
def test_every_scale_exponent_turns_where_the_reference_does(elem, rule, semantics):
    """One block per magnitude: the block's largest element is it, the rest a ramp below it with both signs,
    so that the scale, the elements' rounding near the largest and the dequantized value are all checked."""
    amax = _amax_sweep(MF.elem_info(elem))
    ramp = np.linspace(-1.0, 1.0, 31, dtype=np.float32)
    with np.errstate(all="ignore"):
        x = np.concatenate([amax[:, None], (amax[:, None] * ramp).astype(np.float32)], axis=1)
    got = q.mx.fake_quantize(x, elem, scale_rule=rule, semantics=semantics)
    want = q.oracle.mx.fake_quantize(x, elem, scale_rule=rule, semantics=semantics)
    assert np.array_equal(_bits(got), _bits(want))


def test_ocp_is_the_default_and_its_answers_follow_the_text():
    """Values worked out from OCP v1.0 section 6.3 by hand, not by either implementation."""
    x = np.zeros((4, 32), np.float32)
    x[0, :3] = 480, -160, 72          # E4M3 floor: X = 2^(8 - 8) = 1; 480 clamps to 448; 72 and -160 exact
    x[1, :2] = 3e-39, 1e-45           # byte 0: X = 2^-127 both ways; 3e-39 / X = 0.5104 -> 0.5 (E4M3's step 1/16 there)
    x[2, :2] = np.inf, 1.0            # no finite amax: NaN scale, the whole block NaN
    x[3, :2] = np.float32(448 * 2.0 ** 20) * np.float32(1 + 2.0 ** -23), 1.0   # rceil: 2^21 (exact), 2^20 (torchao)
    y = q.mx.fake_quantize(x, "mxfp8_e4m3")
    assert list(y[0, :3]) == [448, -160, 72]
    assert y[1, 0] == np.float32(0.5 * 2.0 ** -127) and y[1, 1] == 0
    assert np.all(_bits(y[2]) == 0x7FC00000)
    assert np.array_equal(_bits(y), _bits(q.oracle.mx.fake_quantize(x, "mxfp8_e4m3")))
    r = q.mx.fake_quantize(x[3:], "mxfp8_e4m3", scale_rule="rceil")
    assert r[0, 0] == 224 * 2.0 ** 21 and r[0, 1] == 0   # 1 / 2^21 rounds to 0 in E4M3 (below 2^-10)
    t = q.mx.fake_quantize(x[3:], "mxfp8_e4m3", scale_rule="rceil", semantics="torchao")
    assert t[0, 0] == 448 * 2.0 ** 20 and t[0, 1] == 0
    torchao = q.mx.fake_quantize(x[:2], "mxfp8_e4m3", semantics="torchao")
    assert torchao[1, 0] == np.float32(0.25 * 2.0 ** -127)   # 3e-39 / 2^-126 = 0.2552 -> 0.25, times 2^-127: half


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
def test_blocks_along_a_middle_axis_with_a_shorter_last_block(target):
    require_target(target)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 70, 5)) * np.exp2(rng.integers(-20, 20, (3, 1, 5)))).astype(np.float32)
    got = q.mx.fake_quantize(x, "mxfp6_e3m2", axis=1, scale_rule="even", target=target, semantics="torchao")
    want = q.oracle.mx.fake_quantize(x, "mxfp6_e3m2", axis=1, scale_rule="even", semantics="torchao")
    assert np.array_equal(_bits(got), _bits(want))
    # the shorter last block (6 elements) has its own scale: as if padded with zeros
    padded = np.concatenate([x, np.zeros((3, 26, 5), np.float32)], axis=1)
    assert np.array_equal(_bits(want), _bits(q.oracle.mx.fake_quantize(padded, "mxfp6_e3m2", axis=1, scale_rule="even",
                                                                       semantics="torchao")[:, :70]))


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_x_is_quantized_as_float32_and_rounded_back_once(target, dtype):
    """OCP semantics: a float16/bfloat16 x widened exactly, X * P rounded to its type (to nearest even)."""
    require_target(target)
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float16)
    rng = np.random.default_rng(7)
    lo = -24 if dtype == "float16" else -133
    x = (rng.standard_normal((6, 64)) * np.exp2(rng.integers(lo, 15, (6, 2)).repeat(32, 1))).astype(dt)
    x.reshape(-1)[:4] = [np.nan, np.inf, -0.0, 3]
    for i, (elem, rule) in enumerate(OCP_ROTATING if target == "cpu" else OCP_ROTATING[1:2]):
        got = q.mx.fake_quantize(x, elem, scale_rule=rule, target=target)
        want = q.oracle.mx.fake_quantize(x, elem, scale_rule=rule)
        assert got.dtype == dt and np.array_equal(got.view(np.uint16), want.view(np.uint16)), (elem, rule)
    # the contract: the float32 answer on the widened x, rounded once
    wide = q.oracle.mx.fake_quantize(x.astype(np.float32), elem, scale_rule=rule)
    assert np.array_equal(want.view(np.uint16), wide.astype(dt).view(np.uint16))


def test_mxint8_follows_the_text():
    """OCP v1.0 MXINT8: n * 2^-6, emax 0, rounded to nearest even, clamped to +-127/64 (never -128), by hand."""
    x = np.zeros((2, 32), np.float32)
    x[0, :6] = 1.5, 1.99, 1 / 128, 3 / 128, -1.999, -0.0     # floor: X = 2^0
    x[1, :3] = 100, -77.7, 0.3                                # floor: X = 2^6, so n = x (rounded)
    y = q.mx.fake_quantize(x, "mxint8")
    assert list(y[0, :6]) == [1.5, 127 / 64, 0, 2 / 64, -127 / 64, 0] and _bits(y[0, 5]) == 0   # no -0 in an int8
    assert list(y[1, :3]) == [100, -78, 0]
    c = q.mx.fake_quantize(x, "mxint8", scale_rule="ceil")   # X = 2^1: 1.99 / 2 -> 64/64, times 2
    assert list(c[0, :2]) == [1.5, 2.0] and c[0, 4] == -2.0
    with pytest.raises(QDQError, match="torchao 0.18.0 has no mxint8"):
        q.mx.fake_quantize(x, "mxint8", semantics="torchao")


def test_the_last_axis_is_the_default_and_negative_axes_count_from_the_end():
    x = np.random.default_rng(2).standard_normal((4, 64)).astype(np.float32)
    a = q.mx.fake_quantize(x, "mxfp4_e2m1", semantics="torchao")
    assert np.array_equal(_bits(a), _bits(q.mx.fake_quantize(x, "mxfp4_e2m1", axis=1, semantics="torchao")))
    assert np.array_equal(_bits(a), _bits(q.mx.fake_quantize(x.T.copy(), "mxfp4_e2m1", axis=0, semantics="torchao").T))
    # torchao's answer for the same blocks (its to_mx takes the last axis only)
    _, _, deq = MXN.mx(x, "mxfp4_e2m1", "floor")
    assert np.array_equal(_bits(a), _bits(deq))


def test_a_small_block_size():
    x = np.random.default_rng(3).standard_normal((6, 40)).astype(np.float32)
    got = q.mx.fake_quantize(x, "mxfp8_e4m3", block_size=8, scale_rule="rceil", semantics="torchao")
    _, _, deq = MXN.mx(x, "mxfp8_e4m3", "rceil", block_size=8)
    assert np.array_equal(_bits(got), _bits(deq))


@pytest.mark.parametrize("kwargs,arg,words", [
    ({"block_size": 0}, "block_size", "block_size=0 must be a positive integer"),
    ({"block_size": -32}, "block_size", "block_size=-32 must be a positive integer"),
    ({"axis": 2}, "axis", "axis=2 is out of range for x of rank 2; allowed: -2..1"),
    ({"axis": -3}, "axis", "axis=-3 is out of range"),
    ({"scale_rule": "nearest"}, "scale_rule", "scale_rule='nearest' is not known; allowed: floor, ceil, even, rceil"),
])
def test_bad_arguments_are_named_before_anything_compiles(kwargs, arg, words):
    with pytest.raises(QDQError, match=words) as e:
        q.mx.fake_quantize(np.zeros((2, 32), np.float32), "mxfp8_e4m3", **kwargs)
    assert e.value.arg == arg


def test_bad_element_formats_types_and_arguments():
    x = np.zeros((2, 32), np.float32)
    with pytest.raises(QDQError, match="elem='mxint4' is not known; allowed: mxfp8_e4m3, mxfp8_e5m2, .*, mxint8"):
        q.mx.fake_quantize(x, "mxint4")
    with pytest.raises(QDQTypeError, match="x must be a NumPy array of float32, float16 or bfloat16"):
        q.mx.fake_quantize([1.0, 2.0], "mxfp4_e2m1")
    with pytest.raises(QDQTypeError, match="allowed: float32.*semantics='ocp' takes float16 and bfloat16"):
        q.mx.fake_quantize(x.astype(np.float16), "mxfp4_e2m1", semantics="torchao")
    with pytest.raises(QDQTypeError, match="float64"):
        q.mx.fake_quantize(x.astype(np.float64), "mxfp4_e2m1")
    with pytest.raises(QDQTypeError, match="unexpected keyword argument .ragged.; arguments are: x, elem, block_size"):
        q.mx.fake_quantize(x, "mxfp4_e2m1", ragged=True)
    with pytest.raises(QDQTypeError, match="fake_quantize"):
        q.mx.fake_quantize(x)
    with pytest.raises(QDQError, match="at least one dimension"):
        q.mx.fake_quantize(np.zeros((), np.float32), "mxfp4_e2m1")


def test_the_public_function_is_generated_and_current():
    import importlib.util
    root = Path(q.__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("gen_public_api", root / "tools" / "gen_public_api.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for kind in ("compiled", "oracle"):
        assert gen.FILES["mx", kind].read_text() == gen.render("mx", kind)
    names = ["fake_quantize", "quantize", "dequantize", "fake_quantize_gradient", "nvfp4_quantize", "nvfp4_dequantize",
             "fake_quantize_vjp"]
    assert q.mx.__all__ == names and q.oracle.mx.__all__ == names


def test_a_bundle_of_mx_programs_answers_as_the_namespace(tmp_path):
    """examples/mx_bundle.json: built, loaded, called with x alone (the attributes are baked), the oracle's bits;
    an x whose length does not fit how an entry was built is named, not computed."""
    from qdq_compiler.jobs.bundle import build_bundle
    build_bundle(Path(__file__).resolve().parent.parent / "examples" / "mx_bundle.json", tmp_path / "b",
                 targets=["cpu"])
    b = q.load_bundle(tmp_path / "b", target="cpu")
    rng = np.random.default_rng(11)
    x, w, v = (rng.standard_normal(s).astype(np.float32) for s in ((5, 64), (3, 96), (4, 70)))
    assert np.array_equal(_bits(b.act_mxfp8(x=x)), _bits(q.oracle.mx.fake_quantize(x, "mxfp8_e4m3")))
    assert np.array_equal(_bits(b.w_mxfp4(x=w)), _bits(q.oracle.mx.fake_quantize(w, "mxfp4_e2m1", scale_rule="rceil",
                                                                             semantics="torchao")))
    assert np.array_equal(_bits(b.w_mxint8_ragged(x=v)), _bits(q.oracle.mx.fake_quantize(v, "mxint8")))
    elements, scales = b.store_mxfp4(x=x)   # the stored form: codes and E8M0 scales, and back
    want_e, want_s = q.oracle.mx.quantize(x, "mxfp4_e2m1")
    assert elements.dtype == want_e.dtype and np.array_equal(elements.view(np.uint8), want_e.view(np.uint8))
    assert scales.shape == (5, 2) and np.array_equal(scales.view(np.uint8), want_s.view(np.uint8))
    assert np.array_equal(_bits(b.load_mxfp4(elements=elements, scales=scales)),
                          _bits(q.oracle.mx.fake_quantize(x, "mxfp4_e2m1")))
    with pytest.raises(QDQError, match="70 elements along axis 1, not a multiple of block_size 32; this program was "
                                       "built for data whose extent along axis is one"):
        b.act_mxfp8(x=v)
    # params "arguments": the seed is an argument of each call (its two words after x), the rest stays baked
    sr = b.grad_mxfp4_sr
    assert [i["name"] for i in sr.function["inputs"]] == ["x", "key0", "key1"] and sr.arguments == {"seed"}
    for seed in (0, 7, 2 ** 64 - 1):
        want = q.oracle.mx.fake_quantize(x, "mxfp4_e2m1", rounding="stochastic", seed=seed)
        assert np.array_equal(_bits(sr(x=x, seed=seed)), _bits(want)), seed
    assert not np.array_equal(_bits(sr(x=x, seed=1)), _bits(sr(x=x)))
    with pytest.raises(QDQError, match="attribute scale_rule='ceil' differs from the value baked"):
        sr(x=x, seed=3, scale_rule="ceil")
