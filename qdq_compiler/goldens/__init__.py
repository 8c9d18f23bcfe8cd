"""The golden vectors of every reference, shipped as package data.

One JSON file per raw op (``<OpName>.json``, format in README.md beside this file), written by
``python -m tools.goldens`` (tools/goldens/) from TF 2.21's CPU kernels (semantics "tf-cpu"); ``xla/<OpName>.json``
holds the answers of its XLA lowering (semantics "tf-xla", ``--semantics tf-xla``); ``half/<OpName>.json`` holds
float16/bfloat16 cases of the six FakeQuant ops under "tf-cpu" (``--dtypes float16,bfloat16``: TF
has no 16-bit FakeQuant kernel, so TF's float32 kernel runs on the exact float32 value of each 16-bit
input and each result is rounded once to the 16-bit type); ``aten/`` PyTorch's ("torch-cpu"), ``onnx/`` the onnx
reference's and ``onnx/ort/`` onnxruntime's. They live inside the package, not under tests/, so an
installed wheel can still check its compiled kernels against TF (``qdqc validate``) without the
source tree and without TensorFlow. Nothing here imports TF.

``DECLARED`` names each (op, semantics)'s file so that a missing one (a wheel without its package data) is an
error naming it, not a validation that silently ran no golden case; ``WITHOUT`` says why the others have none.

    DIR                     the folder holding the files
    ops(semantics)          the op names that have a golden file
    load(op, semantics)     the parsed JSON of one op: {"op", "tf_version", "cases": [...]}
    available()             whether any golden file is present
    HALF_DIR, half_ops()    the folder of the 16-bit FakeQuant goldens (tf-cpu) and the ops it has
    load_half(op)           the parsed JSON of one of them: {"op", "tf_version", "semantics", "definition", "cases"}
    path(op, semantics), half_path(op, semantics)   the declared file (None: none by design), present or not
    none_because(op, semantics)   why an op has no golden file under a semantics ('' when it has one)
    files()                 every file declared, relative to DIR
    require(pairs)          a QDQError naming the declared files of (op, semantics) pairs that are missing
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import semantics as SEM
from ..errors import QDQError

DIR = Path(__file__).resolve().parent
HALF_DIR = DIR / "half"

_FAKE_QUANT = ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVars",
               "FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannel",
               "FakeQuantWithMinMaxVarsPerChannelGradient")
_QDQ = ("QuantizeAndDequantize", "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV4",
        "QuantizeAndDequantizeV4Grad")
_ATEN = ("_fake_quantize_learnable_per_channel_affine", "_fake_quantize_learnable_per_channel_affine_backward",
         "_fake_quantize_learnable_per_tensor_affine", "_fake_quantize_learnable_per_tensor_affine_backward",
         "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", "fake_quantize_per_channel_affine",
         "fake_quantize_per_channel_affine_cachemask", "fake_quantize_per_channel_affine_cachemask_backward",
         "fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask",
         "fake_quantize_per_tensor_affine_cachemask_backward", "fused_moving_avg_obs_fake_quant")
_ONNX = ("DequantizeLinear", "QuantizeDequantizeLinear", "QuantizeLinear")

# semantics -> the ops with a golden file <folder(semantics)>/<op>.json
DECLARED: dict[str, tuple[str, ...]] = {
    "tf-cpu": _FAKE_QUANT + _QDQ, "tf-xla": _FAKE_QUANT + _QDQ[1:4], "torch-cpu": _ATEN, "onnx": _ONNX,
    "ort-cpu": _ONNX, "ocp": (), "torchao": ()}
# semantics -> the ops with float16/bfloat16 goldens <folder(semantics)>/half/<op>.json
HALF_DECLARED: dict[str, tuple[str, ...]] = {"tf-cpu": _FAKE_QUANT}
# semantics -> {op, or "*" for every op: why it has no golden file}
WITHOUT: dict[str, dict[str, str]] = {
    "tf-xla": {"QuantizeAndDequantize": "TF has no XLA lowering of V1",
               "QuantizeAndDequantizeV4Grad": "TF has no XLA kernel for it (no XLA answer to record; tf-xla keeps "
                                              "its masked definition, which the tf-cpu goldens check)"},
    "ocp": {"*": "the OCP MX text is a specification, no program: no golden file (the oracle is checked against "
                 "values worked out from the text, tests/test_mx_numerics.py)"},
    "torchao": {"*": "torchao's goldens (mx/torchao.json: scales and element codes per block) are checked through "
                     "the compiled program by tests/test_mx*.py, not by the matrix"},
}
# shipped, not read by validate: the format, torchao's MX goldens (tests/test_mx*.py), ONNX's own node tests
# (tests/test_onnx_node_tests.py) and the onnx reference's sign of zero on every code (tests/test_onnx_signed_zero.py)
OTHER = ("README.md", "mx/torchao.json", "onnx/node_tests.json", "onnx/signed_zero.json")

__all__ = ["DIR", "HALF_DIR", "DECLARED", "HALF_DECLARED", "WITHOUT", "OTHER", "folder", "ops", "load", "available",
           "half_ops", "load_half", "path", "half_path", "none_because", "files", "require"]


def folder(semantics: str = SEM.DEFAULT) -> Path:
    """The folder of a semantics' golden files."""
    sub = SEM.get(semantics).golden_subdir
    return DIR / sub if sub else DIR


