"""``qdqc diverge --exported``: how far the Q/DQ pair an exporter writes for a training op is from the op itself.

A model trained with TF's FakeQuantWithMinMaxArgs/Vars and converted by tf2onnx, or with PyTorch's
fake_quantize_per_tensor_affine and exported by torch.onnx, runs a QuantizeLinear/DequantizeLinear pair in its
place, with a scale and zero point the exporter derives. The same inputs go through the training op (its
framework's CPU kernels, the oracle) and through the exported pair (ONNX's reference, or onnxruntime's kernels),
and every element whose bits differ is counted and measured in levels of the training op's grid, with an example
(the report rows of ``qdqc diverge``).

The exporters' mappings (their sources, read for this):
  tf2onnx (onnx_opset/quantize.py)  num_bits 8 and narrow_range false only; scale = (max - min) / 255 in float64,
      zero point = -round_half_even(min / scale) as uint8 (refused outside 0..255), scale stored as float32;
      TF nudges the range so that zero is on the grid, the pair does not.
  torch.onnx (symbolic_opset13.py)  (quant_min, quant_max) of (0, 255), (-128, 127) or (0, 127) only; the
      zero point cast to uint8 (quant_min 0) or int8, the float32 scale as it is; (0, 127) adds a Clip at 127
      between the two nodes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import ops
from .. import semantics as SEM
from ..errors import QDQError, QDQWarning
from ..oracle import compute
from ..oracle import onnx_ops as onnx_oracle
from ..validation import bind
from .diverge import Divergence, _compare
from .validate.coverage import numeric_attrs
from .validate.inputs import random_calls
from .validate.matrix import build_matrix


class NotExportable(Exception):
    """The exporter refuses this call (its words)."""


def _tf2onnx(call) -> tuple[np.ndarray, np.ndarray, int | None]:
    a = call.attrs
    if a.get("narrow_range"):
        raise NotExportable(f"Unable to convert node {call.op} with narrow_range=True")
    if a.get("num_bits", 8) != 8:
        raise NotExportable(f"Unable to convert node {call.op} with num_bits={a['num_bits']}")
    lo = float(call.arrays["min"]) if "min" in call.arrays else float(a["min"])
    hi = float(call.arrays["max"]) if "max" in call.arrays else float(a["max"])
    with np.errstate(all="ignore"):
        scale = (hi - lo) / 255
        min_adj = np.around(lo / scale) if scale else np.nan
    if not np.isfinite(min_adj) or not 0 <= -min_adj <= 255:
        raise NotExportable(f"Cannot convert {call.op} with min={lo!r} max={hi!r}: zero point {-min_adj!r} is outside "
                            f"uint8")
    return np.asarray(scale, np.float32), np.asarray(-min_adj).astype(np.uint8), None


def _torch_onnx(call) -> tuple[np.ndarray, np.ndarray, int | None]:
    a = call.attrs
    pair = (a["quant_min"], a["quant_max"])
    if pair not in ((0, 255), (-128, 127), (0, 127)):
        raise NotExportable(f"For (quant_min, quant_max), ONNX allows only (0, 127), (0, 255) and (-128, 127). "
                            f"Got {pair}")
    zp = np.asarray(call.arrays["zero_point"]).astype(np.uint8 if pair[0] == 0 else np.int8)
    return np.asarray(call.arrays["scale"], np.float32), zp, 127 if pair == (0, 127) else None


@dataclass(frozen=True)
class Exporter:
    name: str
    op: str              # the training op
    semantics: str       # the training op's semantics
    mapping: Callable    # bound call -> (scale, zero point, clip at or None); NotExportable where refused


EXPORTERS = (Exporter("tf2onnx", "FakeQuantWithMinMaxArgs", "tf-cpu", _tf2onnx),
             Exporter("tf2onnx", "FakeQuantWithMinMaxVars", "tf-cpu", _tf2onnx),
             Exporter("torch.onnx", "fake_quantize_per_tensor_affine", "torch-cpu", _torch_onnx))


def exported_pair(x, scale, zp, clip_at, semantics: str) -> np.ndarray:
    """DequantizeLinear(QuantizeLinear(x)) as ONNX computes it under ``semantics``, with torch.onnx's Clip."""
    q = onnx_oracle.QuantizeLinear(x, scale, zp, semantics=semantics)
    if clip_at is not None:
        q = np.minimum(q, np.asarray(clip_at, q.dtype))
    return onnx_oracle.DequantizeLinear(q, scale, zp, semantics=semantics)


def export_diverge(size: int = 100_000, seed: int = 0, onnx_semantics: str = "onnx"):
    """(rows, refused): one ``Divergence`` per exportable call of each training op's float32 matrix, and the
    exporter's refusals counted by their words."""
    SEM.get(onnx_semantics)
    names = labels(onnx_semantics)
    rows, refused = [], {}
    for ex in EXPORTERS:
        spec = ops.get(ex.op)
        for entry in build_matrix([ex.op], ["float32"], (ex.semantics,)):
            if entry.static:
                continue
            for kw in random_calls(entry, size, seed):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", QDQWarning)
                    try:
                        call = bind(ex.op, spec.family.public_arguments(spec, kw), semantics=ex.semantics)
                    except QDQError:
                        continue
                try:
                    scale, zp, clip_at = ex.mapping(call)
                except NotExportable as e:
                    key = f"{ex.name}, {ex.op}: {e}"
                    refused[key] = refused.get(key, 0) + 1
                    continue
                trained = compute(call)[0]
                pair_out = exported_pair(call.data, scale, zp, clip_at, onnx_semantics)
                n, differ, levels, ulp, one_nan, example = _compare(spec, call, (trained,), (pair_out,), names)
                discrete, ranges = numeric_attrs(entry, call)
                text = " ".join(f"{k}={v}" for k, v in {**discrete, **ranges}.items()) or "(none)"
                text += f" -> scale={float(scale):.9g} zero_point={int(zp)}"
                rows.append(Divergence(f"{ex.op}:f32 via {ex.name}", text, n, differ, levels, ulp, one_nan,
                                       example))
    return rows, refused


def labels(onnx_semantics: str) -> tuple[str, str]:
    """How the reports name the two answers."""
    return "training op", f"exported Q/DQ ({onnx_semantics})"


def format_report(rows, refused, onnx_semantics: str) -> str:
    from .diverge import format_table
    text = format_table(rows, labels(onnx_semantics))
    if refused:
        text += "\nnot exportable (the exporter refuses these calls):\n" + "\n".join(
            f"  {n} call(s): {why}" for why, n in sorted(refused.items()))
    return text


def run(onnx_semantics: str = "onnx", size: int = 100_000, seed: int = 0, json_path=None, markdown_path=None) -> int:
    """``qdqc diverge --exported``: print the table, write the reports; exit status 0 (the divergence is the
    exporters' and the references', not a failure)."""
    from ..outputs import write_atomic
    from .diverge import json_report, markdown
    if SEM.get(onnx_semantics).namespace != "onnx":
        raise QDQError(f"--exported {onnx_semantics!r}: name an ONNX semantics; allowed: {', '.join(SEM.names('onnx'))}",
                       arg="--exported")
    rows, refused = export_diverge(size, seed, onnx_semantics)
    print(format_report(rows, refused, onnx_semantics))
    pair = labels(onnx_semantics)
    for path, text in ((json_path, lambda: json_report(rows, size, seed, pair)),
                       (markdown_path, lambda: markdown(rows, pair))):
        if path:
            write_atomic(path, text())
    return 0
