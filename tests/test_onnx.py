"""ONNX's QuantizeLinear/DequantizeLinear and the storage-type conversions (qdq_compiler/storage.py,
templates/storage.mlir.j2): exhaustive on the NumPy conversions, through compiled programs on every target, and
against the onnx reference's goldens (tools/goldens/onnx_reference.py).

Where the coverage lives: every code of every storage type decoded, and every float32 rounding boundary
(representable values, midpoints and their float32 neighbours) encoded, saturating and not: NumPy against
ml_dtypes here (all), compiled on cpu, vmvx and vulkan (each type through one Q and one DQ program). Goldens:
every case on the oracle, both semantics; compiled, a sample (``_golden_cases``: float32 on cpu, seven storage
types beyond it, scales of another type for two: MIXED_SAMPLE); every case whose structure a matrix configuration
has, on every target: ``qdqc validate --targets all --semantics onnx,ort-cpu``.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from qdq_compiler import QDQError, onnx_ops, storage, targets
from qdq_compiler.oracle import onnx_ops as onnx_oracle

import onnx_goldens as G
from checks import compile_ahead
from targets_util import RUN_TARGETS, require
import tiers

FLOAT_TYPES = storage.NARROW_FLOATS + ("float16", "bfloat16")
U = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _all_codes(t):
    if t.bits > 16:   # int32: its ends and float32's rounding around 2^24..2^31 (ties to even included)
        edges = np.array([2 ** k + d for k in range(24, 31) for d in (-3, -2, -1, 0, 1, 2, 3, 64, 65, 127, 128, 129)])
        return np.concatenate([edges, -edges, [0, 1, -1, 2 ** 31 - 1, -2 ** 31]]).astype(np.int64) & 0xFFFFFFFF
    return np.arange(1 << t.bits if t.bits <= 8 else 1 << 16, dtype=np.int64)


def _boundaries(t) -> np.ndarray:
    """Every finite value of ``t``, the midpoints between neighbours, beyond the largest, and the float32
    neighbours of each (the rounding decisions), plus infinities, NaN and zeros."""
    with np.errstate(all="ignore"):
        v = np.unique(storage.decode(_all_codes(t), t).astype(np.float64))
    v = v[np.isfinite(v)]
    mids = (v[1:] + v[:-1]) / 2
    top = v.max()
    edge = np.array([top * 1.03125, top * 1.0625, top * 1.5, top * 4, 1e30, 3e38, np.inf, -np.inf, np.nan, -np.nan,
                     0.0, -0.0, 1e-30, -1e-30])
    with np.errstate(over="ignore"):
        c = np.concatenate([v, mids, -mids, edge]).astype(np.float32)
        return np.concatenate([c, np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(-np.inf))])


@pytest.mark.parametrize("name", FLOAT_TYPES)
def test_numpy_conversions_match_ml_dtypes(name):
    """decode: every code, bit for bit (NaN's bits as ml_dtypes writes them); encode without saturation: every
    boundary, as ml_dtypes rounds (the ONNX reference's conversion)."""
    t = storage.get(name)
    codes = _all_codes(t)
    want = codes.astype(U[t.np.itemsize]).view(t.np).astype(np.float32)
    assert np.array_equal(storage.decode(codes, t).view(np.uint32), want.view(np.uint32))
    x = _boundaries(t)
    if t.name == "float8_e8m0fnu":   # ml_dtypes 0.6 rounds (2^-127, 1.5 * 2^-127) up; the test below, by the text
        bits = x.view(np.uint32)
        x = x[(bits <= 0x400000) | (bits >= 0x600000)]
    with np.errstate(all="ignore"):
        ml = x.astype(t.np).view(U[t.np.itemsize]).astype(np.int64)
    assert np.array_equal(storage.encode(x, t, saturate=False), ml)


def test_e8m0_encode_is_nearest_power_of_two_ties_up_by_the_text():
    """float8_e8m0fnu by ONNX's Cast round_mode "nearest" (onnxruntime's Float8E8M0: a tie to the larger power), not
    by whichever ml_dtypes is installed: 0.6 gave 2^-126 to everything in (2^-127, 1.5 * 2^-127), 0.7 gives 2^-127
    (issue 47). Bits in, codes out; the float32 subnormal sliver and a normal binade, each side of each edge."""
    t = storage.get("float8_e8m0fnu")
    cases = {0x00000001: 0, 0x003FFFFF: 0, 0x00400000: 0, 0x00400001: 0, 0x005FFFFF: 0, 0x00600000: 1,
             0x00600001: 1, 0x007FFFFF: 1, 0x00800000: 1, 0x00BFFFFF: 1, 0x00C00000: 2,
             0x3F800000: 127, 0x3FBFFFFF: 127, 0x3FC00000: 128, 0x7F000000: 254, 0x7F3FFFFF: 254, 0x7F400000: 0xFF,
             0x00000000: 0xFF, 0x80400000: 0xFF, 0x7F800000: 0xFF, 0x7FC00000: 0xFF}
    bits = np.array(list(cases), np.uint32)
    assert storage.encode(bits.view(np.float32), t, saturate=False).tolist() == list(cases.values())


@pytest.mark.parametrize("name", storage.NARROW_FLOATS[:4])
def test_numpy_saturating_encode_is_clip_then_convert(name):
    """saturate=1 (the float8 types): the reference clips to the largest finite value, then converts."""
    t = storage.get(name)
    x = _boundaries(t)
    clipped = np.clip(x, -t.max_value, t.max_value)
    with np.errstate(all="ignore"):
        ml = clipped.astype(t.np).view(np.uint8).astype(np.int64)
    assert np.array_equal(storage.encode(x, t, saturate=True), ml)


def test_e8m0_decodes_every_code_and_table_rows_describe_themselves():
    t = storage.get("float8_e8m0fnu")
    want = np.arange(256).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    assert np.array_equal(storage.decode(np.arange(256), t).view(np.uint32), want.view(np.uint32))
    assert storage.get(17).name == "float8_e4m3fn" and storage.get(np.dtype(ml_dtypes.int4)).bits == 4
    assert storage.get("float8_e4m3fn").max_value == 448.0 and storage.get("float8_e5m2").max_value == 57344.0
    assert storage.get("float4_e2m1fn").max_value == 6.0 and storage.get("int2").min == -2
    with pytest.raises(QDQError, match="allowed: int2"):
        storage.get("float7")


@pytest.mark.sample(every=3, only=tiers.SLOW_TARGETS)   # CI tier: cpu every type, vmvx/vulkan one in 3
@pytest.mark.parametrize("target", RUN_TARGETS)
@pytest.mark.parametrize("name", storage.NARROW_FLOATS[:7] + storage.INTEGERS)
def test_compiled_conversions_exhaustive(target, name):
    """Every code decoded (DequantizeLinear, scale 1, zero point 0) and every boundary encoded (QuantizeLinear,
    scale 1) by the compiled program, each bit as storage.py's; float8 both saturating and not."""
    require(target)
    t = storage.get(name)
    zero = storage.from_codes(np.zeros((), t.code_dtype), t.np)
    codes = _all_codes(t).astype(U[t.np.itemsize]).view(t.np)
    y = onnx_ops.DequantizeLinear(codes, np.float32(1.0), zero, target=target)
    want = storage.decode(_all_codes(t), t)
    assert np.array_equal(np.asarray(y).view(np.uint32), want.view(np.uint32)), name
    if t.bits > 16:   # int32 is DequantizeLinear's only
        assert np.array_equal(want, codes.astype(np.float32))   # float32(x), ties to even
        return
    if t.is_float:
        x = _boundaries(t)
    else:
        x = np.concatenate([np.arange(t.min - 3, t.max + 4) + f for f in (0.0, 0.5, -0.5, 0.25)]).astype(np.float32)
    for sat in ((1, 0) if name in storage.NARROW_FLOATS[:4] else (1,)):
        q = onnx_ops.QuantizeLinear(x, np.float32(1.0), zero, saturate=sat, target=target)
        assert q.dtype == t.np
        ref = onnx_oracle.QuantizeLinear(x, np.float32(1.0), zero, saturate=sat)
        assert np.array_equal(storage.to_codes(q), storage.to_codes(ref)), (name, sat)
        if name in storage.NARROW_FLOATS[:4]:
            # the float8 pair rounds to the grid in one pass (storage.mlir.j2 round_float): decode(encode(x)) bits,
            # onnxruntime's windows too (they apply without saturation)
            for sem in ("onnx", "ort-cpu") if not sat and name in ("float8_e4m3fn", "float8_e5m2") else ("onnx",):
                y = onnx_ops.QuantizeDequantizeLinear(x, np.float32(1.0), zero, saturate=sat, target=target,
                                                      semantics=sem)
                want = onnx_oracle.QuantizeDequantizeLinear(x, np.float32(1.0), zero, saturate=sat, semantics=sem)
                assert np.array_equal(np.asarray(y).view(np.uint32), np.asarray(want).view(np.uint32)), (name, sat, sem)


# The storage types whose goldens run compiled beyond float32 on cpu (every type runs compiled in
# test_compiled_conversions_exhaustive on every target, and every golden case in `qdqc validate --targets all
# --semantics onnx,ort-cpu`, which reads them as its dynamic cells' first calls): one of each encoding and width.
SAMPLE = ("int8", "uint4", "int16", "float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn", "float6_e3m2fn")
# The cases whose scale has another type than x (tagged "scale <type>") run compiled for these storage types on cpu
# only; elsewhere: float8_e8m0fnu scales in the matrix (every target), a float16 scale and precision=FLOAT16 in
# lit_tests/e2e/<target>/QuantizeLinear.test, e8m0 and int32 in .../DequantizeLinear.test.
MIXED_SAMPLE = ("int8", "float8_e4m3fn")
PAIR_SAMPLE = ("int8", "uint4", "float8_e4m3fn", "float4_e2m1fn")   # one of each encoding: Q and DQ run the rest


def _golden_cases(op, target, semantics="onnx"):
    """Every case on the oracle; on cpu the float32 per-tensor ones (the pair: of PAIR_SAMPLE's types only, its
    two halves run every type), and of the sampled types the float32 per-axis and blocked ones and the 16-bit
    per-tensor ones; elsewhere the sampled types' float32 per-tensor and blocked ones."""
    for case in G.load(op, semantics):
        storage_type, dtype, granularity = case["tags"][:3]
        sampled = storage_type in SAMPLE
        if op == "QuantizeDequantizeLinear" and target != "oracle" and storage_type not in PAIR_SAMPLE:
            continue
        if len(case["tags"]) > 3 and target != "oracle" and not (target == "cpu" and storage_type in MIXED_SAMPLE):
            continue   # a scale of another type, compiled: int8 and float8 on cpu
        if target == "oracle" or (target == "cpu" and dtype == "float32" and (granularity == "per-tensor" or sampled)) \
                or (target == "cpu" and granularity == "per-tensor" and sampled) \
                or (dtype == "float32" and granularity != "per-axis" and sampled):
            yield case


def _subnormal_result(want: np.ndarray) -> np.ndarray | bool:
    """Elements whose expected float result is a float32 subnormal: FTZ targets (cpu, vmvx: IREE's CPU runtimes
    flush) give 0 there, NumPy does not (the goldens mark these cases as the deviation)."""
    if want.dtype.name not in ("float32", "bfloat16"):
        return False
    f = want.astype(np.float32)
    return (np.abs(f) < np.finfo(np.float32).tiny) & (f != 0)


@pytest.mark.parametrize("target", ["oracle", "cpu"])
@pytest.mark.parametrize("op", G.OPS)
def test_onnxruntime_goldens(op, target):
    """onnxruntime 1.32's answers to the same cases (goldens/onnx/ort/) under semantics ort-cpu: every one it gives,
    bit for bit (float32 and float16: its only types), and an error where it has no kernel (bfloat16, float4,
    float6)."""
    if target != "oracle":
        require(target)
    fn = getattr(onnx_oracle if target == "oracle" else onnx_ops, op)
    extra = {"semantics": "ort-cpu", **({} if target == "oracle" else {"target": target})}
    answered = refused = 0
    for case in G.load(op, "ort-cpu"):
        want, kw = G.expected(case), G.kwargs_of(case)
        if target == "cpu" and (case["tags"][1] != "float32" or case["tags"][2] != "per-tensor"
                                or case["tags"][0] not in SAMPLE + ("uint8", "float8_e5m2")):
            continue
        if want is None:
            with pytest.raises(QDQError):
                fn(**kw, **extra)
            refused += 1
            continue
        got = np.asarray(fn(**kw, **extra))
        differ = got.view(U[got.itemsize]) != want.view(U[want.itemsize])
        if target == "cpu" and case.get("deviation"):
            differ &= ~_subnormal_result(want)
        assert not differ.any(), (case["id"], case["tags"], got[differ], want[differ])
        answered += 1
    assert answered > 20 and (refused > 0 or target == "cpu"), (answered, refused)


@pytest.mark.parametrize("target", ["oracle"] + RUN_TARGETS)
@pytest.mark.parametrize("op", G.OPS)
def test_goldens(op, target):
    """Every golden of the onnx reference (onnx 1.23.2, opset 28), bit for bit; an error where it errs. On FTZ
    targets an element whose expected value is subnormal may differ (counted: only the cases marked deviation)."""
    if target != "oracle":
        require(target)
    fn = getattr(onnx_oracle if target == "oracle" else onnx_ops, op)
    ftz = target != "oracle" and not targets.get(target).quirks.keeps_denormals
    checked = flushed = 0
    cases = list(_golden_cases(op, target))
    if target != "oracle":   # the CI tier: one compiled case in three (tests/tiers.py); the full tier: all
        cases = tiers.sample(cases, every=3, key=lambda c: c["id"])
        compile_ahead(lambda c=c: fn(**G.kwargs_of(c), target=target) for c in cases)
    for case in cases:
        want = G.expected(case)
        kw = G.kwargs_of(case)
        extra = {} if target == "oracle" else {"target": target}
        if want is None:
            with pytest.raises(QDQError):
                fn(**kw, **extra)
            continue
        got = np.asarray(fn(**kw, **extra))
        assert got.dtype == want.dtype and got.shape == want.shape, case["id"]
        differ = got.view(U[got.itemsize]) != want.view(U[want.itemsize])
        if ftz and differ.any():
            assert not (differ & ~_subnormal_result(want)).any(), (case["id"], got[differ], want[differ])
            assert case.get("deviation"), case["id"]
            flushed += 1
        else:
            assert not differ.any(), (case["id"], case["tags"], got[differ], want[differ])
        checked += 1
    answered = sum(1 for c in cases if G.expected(c) is not None)
    assert checked == answered > 0 and flushed <= sum(1 for c in G.load(op) if c.get("deviation")), \
        (checked, answered, flushed)
    assert len(list(_golden_cases(op, target))) > 20   # what the full tier runs


def test_public_arguments_and_errors():
    x = np.array([0.3, -1.7, 2.5, 300.0], np.float32)
    y = onnx_ops.QuantizeLinear(x, np.float32(0.5))                 # no zero point: uint8
    assert y.dtype == np.uint8 and y.tolist() == [1, 0, 5, 255]
    y = onnx_ops.QuantizeLinear(x, np.float32(0.5), output_dtype=ml_dtypes.int4)
    assert y.dtype == ml_dtypes.int4 and y.astype(int).tolist() == [1, -3, 5, 7]
    y = onnx_ops.QuantizeLinear(x, np.float32(0.5), output_dtype=22)  # TensorProto.INT4
    assert y.dtype == ml_dtypes.int4
    fq = onnx_ops.QuantizeDequantizeLinear(x, np.float32(0.5), np.array(0, ml_dtypes.float8_e4m3fn))
    assert fq.dtype == np.float32 and fq.tolist() == [0.3125, -1.75, 2.5, 224.0]   # 600 saturates to 448
    with pytest.raises(QDQError, match="output_dtype"):
        onnx_ops.QuantizeLinear(x, np.float32(0.5), np.array(0, np.int8), output_dtype=np.uint8)
    with pytest.raises(QDQError, match="float8 types"):
        onnx_ops.DequantizeLinear(np.zeros(3, ml_dtypes.float8_e5m2), np.float32(1), np.array(1, ml_dtypes.float8_e5m2))
    with pytest.raises(QDQError, match="y_scale"):
        onnx_ops.QuantizeLinear(np.zeros((2, 3), np.float32), np.ones(4, np.float32), axis=1)
    with pytest.raises(QDQError, match=r"ceil\(4 / 2\)"):
        onnx_ops.QuantizeLinear(np.zeros((2, 4), np.float32), np.ones((2, 3), np.float32), axis=1, block_size=2)
    with pytest.raises(QDQError, match="block_size=-2 must be positive"):
        onnx_ops.QuantizeLinear(np.zeros((2, 4), np.float32), np.ones((2, 3), np.float32), axis=1, block_size=-2)
    with pytest.raises(QDQError, match="float7|allowed"):
        onnx_ops.QuantizeLinear(x, np.float32(0.5), output_dtype="float7")
    codes = np.array([1, -2], np.int8)                 # DequantizeLinear's output_dtype (opset 23): any float type
    for given in (np.float32, 1, "float32"):
        assert onnx_ops.DequantizeLinear(codes, np.float32(0.5), output_dtype=given).tolist() == [0.5, -1.0]
    y = onnx_ops.DequantizeLinear(codes, np.float32(0.5), output_dtype=10)
    assert y.dtype == np.float16 and y.tolist() == [0.5, -1.0]
    e8 = np.array([0.25, 4.0], ml_dtypes.float8_e8m0fnu)    # float8_e8m0fnu scales (opset 24), per axis
    y = onnx_ops.DequantizeLinear(np.array([[1, -2], [3, 4]], np.int8), e8, axis=1, output_dtype=ml_dtypes.bfloat16)
    assert y.dtype == ml_dtypes.bfloat16 and y.astype(np.float32).tolist() == [[0.25, -8.0], [0.75, 16.0]]
    with pytest.raises(QDQError, match="output_dtype is required with a float8_e8m0fnu x_scale"):
        onnx_ops.DequantizeLinear(codes, np.array(2.0, ml_dtypes.float8_e8m0fnu))
    assert onnx_ops.QuantizeLinear(x, np.array(0.5, ml_dtypes.float8_e8m0fnu), np.int8(0)).tolist() == [1, -3, 5, 127]
    big = np.array([2 ** 24 + 1, 2 ** 24 + 3, -7], np.int32)   # int32 data: float32(x) * scale, ties to even
    assert onnx_ops.DequantizeLinear(big, np.float32(1)).tolist() == [2.0 ** 24, 2.0 ** 24 + 4, -7.0]
    with pytest.raises(QDQError, match="x_zero_point must be 0 for int32") as e:
        onnx_ops.DequantizeLinear(big, np.float32(1), np.int32(3))
    assert "there's no zero point" in str(e.value)
    with pytest.raises(QDQError, match="precision=7: allowed: 1"):
        onnx_ops.QuantizeLinear(x.astype(np.float16), np.float16(0.5), precision=7)
    with pytest.raises(QDQError, match="call QuantizeLinear and DequantizeLinear"):
        onnx_ops.QuantizeDequantizeLinear(x, np.float32(0.3), np.int8(0), precision=10)
    # onnxruntime's CPU kernels: no bfloat16 or float8_e8m0fnu scales, precision float32 or float16 only
    for scale in (np.array(0.5, ml_dtypes.bfloat16), np.array(0.5, ml_dtypes.float8_e8m0fnu)):
        with pytest.raises(QDQError, match="NOT_IMPLEMENTED"):
            onnx_ops.QuantizeLinear(x, scale, np.int8(0), semantics="ort-cpu")
    with pytest.raises(QDQError, match="only supports precision 0"):
        onnx_ops.QuantizeLinear(x, np.float32(0.3), np.int8(0), precision=16, semantics="ort-cpu")


def test_bundle_entries_take_and_return_storage_types(tmp_path):
    """examples/onnx_bundle.json: float8 and int4 arrays go into and come out of a bundle's entries, each bit the
    oracle's."""
    from pathlib import Path

    from qdq_compiler import load_bundle
    from qdq_compiler.jobs.bundle import build_bundle
    example = Path(__file__).resolve().parent.parent / "examples" / "onnx_bundle.json"
    build_bundle(example, tmp_path / "b", targets=["cpu"])
    b = load_bundle(tmp_path / "b", "cpu")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 64)).astype(np.float32) * np.float32(40)
    zero8 = np.array(0, ml_dtypes.float8_e4m3fn)
    y = b["act_q"](x=x, y_scale=np.float32(0.01), y_zero_point=zero8)
    want = onnx_oracle.QuantizeLinear(x, np.float32(0.01), zero8)
    assert y.dtype == ml_dtypes.float8_e4m3fn and np.array_equal(storage.to_codes(y), storage.to_codes(want))
    w = (rng.integers(-8, 8, (5, 64))).astype(np.int8).astype(ml_dtypes.int4)
    s, z = np.full(64, 0.1, np.float32), rng.integers(-8, 8, 64).astype(np.int8).astype(ml_dtypes.int4)
    d = b["w_dq"](x=w, x_scale=s, x_zero_point=z)
    assert np.array_equal(d.view(np.uint32), onnx_oracle.DequantizeLinear(w, s, z, axis=1).view(np.uint32))


