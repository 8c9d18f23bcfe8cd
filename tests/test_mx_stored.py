"""MX's stored form compiled (qdq_compiler.mx.quantize / dequantize, templates/mx_encode.mlir.j2 and
mx_decode.mlir.j2): element codes and E8M0 scales bit for bit against the NumPy reference written from the OCP
text (ops/mx_ocp.py), dequantize(quantize(x)) == fake_quantize(x) bit for bit, codes checked by hand, and bad
input named.

Where the rest is covered: the validation matrix (`qdqc validate --ops MXQuantize,MXDequantize`: each format once,
static and dynamic, float16 and bfloat16, on cpu, vmvx and Vulkan, random codes of every kind and scales 0, 254,
255); the lit e2e tests pin one program of each on every target."""
from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, QDQTypeError
from qdq_compiler.ops import mx_fake_quant as MF
from qdq_compiler.ops import mx_ocp as MXO
from targets_util import dumped_dispatches, require as require_target
import tiers

E8M0 = ml_dtypes.float8_e8m0fnu


def _data(shape, seed):
    """Blocks of every magnitude (2^-140 .. 2^120), zeros of both signs, subnormals, a NaN and an infinity."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-140, 121, shape[:1] + (1,) * (len(shape) - 1))))
    x = x.astype(np.float32)
    x.reshape(-1)[:6] = 0.0, -0.0, 1e-45, -3e-40, np.nan, 7.0
    x.reshape(-1)[-1] = -np.inf
    return x


def _codes(a):
    return a.view(np.uint8) if a.dtype.itemsize == 1 else a


@pytest.mark.sample(every=3, only=tiers.SLOW_TARGETS)   # CI tier: cpu every format, vmvx/vulkan one in 3
@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
@pytest.mark.parametrize("elem", MF.MX_ELEMS)
def test_quantize_and_dequantize_are_the_references_bits(elem, target):
    """Codes and scales as the OCP reference has them, and the dequantized values as fake_quantize's, on blocks
    along the last axis and along a middle one with a shorter last block; one rule per format, in turn (the rules'
    scale code is fake_quantize's, tested rule by rule in tests/test_mx.py; the codes do not depend on it)."""
    require_target(target)
    rules = MF.SCALE_RULES[MF.MX_ELEMS.index(elem) % 4:][:1]
    for shape, axis in (((6, 64), -1), ((3, 33, 2), 1)):
        x = _data(shape, len(shape))
        for rule in rules:
            want_e, want_s = q.oracle.mx.quantize(x, elem, axis=axis, scale_rule=rule)
            got_e, got_s = q.mx.quantize(x, elem, axis=axis, scale_rule=rule, target=target)
            assert got_e.dtype == np.dtype(MXO.STORAGE[elem]) and got_s.dtype == E8M0
            assert got_s.shape == tuple(-(-d // 32) if i == axis % x.ndim else d for i, d in enumerate(shape))
            assert np.array_equal(_codes(got_e), _codes(want_e)), (rule, np.argwhere(_codes(got_e) != _codes(want_e))[:4])
            assert np.array_equal(got_s.view(np.uint8), want_s.view(np.uint8)), rule
            y = q.mx.dequantize(got_e, got_s, axis=axis, target=target)
            fq = q.oracle.mx.fake_quantize(x, elem, axis=axis, scale_rule=rule)
            assert np.array_equal(y.view(np.uint32), fq.view(np.uint32)), rule


def test_codes_by_hand():
    """MXFP4 E2M1, floor: amax 7 gives X = 2^(2 - 2) = 1 (byte 127); 7 saturates to 6 (code 7), -3 is 0xD, 0.25
    ties to 0 (even), 0.75 to 1.0 (code 2, even), -0 keeps its sign (0x8); MXINT8: 1.5 at X = 1 is 96."""
    x = np.zeros((1, 32), np.float32)
    x[0, :5] = 7.0, -3.0, 0.25, 0.75, -0.0
    e, s = q.mx.quantize(x, "mxfp4_e2m1")
    assert s.view(np.uint8).tolist() == [[127]] and e.view(np.uint8)[0, :5].tolist() == [7, 0xD, 0, 2, 0x8]
    x = np.full((1, 32), 1.5, np.float32)
    e, s = q.mx.quantize(x, "mxint8")
    assert s.view(np.uint8).tolist() == [[127]] and e[0, 0] == 96 and e.dtype == np.int8


def test_e4m3_codes_at_scale_2_to_the_minus_8():
    """All ones: amax 1.0, floor(log2 1) - emax 8 = -8, X = 2^-8 (byte 119); 1.0 / X = 256 = 1.0 * 2^8 (code
    0x78: exponent 15, mantissa 0)."""
    e, s = q.mx.quantize(np.ones((1, 32), np.float32), "mxfp8_e4m3")
    assert s.view(np.uint8).tolist() == [[119]] and set(e.view(np.uint8)[0].tolist()) == {0x78}


def test_dequantize_specials():
    """A NaN scale (255) makes its block NaN (0x7FC00000); E4M3's NaN code is NaN; E5M2's inf code is inf times
    X; byte 0 is X = 2^-127, kept as a float32 subnormal (not flushed)."""
    e = np.zeros((2, 32), np.uint8)
    e[0, :3] = 0x38, 0x7F, 0xFF
    s = np.array([[127], [255]], np.uint8).view(E8M0)
    y = q.mx.dequantize(e.view(ml_dtypes.float8_e4m3fn), s)
    assert y[0, 0] == 1.0 and (y[0, 1:3].view(np.uint32) == 0x7FC00000).all() and (y[1].view(np.uint32) == 0x7FC00000).all()
    e5 = np.zeros((1, 32), np.uint8)
    e5[0, :2] = 0x7C, 0xFC
    y = q.mx.dequantize(e5.view(ml_dtypes.float8_e5m2), np.array([[100]], np.uint8).view(E8M0))
    assert y[0, 0] == np.inf and y[0, 1] == -np.inf
    y = q.mx.dequantize(np.full((1, 32), 0x38, np.uint8).view(ml_dtypes.float8_e4m3fn), np.zeros((1, 1), np.uint8).view(E8M0))
    assert (y.view(np.uint32) == 0x00400000).all()   # 2^-127


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_types(dtype):
    """quantize takes float16 and bfloat16 (widened exactly); dequantize rounds to out_dtype once: the same bits as
    fake_quantize of x in that type."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 64)) * np.exp2(rng.integers(-20, 12, (4, 1)))).astype(np.float32)
    x[0, :3] = -0.0, np.nan, 6e-8
    x = x.astype(np.dtype(dtype) if dtype == "float16" else ml_dtypes.bfloat16)
    e, s = q.mx.quantize(x, "mxfp6_e3m2")
    want_e, want_s = q.oracle.mx.quantize(x, "mxfp6_e3m2")
    assert np.array_equal(e.view(np.uint8), want_e.view(np.uint8)) and np.array_equal(s.view(np.uint8), want_s.view(np.uint8))
    y = q.mx.dequantize(e, s, out_dtype=dtype)
    assert y.dtype == x.dtype
    assert np.array_equal(y.view(np.uint16), q.mx.fake_quantize(x, "mxfp6_e3m2").view(np.uint16))


def test_bad_input_is_named():
    x = np.ones((2, 32), np.float32)
    e, s = q.mx.quantize(x, "mxfp8_e4m3")
    with pytest.raises(QDQTypeError, match="elements must be a NumPy array of an MX element type: float8_e4m3fn"):
        q.mx.dequantize(x, s)
    with pytest.raises(QDQTypeError, match="scales must be a NumPy array of float8_e8m0fnu"):
        q.mx.dequantize(e, s.view(np.uint8))
    with pytest.raises(QDQError, match=r"scales has shape \[2, 1\]; elements of shape \[2, 32\] in blocks of 16"):
        q.mx.dequantize(e, s, block_size=16)
    with pytest.raises(QDQError, match="out_dtype='float64' is not allowed; allowed values"):
        q.mx.dequantize(e, s, out_dtype="float64")
    with pytest.raises(QDQError, match="block_size=0 must be a positive integer"):
        q.mx.quantize(x, "mxfp8_e4m3", block_size=0)
    with pytest.raises(QDQError, match="axis=2 is out of range"):
        q.mx.dequantize(e, s, axis=2)
    with pytest.raises(QDQError, match="semantics='torchao': dequantize is the specification's here"):
        q.mx.dequantize(e, s, semantics="torchao")
    with pytest.raises(QDQError, match="torchao 0.18.0 has no mxint8"):
        q.mx.quantize(x, "mxint8", semantics="torchao")


def _fp4_boundary_blocks() -> np.ndarray:
    """One block per scale 2^s, s = -127..127 (amax 6 * 2^s): each FP4 rounding boundary times 2^s and its float32
    neighbours, zeros of both signs, the smallest subnormals and an element 2^-149 above amax / 8."""
    bounds = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    rows, big = [], float(np.finfo(np.float32).max)
    for s in range(-127, 128):
        at = np.minimum(bounds * np.exp2(float(s)), big).astype(np.float32)
        with np.errstate(over="ignore"):   # (FLT_MAX's neighbour above is inf: a block of an infinity)
            up = np.nextafter(at, np.float32(np.inf))
        row = np.concatenate([[np.float32(min(6.0 * 2.0 ** s, big))], at, up, np.nextafter(at, np.float32(0)),
                              [0.0, -0.0, 1e-45, -3e-45]]).astype(np.float32)
        row = np.concatenate([row, -row[1:4]])[:32]
        rows.append(np.pad(row, (0, 32 - len(row))))
    return np.array(rows, np.float32)


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
@pytest.mark.parametrize("semantics", ["ocp", "torchao"])
def test_fp4_codes_at_every_boundary_and_scale(semantics, target):
    """MXFP4's codes count the rounding boundaries below |x| * 2^k (mx_encode.mlir.j2, V.bounds): every boundary,
    its neighbours and zeros at every scale, subnormal and normal x, against the reference, under each rule."""
    require_target(target)
    x = _fp4_boundary_blocks()
    ref = q.oracle.mx if semantics == "ocp" else None
    for rule in MF.SCALE_RULES:
        got_e, got_s = q.mx.quantize(x, "mxfp4_e2m1", scale_rule=rule, semantics=semantics, target=target)
        if ref is None:
            want_e, want_s = q.mx.quantize(x, "mxfp4_e2m1", scale_rule=rule, semantics=semantics, target="oracle")
        else:
            want_e, want_s = ref.quantize(x, "mxfp4_e2m1", scale_rule=rule)
        bad = np.argwhere(got_e.view(np.uint8) != want_e.view(np.uint8))
        assert not len(bad), (rule, bad[:4].tolist(), x[tuple(bad[0])] if len(bad) else None)
        assert np.array_equal(got_s.view(np.uint8), want_s.view(np.uint8)), rule


@pytest.mark.parametrize("target", ["cpu", "vulkan", "cuda"])
@pytest.mark.parametrize("op, attrs", [("MXQuantize", {"elem": "mxfp4_e2m1", "elem_type": "float4_e2m1fn"}),
                                       ("MXFakeQuantize", {})])
def test_x_is_read_by_one_dispatch(op, attrs, target, tmp_path):
    """The block amax, the scales and the elements in one dispatch: x read once. quantize's per-block scales beside
    its per-element codes took IREE 3.13 four dispatches (x read twice, 8.1 -> 6.1 ms at 2^24 on cpu) until
    targets.fusion_flags asked for its aggressive fusion. Compiled only (any machine)."""
    import re
    from qdq_compiler.config import OpConfig
    cfg = OpConfig.make(op, attrs, "float32", "?x?", target, "runtime", "ocp")
    reads = [t for t in dumped_dispatches(cfg, tmp_path) if re.search(r"readonly:tensor<\?x32xf32>", t)]
    assert len(reads) == 1, len(reads)


README_BITS = {   # README's table of stored bits: (format, amax) -> rule -> (E8M0 byte, the three element codes)
    ("mxfp4_e2m1", 5.0): {"floor": (127, 0x6, 0xB, 0x1), "ceil": (128, 0x4, 0xA, 0x1), "even": (127, 0x6, 0xB, 0x1),
                          "rceil": (127, 0x6, 0xB, 0x1)},
    ("mxfp4_e2m1", 7.0): {"floor": (127, 0x7, 0xC, 0x2), "ceil": (128, 0x6, 0xA, 0x1), "even": (128, 0x6, 0xA, 0x1),
                          "rceil": (128, 0x6, 0xA, 0x1)},
    ("mxfp8_e4m3", 480.0): {"floor": (127, 0x7E, 0xF2, 0x69), "ceil": (128, 0x77, 0xEA, 0x61),
                            "even": (127, 0x7E, 0xF2, 0x69), "rceil": (128, 0x77, 0xEA, 0x61)},
    ("mxfp8_e4m3", 1e-39): {r: (0, 0x23, 0x97, 0x0C) for r in MF.SCALE_RULES},
}


@pytest.mark.parametrize("elem,amax", list(README_BITS))
def test_the_readmes_table_of_stored_bits(elem, amax):
    """One block (amax, -amax/3, amax/7, zeros) under each rule, compiled: the bits README.md shows."""
    x = np.zeros((1, 32), np.float32)
    x[0, :3] = amax, -amax / 3, amax / 7
    for rule, (byte, *codes) in README_BITS[elem, amax].items():
        e, s = q.mx.quantize(x, elem, scale_rule=rule)
        assert (int(s.view(np.uint8)[0, 0]), *e.view(np.uint8)[0, :3].tolist()) == (byte, *codes), rule


GOLDENS = json.loads((Path(MF.__file__).resolve().parent.parent / "goldens" / "mx" / "torchao.json").read_text())
TORCHAO_KINDS = sorted({(c["elem"], c["scale_rule"]) for c in GOLDENS["cases"] if c["elem"] != "nvfp4"})


@pytest.mark.parametrize("target", ["cpu", "vmvx", "vulkan"])
def test_torchaos_codes_and_scales_goldens(target):
    """semantics='torchao': torchao 0.18.0's to_mx codes and E8M0 bytes for every golden (660 cases, 20 format x
    rule kinds on cpu; five kinds in turn on vmvx and Vulkan), NaN blocks included (their codes follow x's bits
    through torchao's cast: x / inf, a NaN's payload, inf / inf's default NaN)."""
    require_target(target)
    kinds = TORCHAO_KINDS if target == "cpu" else TORCHAO_KINDS[("vmvx", "vulkan").index(target)::4]
    checked = 0
    for c in GOLDENS["cases"]:
        if (c["elem"], c["scale_rule"]) not in kinds or "error" in c:
            continue
        x = np.array(c["x"], np.uint64).astype(np.uint32).view(np.float32).reshape(c["shape"])
        e, s = q.mx.quantize(x, c["elem"], scale_rule=c["scale_rule"], semantics="torchao", target=target)
        assert e.view(np.uint8).ravel().tolist() == c["elements"], (c["id"], c["tags"])
        assert s.view(np.uint8).ravel().tolist() == c["scales"], (c["id"], c["tags"])
        checked += 1
    assert checked >= 30 * len(kinds)
