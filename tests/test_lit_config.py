"""lit's configuration probes the targets in a child process (issue 29.4): lit forks its workers from its own
process, and a GPU driver loaded there (lavapipe's threads, its LLVM) once left a run stopped for 11 minutes
with a driver thread spinning in lit and no test running."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("lit") is None, reason="needs lit (pip install -e '.[test]')")
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps (Linux)")
def test_lit_configures_without_loading_a_gpu_driver_into_its_own_process():
    lit = Path(sys.executable).parent / "lit"
    env = dict(os.environ, QDQ_LIT_REPORT_DRIVERS="1")
    r = subprocess.run([str(lit), "--show-suites", str(REPO / "lit_tests")], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    said = [line for line in (r.stdout + r.stderr).splitlines() if "GPU driver libraries in lit's process" in line]
    assert said and said[0].endswith(": none"), said or r.stderr[-2000:]
    # ... while the targets were probed all the same: the unavailable ones are named, with the reason
    from qdq_compiler import targets
    for name, t in targets.TARGETS.items():
        ok, why = t.availability()
        assert ok or f"target {name} unavailable here ({why})" in r.stderr
