"""What a user sees of ``qdqc validate`` (issue 14, items 2 and 3): progress arrives in a pipe while the
job runs, and a passing run prints no NumPy warnings and no raw driver errors."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from qdq_compiler import targets
from qdq_compiler.targets import readable_iree_error

QDQC = [sys.executable, "-m", "qdq_compiler"]


def test_progress_reaches_a_pipe_before_the_end(tmp_path):
    proc = subprocess.Popen(QDQC + ["validate", "--targets", "cpu,cuda", "--ops", "FakeQuantWithMinMaxVarsGradient"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    seen = []  # (stderr line, whether the process was still running when it arrived)

    def read():
        for line in proc.stderr:
            seen.append((line.rstrip("\n"), proc.poll() is None))

    reader = threading.Thread(target=read)
    reader.start()
    out = proc.stdout.read()
    proc.wait(timeout=600)
    reader.join(timeout=60)
    err = [line for line, _ in seen]
    assert proc.returncode == 0, "\n".join(err) + out
    progress = [(line, alive) for line, alive in seen if line.startswith("[")]
    assert progress and progress[0][1], f"no progress line arrived while validate ran: {err}"
    assert any(line.startswith("compiling ") for line in err) and any(line.startswith("running ") for line in err)
    assert not any("\r" in line for line in err), "a bar redrawn with \\r is for terminals, not pipes"
    # A passing run looks like one: no NumPy warnings, no raw IREE status text.
    assert "RuntimeWarning" not in "\n".join(err) + out
    assert "cuda_dynamic_symbols" not in "\n".join(err) + out and "UNAVAILABLE" not in "\n".join(err)
    assert "exact" in out.splitlines()[-1]


def test_no_progress_is_quiet(tmp_path):
    out = subprocess.run(QDQC + ["validate", "--targets", "cpu", "--ops", "FakeQuantWithMinMaxArgs", "--no-progress"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0 and out.stderr == "", out.stderr


def test_iree_errors_read_as_one_line():
    raw = RuntimeError("Error creating driver: c/runtime/src/iree/hal/drivers/cuda/cuda_dynamic_symbols.c:66: "
                       "UNAVAILABLE; CUDA driver library 'libcuda.so'/'nvcuda.dll' not available; please ensure "
                       "installed and in dynamic library search path\nmore")
    assert readable_iree_error(raw) == "CUDA driver library 'libcuda.so'/'nvcuda.dll' not available"
    assert readable_iree_error(RuntimeError("")) == "RuntimeError"
    ok, why = targets.get("cuda").availability()
    assert ok or ("\n" not in why and ".c:" not in why), why
