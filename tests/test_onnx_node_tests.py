"""ONNX's own backend node tests of QuantizeLinear and DequantizeLinear (onnx 1.23.2's
onnx.backend.test.case.node: quantizelinear.py, dequantizelinear.py; the data under
onnx/backend/test/data/node/test_quantizelinear*, test_dequantizelinear*) and the QuantizeLinear node of the three
expanded DynamicQuantizeLinear graphs, as qdq_compiler/goldens/onnx/node_tests.json holds them
(tools/goldens/onnx_node_tests.py): each node's attributes, opset and inputs, its expected output bit for bit, on
the oracle and every target. Per-tensor scales and zero points come as ONNX writes them: 0-d, or a [1] zero point
beside a 0-d scale (issue 48.1: 8 of the 27 were refused)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from qdq_compiler import onnx_ops, storage
from qdq_compiler.oracle import onnx_ops as onnx_oracle

import onnx_goldens as G
from checks import compile_ahead
from targets_util import RUN_TARGETS, require
import tiers

DATA = json.loads((G.GOLDEN_DIR / "node_tests.json").read_text())
CASES = DATA["cases"]


def _kwargs(case):
    return {**{k: G.dec(v) for k, v in case["inputs"].items()}, **case["attrs"], "opset": case["opset"]}


def _same(got, want) -> bool:
    got = np.asarray(got)
    return got.dtype == want.dtype and got.shape == want.shape and \
        np.array_equal(got.view(G.WIDTH[got.itemsize]), want.view(G.WIDTH[want.itemsize]))


def test_the_file_holds_every_node_test():
    names = [c["name"] for c in CASES]
    assert len(CASES) == 30 and len(set(names)) == 30 and DATA["onnx"] == "1.23.2"
    assert sum(n.startswith("test_quantizelinear") for n in names) == 13
    assert sum(n.startswith("test_dequantizelinear") for n in names) == 14
    zp_beside_0d = [c["name"] for c in CASES if len(c["inputs"]) == 3
                    and [v["shape"] for v in list(c["inputs"].values())[1:]] == [[], [1]]]
    assert len(zp_beside_0d) == 8, zp_beside_0d


@pytest.mark.parametrize("target", ["oracle"] + RUN_TARGETS)
def test_node_tests(target):
    """Every case, bit for bit, dtype and shape too; in the CI tier on cpu one in 2, on vmvx and Vulkan one in 4
    (tests/tiers.py; the full tier: all 30 everywhere)."""
    if target != "oracle":
        require(target)
    fn = (lambda c: getattr(onnx_oracle, c["op"])) if target == "oracle" else (lambda c: getattr(onnx_ops, c["op"]))
    extra = {} if target == "oracle" else {"target": target}
    every = 1 if target == "oracle" else 2 if target == "cpu" else 4
    cases = tiers.sample(CASES, every=every, key=lambda c: c["name"])
    if target != "oracle":
        compile_ahead(lambda c=c: fn(c)(**_kwargs(c), **extra) for c in cases)
    failed = [c["name"] for c in cases if not _same(fn(c)(**_kwargs(c), **extra), G.dec(c["expect"]["outputs"]["y"]))]
    assert not failed, failed
    assert len(cases) >= (30 if target == "oracle" or tiers.full() else 5), len(cases)


def test_onnxruntime_answers_where_it_agrees():
    """semantics='ort-cpu' (the oracle) gives the expected output wherever onnxruntime 1.32 did (the file records
    it: 25 of 27; no float4 kernel there) and refuses float4."""
    agreed = [c for c in CASES if c["ort"] == "same"]
    assert len(agreed) == 25
    for c in agreed:
        assert _same(getattr(onnx_oracle, c["op"])(**_kwargs(c), semantics="ort-cpu"),
                     G.dec(c["expect"]["outputs"]["y"])), c["name"]
    f4 = next(c for c in CASES if c["name"] == "test_quantizelinear_float4e2m1")
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        onnx_oracle.QuantizeLinear(**_kwargs(f4), semantics="ort-cpu")


@pytest.mark.parametrize("x_shape", [(), (1,), (3,)])
@pytest.mark.parametrize("shapes", [((), ()), ((), (1,)), ((1,), (1,)), ((1,), ())])
def test_every_per_tensor_shape(shapes, x_shape):
    """Every shape ONNX allows for a per-tensor scale and zero point (0-d, [1], and one of each), on Q, DQ and the
    pair: the result takes x's shape (the reference's, measured: 0-d x gives 0-d, a [1] x gives [1]), and the same
    values as the 0-d pair gives."""
    import ml_dtypes
    s_shape, z_shape = shapes
    for t in (np.int8, ml_dtypes.float8_e4m3fn, ml_dtypes.float4_e2m1fn, ml_dtypes.float6_e3m2fn):
        x = np.full(x_shape, -0.79, np.float16)
        s, z = np.full(s_shape, 0.5, np.float32), np.full(z_shape, 0, t)
        q = onnx_oracle.QuantizeLinear(x, s, z)
        assert q.shape == x_shape and q.dtype == t
        assert np.array_equal(storage.to_codes(q), storage.to_codes(onnx_oracle.QuantizeLinear(x, s.reshape(()),
                                                                                                 z.reshape(()))))
        d = onnx_oracle.DequantizeLinear(q, s, z)
        assert d.shape == x_shape and d.dtype == np.float32 and np.all(d == q.astype(np.float32) * 0.5) and np.all(d < 0)
        fq = onnx_oracle.QuantizeDequantizeLinear(x, s, z)
        assert fq.shape == x_shape and fq.dtype == np.float16


def test_compiled_per_tensor_shapes_zero_d():
    """The same on cpu for the two mixed shapes and a 0-d x (the issue's float16 x into float8)."""
    import ml_dtypes
    require("cpu")
    x = np.array(-0.79, np.float16)
    for s, z in ((np.float32(0.5), np.zeros(1, ml_dtypes.float8_e4m3fnuz)),
                 (np.full(1, 0.5, np.float32), np.zeros((), ml_dtypes.float8_e4m3fnuz))):
        for op in ("QuantizeLinear", "QuantizeDequantizeLinear"):   # (both shapes: one program each)
            got = getattr(onnx_ops, op)(x, s, z, target="cpu")
            want = getattr(onnx_oracle, op)(x, s, z)
            assert got.shape == want.shape == () and got.dtype == want.dtype
            assert np.array_equal(np.asarray(got).view(np.uint8 if got.itemsize == 1 else np.uint16),
                                  np.asarray(want).view(np.uint8 if want.itemsize == 1 else np.uint16))