def test_qdqc_run_reads_and_writes_storage_types(tmp_path, capsys):
    """qdqc run: a literal zero point takes the storage type --attr names (uint8 by default, as ONNX); an int4 .npy
    (void in the file) is read as the type --attr x_dtype names; -o writes float8 as its codes and says so."""
    from qdq_compiler import cli
    x = np.array([0.3, -1.7, 2.5, 300.0, np.nan], np.float32)
    np.save(tmp_path / "x.npy", x)
    assert cli.main(["run", "QuantizeLinear", "--input", str(tmp_path / "x.npy"), "--input", "0.5", "--input", "3"]) == 0
    assert "array([  4,   0,   8, 255,   0], dtype=uint8)" in capsys.readouterr().out
    np.save(tmp_path / "q4.npy", np.array([1, -3, 7, -8], np.int8).astype(ml_dtypes.int4))
    assert cli.main(["run", "DequantizeLinear", "--attr", "x_dtype=int4", "--input", str(tmp_path / "q4.npy"),
                     "--input", "0.5", "--input", "1"]) == 0
    assert "array([ 0. , -2. ,  3. , -4.5], dtype=float32)" in capsys.readouterr().out
    out = tmp_path / "y.npy"
    assert cli.main(["run", "QuantizeLinear", "--attr", "output_dtype=float8_e5m2", "--input", str(tmp_path / "x.npy"),
                     "--input", "0.5", "--input", "0", "-o", str(out)]) == 0
    assert "float8_e5m2 as its codes" in capsys.readouterr().err
    want = onnx_oracle.QuantizeLinear(x, np.float32(0.5), np.array(0, ml_dtypes.float8_e5m2))
    assert np.array_equal(np.load(out), storage.to_codes(want))


