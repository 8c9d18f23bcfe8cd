"""ONNX's own backend node tests of QuantizeLinear and DequantizeLinear as one golden file,
qdq_compiler/goldens/onnx/node_tests.json: every case ``onnx.backend.test.case.node`` defines for the two ops
(quantizelinear.py, dequantizelinear.py: the data the onnx repository ships under
onnx/backend/test/data/node/test_quantizelinear*, test_dequantizelinear*; the wheel carries the generators, not
the .pb files, so the cases are collected from them), with each node's attributes, inputs and the expected
output the test case holds. Besides those, the QuantizeLinear node at the end of each expanded
DynamicQuantizeLinear test graph (test_dynamicquantizelinear*_expanded, opset 11), with the inputs the graph feeds
it (run by the onnx reference). The rest of ONNX's backend test data (light, real, simple, pytorch-*) holds no
QuantizeLinear or DequantizeLinear node (searched).

Every expected output is checked here against the onnx reference (ReferenceEvaluator at the case's opset), and
against onnxruntime where it has a kernel (recorded in "ort": "same", "differs", or its error).

Run in the reference's virtualenv (see onnx_reference.py), from the repository root:

    /tmp/onnxvenv/bin/python -m tools.goldens.onnx_node_tests [--out FILE]     # a few seconds
"""
from __future__ import annotations

import argparse
import os
import warnings

import ml_dtypes
import numpy as np
import onnx
import onnxruntime
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from .fmt import write_file
from .onnx.reference_runner import golden
from .onnx_reference import OUT

def enc(a):
    """{"dtype", "shape", "codes"} of an array as it is (onnx_reference.enc writes a 0-d array as shape [1])."""
    a = np.asarray(a)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "codes": [int(v) for v in np.ascontiguousarray(a).view(width).ravel()]}

OPS = ("QuantizeLinear", "DequantizeLinear")
NAMES = {"QuantizeLinear": ("x", "y_scale", "y_zero_point"), "DequantizeLinear": ("x", "x_scale", "x_zero_point")}


def _array(v):
    return numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.itemsize != b.dtype.itemsize:
        return False
    w = {1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    return bool(np.array_equal(a.view(w), b.view(w)))


def node_cases(cases):
    out = []
    for c in cases:
        nodes = c.model.graph.node
        if len(nodes) != 1 or nodes[0].op_type not in OPS:
            continue
        node, opset = nodes[0], c.model.opset_import[0].version
        assert len(c.data_sets) == 1, c.name
        ins, outs = c.data_sets[0]
        arrays = [_array(v) for v in ins]
        want = _array(outs[0])
        ref = ReferenceEvaluator(c.model).run(None, {i.name: a for i, a in zip(c.model.graph.input, arrays)})[0]
        assert _same(ref, want), c.name      # the test's own output is the reference's
        got = golden(node.op_type, *arrays, *[None] * (3 - len(arrays)), attrs=_attrs(node))["ort"]
        ort = got if isinstance(got, str) else "same" if _same(got, want) else "differs"
        names = NAMES[node.op_type]
        out.append({"name": c.name, "op": node.op_type, "opset": opset, "attrs": _attrs(node),
                    "inputs": {names[k]: enc(a) for k, a in enumerate(arrays)},
                    "expect": {"outputs": {"y": enc(want)}}, "ort": ort})
    return out


def expanded_cases(cases):
    """The QuantizeLinear node of each expanded DynamicQuantizeLinear graph, with what the graph feeds it."""
    out = []
    for c in cases:
        nodes = c.model.graph.node
        if not c.name.endswith("_expanded") or not any(n.op_type in OPS for n in nodes):
            continue
        node = [n for n in nodes if n.op_type in OPS]
        assert len(node) == 1, c.name
        node, opset = node[0], c.model.opset_import[0].version
        ins, outs = c.data_sets[0]
        feeds = {i.name: _array(v) for i, v in zip(c.model.graph.input, ins)}
        ev = ReferenceEvaluator(c.model)
        arrays = ev.run(list(node.input), feeds)
        y = ev.run([node.output[0]], feeds)[0]
        want = _array(outs[0])               # the graph's first output is this node's
        assert node.output[0] in c.model.graph.output[0].name or _same(y, want), c.name
        assert _same(y, want), c.name
        names = NAMES[node.op_type]
        out.append({"name": c.name + ":" + node.op_type, "op": node.op_type, "opset": opset, "attrs": _attrs(node),
                    "inputs": {names[k]: enc(a) for k, a in enumerate(arrays)},
                    "expect": {"outputs": {"y": enc(want)}}, "ort": "not run (a node inside a graph)"})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(OUT, "node_tests.json"))
    args = p.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node_tests
        cases = node_tests.collect_testcases(None)
    records = node_cases(cases) + expanded_cases(cases)
    for i, r in enumerate(records):
        r["id"] = i
    header = {"source": "onnx.backend.test.case.node (quantizelinear.py, dequantizelinear.py, dynamicquantizelinear.py "
                        "expanded)", "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
              "ml_dtypes": ml_dtypes.__version__, "numpy": np.__version__}
    write_file(args.out, header, records, separators=(",", ":"))
    print(f"{args.out}: {len(records)} cases ({sum(r['ort'] == 'same' for r in records)} onnxruntime agrees with)")


if __name__ == "__main__":
    main()
