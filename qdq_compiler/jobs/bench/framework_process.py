"""A reference framework timed in a process of its own (issue 27): the framework at its best, not sharing the
process or its thread pools with IREE. Which Python runs it: the framework's environment variable (say, a
virtualenv of its own: frameworks pin their own NumPy), else this interpreter where the framework is importable.
The framework is never a dependency. Each framework's child script (tf_child.py, torch_child.py) imports only
NumPy and the framework, reads its arrays from an .npz file and prints one JSON line."""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


@functools.lru_cache(maxsize=8)
def _python_for(env_name: str, env_value: str, module: str, label: str) -> tuple[str | None, str]:
    if env_value:
        if not (os.path.isfile(env_value) and os.access(env_value, os.X_OK)):
            return None, f"{env_name}={env_value!r} is not an executable Python"
        return env_value, ""
    if importlib.util.find_spec(module) is None:
        return None, f"{label} is not installed here (set {env_name} to a Python that has it)"
    return sys.executable, ""


def python_for(env_name: str, module: str, label: str) -> tuple[str | None, str]:
    """(the Python that runs the framework, '') or (None, why there is none)."""
    return _python_for(env_name, os.environ.get(env_name, "").strip(), module, label)


def run_child(python: str, child, spec: dict, arrays: dict, label: str, timeout_s: float = 900) -> dict:
    """The child's JSON result for ``spec`` (its arrays in ``spec["inputs"]``, an .npz), or {"error": why}."""
    with tempfile.TemporaryDirectory(prefix="qdq-bench-") as d:
        path = os.path.join(d, "inputs.npz")
        np.savez(path, **arrays)
        try:
            proc = subprocess.run([python, str(child), json.dumps({**spec, "inputs": path})], capture_output=True,
                                  text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {"error": f"{label}'s process failed: {e}"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"{label}'s process exited {proc.returncode}: {err[:300]}"}
    return json.loads(lines[-1])