# The float16/bfloat16 conversions every TF and aten 16-bit program calls (narrow_types.mlir.j2, generated by
# storage.mlir.j2 from the rows), compiled alone: every bit pattern widened, every float32 rounding boundary
# narrowed (NaN payloads of both signs, float32 subnormals included).
_HARNESS = """{% import "narrow_types.mlir.j2" as nt with context %}
func.func @widen(%h: tensor<?xi16>) -> tensor<?xf32> {
  %y = func.call @widen_data(%h) : (tensor<?xi16>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
func.func @narrow(%x: tensor<?xf32>) -> tensor<?xi16> {
  %y = func.call @narrow_data(%x) : (tensor<?xf32>) -> tensor<?xi16>
  return %y : tensor<?xi16>
}
{{ nt.storage_funcs("data") }}
"""


@pytest.mark.parametrize("target", RUN_TARGETS)
@pytest.mark.parametrize("name", ("float16", "bfloat16"))
def test_compiled_16_bit_conversions_exhaustive(target, name):
    from qdq_compiler import compile as qcompile, emit, runtime
    from qdq_compiler.config import OpConfig
    require(target)
    t, tgt = storage.get(name), targets.get(target)
    cfg = OpConfig.make("FakeQuantWithMinMaxArgs", {}, name, "?", target)
    ctx = emit.RenderContext(cfg, dict(cfg.attrs))
    text = emit._env().from_string(_HARNESS).render(k=ctx)
    emit.verify(text)
    key = qcompile.cache_key(text, tgt.compile_flags)
    _, vmfb = qcompile.cached_compile(text, tgt.compile_flags)
    run = {f: runtime.load(tgt.driver, f"{key}:{f}", vmfb, f) for f in ("widen", "narrow")}
    codes = np.arange(65536, dtype=np.uint16).view(np.int16)
    got = np.asarray(run["widen"]([codes])[0])
    assert np.array_equal(got.view(np.uint32), storage.decode(codes, t).view(np.uint32)), name
    nans = np.array([0x7F800001, 0x7F802000, 0x7FBFFFFF, 0x7FC00000, 0x7FFFFFFF, 0xFF800001, 0xFFC12345, 1, 0x807FFFFF],
                    np.uint32).view(np.float32)
    x = np.concatenate([_boundaries(t), nans])
    y = np.asarray(run["narrow"]([x])[0]).view(np.uint16).astype(np.int64)
    with np.errstate(all="ignore"):
        want = x.astype(t.np).view(np.uint16).astype(np.int64)
    assert np.array_equal(y, want), (name, x[y != want][:5], y[y != want][:5], want[y != want][:5])


