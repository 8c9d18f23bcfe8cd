"""PyTorch timed in a process of its own (``torch_child.py``, framework_process.py), as TensorFlow is: its nearest
op on the case's data and an 8-bit range (levels 0..255; its nudging and rounding differ from TF's), on as many
threads as this machine's cores, which IREE's workers use too.

Which Python runs it: ``QDQ_BENCH_TORCH_PYTHON`` (say, a virtualenv of PyTorch's own), else this interpreter
where PyTorch is importable. PyTorch is never a dependency.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import framework_process

TORCH_PYTHON_ENV = "QDQ_BENCH_TORCH_PYTHON"
CHILD = Path(__file__).with_name("torch_child.py")


def torch_python() -> tuple[str | None, str]:
    """(the Python that runs PyTorch, '') or (None, why there is none)."""
    return framework_process.python_for(TORCH_PYTHON_ENV, "torch", "PyTorch")


def measure(kind: str, x: np.ndarray, lo, hi, repeat: int, timeout_s: float = 900) -> dict:
    """PyTorch's times (torch_child.main's result) for ``kind`` ("per-tensor" or "per-channel", axis 1) on x with
    the range [lo, hi] as scale (hi - lo) / 255 and zero point round(-lo / scale) in 0..255, or {"error": why}."""
    python, why = torch_python()
    if python is None:
        return {"error": why}
    scale = np.maximum((hi - lo) / np.float32(255), np.float32(1e-8)).astype(np.float32)
    zero_point = np.clip(np.round(-lo / scale), 0, 255).astype(np.int32)
    spec = {"kind": kind, "repeat": max(1, repeat), "threads": os.cpu_count() or 1}
    return framework_process.run_child(python, CHILD, spec, {"x": np.asarray(x), "scale": scale,
                                                              "zero_point": zero_point}, "PyTorch", timeout_s)
