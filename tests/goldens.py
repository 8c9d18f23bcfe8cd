"""Test-side helpers for the TF 2.21 golden vectors (package data in qdq_compiler/goldens/, loaded through
``qdq_compiler.goldens``; written by ``python -m tools.goldens``, the 16-bit FakeQuant ones in goldens/half/
by its ``--dtypes float16,bfloat16``)."""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from qdq_compiler import goldens as _goldens
from qdq_compiler import ops as registry

GOLDEN_DIR = _goldens.DIR
# bfloat16 is ml_dtypes.bfloat16, the NumPy type TF and JAX use.
_DT = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64,
       "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
# TF errors that the project deliberately replaces (spec "Project policy"): V1 runs (policy 2); TF's
# "no kernel" for half types is our dtype TypeError, worded by us.
POLICY_ERROR_KINDS = {"UnimplementedError", "NotImplementedError"}
OWN_WORDING_KINDS = {"abort", "NotFoundError"}
# graph-mode messages that carry no words of their own (e.g. "[[q]]" for a half-type kernel lookup)


def decode(entry: dict) -> np.ndarray:
    dt = entry["dtype"]
    vals = entry["values"]
    if dt == "bool":   # aten's masks, written 0/1
        return np.array(vals, np.bool_).reshape(entry["shape"])
    if dt in ("int32", "int64"):
        arr = np.array(vals, _DT[dt])
    else:
        arr = np.array([float.fromhex(v) if v not in ("nan", "-nan") else float("nan") for v in vals], np.float64)
        arr = arr.astype(_DT[dt])
    return arr.reshape(entry["shape"])


def kwargs_of(case: dict) -> dict:
    spec = registry.get(case["op"])
    kw = {}
    for name, value in case["attrs"].items():
        a = spec.attr_map.get(name)
        kw[name] = float.fromhex(value) if a is not None and a.kind is float and isinstance(value, str) else value
    for name, entry in case["inputs"].items():
        kw[name] = decode(entry)
    return kw


@functools.lru_cache(maxsize=1)
def all_cases() -> tuple[dict, ...]:
    cases = []
    for op in _goldens.ops():
        cases.extend(_goldens.load(op)["cases"])
    return tuple(cases)


@functools.lru_cache(maxsize=1)
def xla_cases() -> tuple[dict, ...]:
    """The goldens of TF 2.21's XLA lowering (semantics tf-xla), each case marked with its semantics."""
    cases = []
    for op in _goldens.ops("tf-xla"):
        cases.extend({**c, "semantics": "tf-xla"} for c in _goldens.load(op, "tf-xla")["cases"])
    return tuple(cases)


@functools.lru_cache(maxsize=1)
def half_cases() -> tuple[dict, ...]:
    """The float16/bfloat16 FakeQuant goldens (tf-cpu; goldens/half/, tools/goldens/tf_half.py): TF's
    float32 kernel on the exact value of the 16-bit inputs, each result rounded once. Ids end -f16/-bf16."""
    cases = []
    for op in _goldens.half_ops():
        cases.extend(_goldens.load_half(op)["cases"])
    return tuple(cases)


def case_ids(cases) -> list[str]:
    return [f"{c['op']}:{c['id']}" for c in cases]


def success_cases():
    return [c for c in all_cases() if "outputs" in c["expect"]]


def error_cases():
    return [c for c in all_cases() if "error" in c["expect"]]


def is_per_channel_given_range(case) -> bool:
    """V2/V4 with range_given and axis >= 0: TF 2.21 rejects every such call; we implement it (policy 1)."""
    a = case["attrs"]
    return (case["op"] in ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4") and a.get("range_given") is True
            and a.get("axis", -1) >= 0 and all(len(case["inputs"][n]["shape"]) == 1 for n in ("input_min", "input_max"))
            and case["inputs"]["input_min"]["shape"] == [case["inputs"]["input"]["shape"][a["axis"]]] * 1
            and case["inputs"]["input_max"]["shape"] == case["inputs"]["input_min"]["shape"])


def tf_words(message: str) -> str:
    """The part of a TF error message that identifies the check (graph-mode node noise and NodeDefs cut)."""
    import re
    m = re.search(r"Node: '[^']*'\s*(.*)$", message, re.S)
    if m:
        message = m.group(1)
    message = message.split("\t;")[0].split("\n\t")[0].strip()
    if message.startswith("Tensor conversion requested"):
        message = message.split(":")[0]
    return message
