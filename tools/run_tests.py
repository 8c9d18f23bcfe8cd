#!/usr/bin/env python3
"""The project's test command: pytest (parallel over the cores) and the lit suite, in one exit status."""
import os
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
bin_dir = Path(sys.executable).parent
env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
jobs = os.environ.get("QDQ_TEST_JOBS", "auto")
rc_py = subprocess.call([sys.executable, "-m", "pytest", "-n", jobs, "-ra", *sys.argv[1:]], cwd=root, env=env)
rc_lit = 0
if (root / "lit_tests" / "lit.cfg.py").is_file():
    rc_lit = subprocess.call([str(bin_dir / "lit"), "-sv", str(root / "lit_tests")], cwd=root, env=env)
print(f"pytest exit {rc_py}, lit exit {rc_lit}")
sys.exit(1 if (rc_py or rc_lit) else 0)
