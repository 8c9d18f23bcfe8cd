"""TensorFlow timed in a process of its own (``tf_child.py``, framework_process.py): TF at its best, not sharing
the process or its thread pools with IREE (issue 27), and under semantics tf-xla TF's own XLA
(``jit_compile=True``, issue 30), so that a tf-xla row is held against the compiler it reproduces.

Which Python runs it: ``QDQ_BENCH_TF_PYTHON`` (say, a virtualenv of TensorFlow's own: it pins its own NumPy),
else this interpreter where TensorFlow is importable. TensorFlow is never a dependency.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ... import semantics as SEM
from . import framework_process

TF_PYTHON_ENV = "QDQ_BENCH_TF_PYTHON"
CHILD = Path(__file__).with_name("tf_child.py")


def tf_python() -> tuple[str | None, str]:
    """(the Python that runs TensorFlow, '') or (None, why there is none)."""
    return framework_process.python_for(TF_PYTHON_ENV, "tensorflow", "TensorFlow")


def measure(op: str, semantics: str, kw: dict, tensors, repeat: int, timeout_s: float = 900) -> dict:
    """TF's times for ``op`` on ``kw`` (tf_child.main's result), or {"error": why}. The names in ``tensors``
    (the op's tensor inputs, scalars too) go in as resident tensors, never as Python constants that TF
    would fold before XLA sees them; the rest are attributes."""
    python, why = tf_python()
    if python is None:
        return {"error": why}
    arrays = {k: np.asarray(v) for k, v in kw.items() if k in tensors}
    attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in kw.items() if k not in arrays}
    spec = {"op": op, "attrs": attrs, "repeat": max(1, repeat), "xla": SEM.get(semantics).framework_mode == "xla",
            "threads": os.cpu_count() or 1, "data": next(iter(arrays), None)}
    return framework_process.run_child(python, CHILD, spec, arrays, "TensorFlow", timeout_s)
