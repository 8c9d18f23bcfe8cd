"""The TensorFlow 2.21 golden vectors, shipped as package data.

One JSON file per raw op (``<OpName>.json``, format in README.md beside this file), written by
``python -m tools.goldens`` (tools/goldens/) from TF 2.21's CPU kernels (semantics "tf-cpu"); ``xla/<OpName>.json``
holds the answers of its XLA lowering (semantics "tf-xla", ``--semantics tf-xla``); ``half/<OpName>.json`` holds
float16/bfloat16 cases of the six FakeQuant ops under "tf-cpu" (``--dtypes float16,bfloat16``: TF
has no 16-bit FakeQuant kernel, so TF's float32 kernel runs on the exact float32 value of each 16-bit
input and each result is rounded once to the 16-bit type). They live inside the package, not under tests/, so an
installed wheel can still check its compiled kernels against TF (``qdqc validate``) without the
source tree and without TensorFlow. Nothing here imports TF.

    DIR                     the folder holding the files
    ops(semantics)          the op names that have a golden file
    load(op, semantics)     the parsed JSON of one op: {"op", "tf_version", "cases": [...]}
    available()             whether any golden file is present
    HALF_DIR, half_ops()    the folder of the 16-bit FakeQuant goldens (tf-cpu) and the ops it has
    load_half(op)           the parsed JSON of one of them: {"op", "tf_version", "semantics", "definition", "cases"}
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import semantics as SEM
from ..errors import QDQError

DIR = Path(__file__).resolve().parent
HALF_DIR = DIR / "half"

__all__ = ["DIR", "HALF_DIR", "folder", "ops", "load", "available", "half_ops", "load_half"]


def folder(semantics: str = SEM.DEFAULT) -> Path:
    """The folder of a semantics' golden files."""
    from ..semantics import get
    sub = get(semantics).golden_subdir
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
    return tuple(sorted(p.stem for p in HALF_DIR.glob("*.json")))


def load_half(op: str) -> dict:
    """The parsed 16-bit golden file of ``op`` (tf-cpu): ``{"op", "tf_version", "semantics", "definition",
    "cases": [...]}``, each case's tensors in float16 or bfloat16 (a fresh dict each call)."""
    return _read(HALF_DIR, op)


def _read(where: Path, op: str) -> dict:
    path = where / f"{op}.json"
    if not isinstance(op, str) or "/" in op or not path.is_file():
        have = ", ".join(sorted(p.stem for p in where.glob("*.json"))) or "none"
        raise QDQError(f"no golden vectors for op {op!r} in {where} (ops with goldens: {have})", arg="op")
    return json.loads(path.read_text())