def ops(semantics: str = SEM.DEFAULT) -> tuple[str, ...]:
    """The ops that have a golden file under ``semantics``, sorted by name."""
    return tuple(sorted(p.stem for p in folder(semantics).glob("*.json")))


def available() -> bool:
    """True when the golden files are present (a build without package data has none)."""
    return bool(ops())


def load(op: str, semantics: str = SEM.DEFAULT) -> dict:
    """The parsed golden file of ``op``: ``{"op", "tf_version", "cases": [...]}`` (a fresh dict each call)."""
    return _read(folder(semantics), op)


def half_ops() -> tuple[str, ...]:
    """The ops that have float16/bfloat16 goldens (tf-cpu semantics, ``half/``), sorted by name."""
    return tuple(sorted(p.stem for p in (DIR / "half").glob("*.json")))


def load_half(op: str) -> dict:
    """The parsed 16-bit golden file of ``op`` (tf-cpu): ``{"op", "tf_version", "semantics", "definition",
    "cases": [...]}``, each case's tensors in float16 or bfloat16 (a fresh dict each call)."""
    return _read(DIR / "half", op)


def path(op: str, semantics: str = SEM.DEFAULT) -> Path | None:
    """The golden file ``op`` declares under ``semantics`` (whether or not it is there); None: none by design."""
    return folder(semantics) / f"{op}.json" if op in DECLARED.get(SEM.get(semantics).name, ()) else None


def half_path(op: str, semantics: str = SEM.DEFAULT) -> Path | None:
    """The float16/bfloat16 golden file ``op`` declares under ``semantics``; None: none."""
    return folder(semantics) / "half" / f"{op}.json" if op in HALF_DECLARED.get(SEM.get(semantics).name, ()) else None


def none_because(op: str, semantics: str = SEM.DEFAULT) -> str:
    """Why ``op`` has no golden file under ``semantics`` ('' when it declares one)."""
    sem = SEM.get(semantics).name
    if path(op, sem) is not None:
        return ""
    why = WITHOUT.get(sem, {})
    return why.get(op) or why.get("*") or f"no golden file is declared for {op} under {sem} (qdq_compiler/goldens)"


def files() -> tuple[str, ...]:
    """Every file declared here, relative to DIR, sorted: what a wheel must ship."""
    out = set(OTHER)
    for sem, names in DECLARED.items():
        out |= {path(op, sem).relative_to(DIR).as_posix() for op in names}
    for sem, names in HALF_DECLARED.items():
        out |= {half_path(op, sem).relative_to(DIR).as_posix() for op in names}
    return tuple(sorted(out))


def require(pairs) -> None:
    """Raise a QDQError naming every declared golden file of these (op, semantics) pairs that is missing."""
    want = dict.fromkeys(p for op, sem in pairs for p in (path(op, sem), half_path(op, sem)) if p is not None)
    missing = [str(p) for p in want if not p.is_file()]
    if missing:
        raise QDQError(f"golden file{'s' if len(missing) > 1 else ''} missing: {', '.join(missing)} (declared in "
                       f"qdq_compiler/goldens; an install without the package data?)", arg="goldens")


def _read(where: Path, op: str) -> dict:
    f = where / f"{op}.json"
    if not isinstance(op, str) or "/" in op or not f.is_file():
        have = ", ".join(sorted(p.stem for p in where.glob("*.json"))) or "none"
        raise QDQError(f"no golden vectors for op {op!r} in {where} (ops with goldens: {have})", arg="op")
    return json.loads(f.read_text())
