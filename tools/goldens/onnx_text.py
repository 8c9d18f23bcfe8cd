"""Where the onnx reference's QuantizeLinear departs from the operator's text, the text's answer beside it
(issue 48.5). The text: ``y = saturate(round(x / y_scale) + y_zero_point)``; the reference computes
``np.rint(x / y_scale).astype(int32)``, a cast NumPy and C leave undefined for NaN, +-inf and |q| >= 2^31 (x86 gives
INT32_MIN, so +inf became the type's minimum; ml_dtypes' bfloat16 cast gives other values), and adds the zero point
in int32 (wrapping). The text's answer saturates: +inf and huge quotients to the maximum, -inf to the minimum; NaN,
which the text leaves open, to the minimum, as onnxruntime 1.32 gives it. float8/float4/float6 results are not
affected (no int32 cast).

A QuantizeLinear or QuantizeDequantizeLinear integer case of goldens/onnx/<op>.json whose reference answer differs
from the text's keeps its "expect" (the reference's bits) and gains "text" (the text's answer, the pair's through
the reference's DequantizeLinear) and "deviation" (why; joined to a subnormal note it may have). Called by
onnx_reference.py before it writes; runnable alone on the committed files, in the reference's virtualenv:

    /tmp/onnxvenv/bin/python -m tools.goldens.onnx_text          # rewrites goldens/onnx/QuantizeLinear.json, pair
"""
from __future__ import annotations

import json
import os

import ml_dtypes
import numpy as np
from onnx.helper import tensor_dtype_to_np_dtype
from onnx.reference.ops._quant_utils import reshape_input

from .onnx.reference_runner import golden

TEXT_NOTE = ("the reference's deviation from the text: np.rint(q).astype(int32) of NaN, +-inf or |q| >= 2^31 is "
             "undefined (x86: INT32_MIN) and the zero point is added in int32; the text saturates (+inf: the "
             "maximum, -inf: the minimum; NaN: the minimum, as onnxruntime): \"text\" holds its answer, which "
             "semantics onnx gives")
WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32}
FLOATS = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _np(name):
    return FLOATS.get(name) or getattr(ml_dtypes, name, None) or np.dtype(name).type


def dec(rec):
    dt = np.dtype(_np(rec["dtype"]))
    return np.array(rec["codes"], WIDTH[dt.itemsize]).view(dt).reshape(rec["shape"])


def text_quantize(x, scale, zp, attrs):
    """The text's integer QuantizeLinear: the reference's quotient, rounded half to even, + zero point, saturated
    (NaN: the minimum)."""
    axis, bs = attrs.get("axis", 1), attrs.get("block_size", 0)
    s = reshape_input(scale, x.shape, axis, bs)
    z = reshape_input(zp, x.shape, axis, bs)
    with np.errstate(all="ignore"):
        if attrs.get("precision"):
            p = tensor_dtype_to_np_dtype(attrs["precision"])
            q = x.astype(p) / s.astype(p)
        else:
            q = x / s
        r = np.rint(np.asarray(q).astype(np.float64)) + np.asarray(z).astype(np.float64)
        info = ml_dtypes.iinfo(zp.dtype)
        r = np.where(np.isnan(r), info.min, np.clip(r, info.min, info.max))
    return r.astype(np.int64).astype(zp.dtype)


def mark(q_records, pair_records, enc) -> int:
    """Marks the cases (in place; the pair's records are the same cases, by id) and returns how many Q cases."""
    pairs = {r["id"]: r for r in pair_records}
    n = 0
    for r in q_records:
        out = r["expect"].get("outputs")
        if out is None or out["y"]["dtype"].startswith("float"):
            continue
        x, scale, zp = (dec(r["inputs"][k]) for k in ("x", "y_scale", "y_zero_point"))
        want = dec(out["y"])
        text = text_quantize(x, scale, zp, r["attrs"]).reshape(want.shape)
        if np.array_equal(text.view(WIDTH[text.itemsize]), want.view(WIDTH[want.itemsize])):
            continue
        n += 1
        for rec, y in ((r, text), (pairs.get(r["id"]), None)):
            if rec is None or rec["expect"].get("outputs") is None:
                continue
            if y is None:
                dq = {k: v for k, v in rec["attrs"].items() if k in ("axis", "block_size")}
                dq["output_dtype"] = {"float32": 1, "float16": 10, "bfloat16": 16}[str(x.dtype)]
                y = golden("DequantizeLinear", text, scale, zp, dq)["ref"]
            old = rec.get("deviation", "")
            rec["deviation"] = TEXT_NOTE if not old or old == TEXT_NOTE else (
                old if TEXT_NOTE in old else f"{old}; {TEXT_NOTE}")
            rec["text"] = {"outputs": {"y": enc(y)}}
    return n


def main():
    from .onnx_reference import OUT, enc
    paths = {op: os.path.join(OUT, f"{op}.json") for op in ("QuantizeLinear", "QuantizeDequantizeLinear")}
    files = {op: json.load(open(p)) for op, p in paths.items()}
    n = mark(files["QuantizeLinear"]["cases"], files["QuantizeDequantizeLinear"]["cases"], enc)
    for op, p in paths.items():
        data = files[op]
        records = data.pop("cases")
        with open(p, "w") as fh:
            fh.write(json.dumps(data)[:-1] + ', "cases": [\n')
            fh.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in records))
            fh.write("\n]}\n")
        print(f"{p}: {sum('text' in r for r in records)} cases marked")
    print(f"{n} QuantizeLinear cases depart from the text")


if __name__ == "__main__":
    main()
