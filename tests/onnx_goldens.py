"""The ONNX golden files (qdq_compiler/goldens/onnx/, tools/goldens/onnx_reference.py) as calls and expected bits."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from qdq_compiler import dtypes

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "qdq_compiler" / "goldens" / "onnx"
OPS = ("QuantizeLinear", "DequantizeLinear", "QuantizeDequantizeLinear")
_WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def dec(rec) -> np.ndarray:
    dt = dtypes.np_of(rec["dtype"])
    return np.array(rec["codes"], _WIDTH[dt.itemsize]).view(dt).reshape(rec["shape"])


def load(op: str) -> dict:
    return json.loads((GOLDEN_DIR / f"{op}.json").read_text())


def kwargs_of(op: str, case: dict) -> dict:
    """The case as a call of qdq_compiler.onnx_ops.<op> (ONNX's argument names)."""
    ins = case["inputs"]
    names = ("x", "x_scale", "x_zero_point") if op == "DequantizeLinear" else ("x", "y_scale", "y_zero_point")
    kw = {names[0]: dec(ins["x"]), names[1]: dec(ins["scale"]), names[2]: dec(ins["zero_point"])}
    kw.update(case["attrs"])
    return kw


def same_bits(got, want: np.ndarray) -> bool:
    got = np.asarray(got)
    return got.dtype == want.dtype and got.shape == want.shape and \
        np.array_equal(got.view(_WIDTH[got.dtype.itemsize]), want.view(_WIDTH[want.dtype.itemsize]))
