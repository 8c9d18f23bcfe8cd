#!/usr/bin/env python3
"""The project's test command: pytest (parallel over the cores), the lit suite, then the TensorFlow
coexistence tests, in one exit status.

The TensorFlow tests run last, on their own: they need ``.venv-tf``, which .ci/run installs in the
background while the rest runs (tests/test_tensorflow_coexistence.py waits for it, and skips, saying why,
where there is none). Arguments are passed to the main pytest run."""
import os
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
bin_dir = Path(sys.executable).parent
env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
jobs = os.environ.get("QDQ_TEST_JOBS", "auto")
LAST = "tests/test_tensorflow_coexistence.py"

rc_py = subprocess.call([sys.executable, "-m", "pytest", "-n", jobs, "-ra", "--deselect", LAST, *sys.argv[1:]],
                        cwd=root, env=env)
rc_lit = 0
if (root / "lit_tests" / "lit.cfg.py").is_file():
    rc_lit = subprocess.call([str(bin_dir / "lit"), "-sv", str(root / "lit_tests")], cwd=root, env=env)
rc_tf = 0
if (root / LAST).is_file() and not sys.argv[1:]:
    print(f"== {LAST} (TensorFlow in the process; waits for .venv-tf if .ci/run is still installing it)", flush=True)
    rc_tf = subprocess.call([sys.executable, "-m", "pytest", "-n", jobs, "-ra", LAST], cwd=root, env=env)
print(f"pytest exit {rc_py}, lit exit {rc_lit}, TensorFlow coexistence pytest exit {rc_tf}")
sys.exit(1 if (rc_py or rc_lit or rc_tf) else 0)