@pytest.mark.parametrize("call, first", [
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.float32(0.5), np.int8(0), opset=o), 10),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.full(2, 0.5, np.float32), np.zeros(2, np.int8), axis=0, opset=o), 13),
    (lambda o: onnx_oracle.QuantizeLinear(X4.astype(np.float16), np.float16(0.5), np.int8(0), opset=o), 19),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.float32(0.5), np.array(0, ml_dtypes.float8_e5m2), saturate=0,
                                          opset=o), 19),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.float32(0.5), np.array(0, ml_dtypes.int4), opset=o), 21),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.ones((2, 1), np.float32), np.zeros((2, 1), np.int8), axis=1,
                                          block_size=2, opset=o), 21),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.float16(0.5), np.int8(0), opset=o), 23),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.float32(0.5), np.int8(0), precision=1, opset=o), 23),
    (lambda o: onnx_oracle.DequantizeLinear(np.int8([1, 2]), np.float32(0.5), output_dtype=10, opset=o), 23),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.array(0.5, ml_dtypes.float8_e8m0fnu), np.int8(0), opset=o), 24),
    (lambda o: onnx_oracle.DequantizeLinear(np.zeros(2, ml_dtypes.uint2), np.float32(0.5), opset=o), 25),
    (lambda o: onnx_oracle.QuantizeLinear(X4, np.float32(0.5), np.array(0, ml_dtypes.float6_e2m3fn), opset=o), 28),
])
def test_opset_refuses_what_a_model_of_that_opset_cannot_hold(call, first):
    """opset= (ours): a type or attribute newer than the model's opset is refused in ONNX's words; from the opset
    that brought it, the same answer (the numerics do not change between opsets)."""
    want = call(None)
    assert np.array_equal(storage.to_codes(call(first)) if want.dtype.name in storage.TABLE else call(first),
                          storage.to_codes(want) if want.dtype.name in storage.TABLE else want)
    if first > 10:
        with pytest.raises(QDQError, match=f"needs opset {first} or later; opset={first - 1}") as e:
            call(first - 1)
        assert "ONNX: " in str(e.value)
    with pytest.raises(QDQError, match="allowed: 10..28"):
        call(29)


X4 = np.array([[0.3, -1.7], [2.5, 300.0]], np.float32)
