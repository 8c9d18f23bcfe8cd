"""The ONNX golden files (qdq_compiler/goldens/onnx/: the onnx reference's answers; ort/: onnxruntime's, the same
cases; tools/goldens/onnx_reference.py) as calls and expected bits."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from qdq_compiler import dtypes

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "qdq_compiler" / "goldens" / "onnx"
OPS = ("QuantizeLinear", "DequantizeLinear", "QuantizeDequantizeLinear")
WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def dec(rec) -> np.ndarray:
    dt = dtypes.np_of(rec["dtype"])
    return np.array(rec["codes"], WIDTH[dt.itemsize]).view(dt).reshape(rec["shape"])


def load(op: str, semantics: str = "onnx") -> list[dict]:
    folder = GOLDEN_DIR if semantics == "onnx" else GOLDEN_DIR / "ort"
    return json.loads((folder / f"{op}.json").read_text())["cases"]


def kwargs_of(case: dict) -> dict:
    """The case as a call of qdq_compiler.onnx_ops.<op> (ONNX's argument names)."""
    return {**{k: dec(v) for k, v in case["inputs"].items()}, **case["attrs"]}


def expected(case: dict) -> np.ndarray | None:
    """The reference's output, None where it raised; where the reference departs from the operator's text (a case
    marked "deviation" with "text": its int32 cast of NaN, +-inf, |q| >= 2^31, tools/goldens/onnx_text.py), the
    text's answer, which semantics onnx gives."""
    out = case.get("text", case["expect"]).get("outputs")
    return None if out is None else dec(out["y"])


def reference_expected(case: dict) -> np.ndarray | None:
    """The reference's own output (its deviations included), None where it raised."""
    out = case["expect"].get("outputs")
    return None if out is None else dec(out["y"])
