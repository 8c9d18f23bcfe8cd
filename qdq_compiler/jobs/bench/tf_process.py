"""TensorFlow timed in a process of its own (``tf_child.py``): TF at its best, not sharing the process or
its thread pools with IREE (issue 27), and under semantics tf-xla TF's own XLA (``jit_compile=True``,
issue 30), so that a tf-xla row is held against the compiler it reproduces.

Which Python runs it: ``QDQ_BENCH_TF_PYTHON`` (say, a virtualenv of TensorFlow's own: it pins its own NumPy),
else this interpreter where TensorFlow is importable. TensorFlow is never a dependency.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ... import semantics as SEM

TF_PYTHON_ENV = "QDQ_BENCH_TF_PYTHON"
CHILD = Path(__file__).with_name("tf_child.py")


@functools.lru_cache(maxsize=4)
def _python_for(env_value: str) -> tuple[str | None, str]:
    if env_value:
        if not (os.path.isfile(env_value) and os.access(env_value, os.X_OK)):
            return None, f"{TF_PYTHON_ENV}={env_value!r} is not an executable Python"
        return env_value, ""
    if importlib.util.find_spec("tensorflow") is None:
        return None, f"TensorFlow is not installed here (set {TF_PYTHON_ENV} to a Python that has it)"
    return sys.executable, ""


def tf_python() -> tuple[str | None, str]:
    """(the Python that runs TensorFlow, '') or (None, why there is none)."""
    return _python_for(os.environ.get(TF_PYTHON_ENV, "").strip())


def measure(op: str, semantics: str, kw: dict, tensors, repeat: int, timeout_s: float = 900) -> dict:
    """TF's times for ``op`` on ``kw`` (tf_child.main's result), or {"error": why}. The names in ``tensors``
    (the op's tensor inputs, scalars too) go in as resident tensors, never as Python constants that TF
    would fold before XLA sees them; the rest are attributes."""
    python, why = tf_python()
    if python is None:
        return {"error": why}
    arrays = {k: np.asarray(v) for k, v in kw.items() if k in tensors}
    attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in kw.items() if k not in arrays}
    with tempfile.TemporaryDirectory(prefix="qdq-bench-tf-") as d:
        path = os.path.join(d, "inputs.npz")
        np.savez(path, **arrays)
        spec = {"op": op, "inputs": path, "attrs": attrs, "repeat": max(1, repeat),
                "xla": SEM.get(semantics).framework_mode == "xla"}
        try:
            proc = subprocess.run([python, str(CHILD), json.dumps(spec)], capture_output=True, text=True,
                                  timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {"error": f"TensorFlow's process failed: {e}"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"TensorFlow's process exited {proc.returncode}: {err[:300]}"}
    return json.loads(lines[-1])
