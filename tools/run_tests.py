#!/usr/bin/env python3
"""The project's test command: the lit suite, pytest (parallel over the cores), then the TensorFlow
coexistence tests, in one exit status, on one artifact cache.

The TensorFlow tests run last, on their own: they need ``.venv-tf``, which .ci/run installs in the
background while the rest runs (tests/test_tensorflow_coexistence.py waits for it, and skips, saying why,
where there is none). Arguments are passed to the main pytest run (which then runs alone: no lit, no TF).

``--full`` runs the full tier: every case of the sampled tests (tests/tiers.py; README, "Test tiers"). Without
it, the CI tier: every test, the widest ones on a fixed sample."""
import os
import subprocess
import sys
import time
from pathlib import Path

root = Path(__file__).resolve().parent.parent
bin_dir = Path(sys.executable).parent
env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
# One artifact cache for pytest and lit (lit's own default is lit_tests/Output/qdq_cache): what one compiled,
# the other loads.
env.setdefault("QDQ_CACHE_DIR", str(root / ".qdq_cache"))
# lavapipe (Vulkan on the CPU) runs a dispatch on LP_NUM_THREADS threads, by default one per core. Beside the
# other test worker on 2 cores they wait on each other and a small call took 4-100 ms (scheduler ticks); with
# one thread it takes 0.7 ms (a 2^20 call 113 ms instead of 68). The tests make small calls. A run that sets
# LP_NUM_THREADS keeps its own.
env.setdefault("LP_NUM_THREADS", "1")
jobs = os.environ.get("QDQ_TEST_JOBS", "auto")
args = sys.argv[1:]
if "--full" in args:
    args.remove("--full")
    env["QDQ_TEST_TIER"] = "full"
env.setdefault("QDQ_TEST_TIER", "ci")
started = time.monotonic()
print(f"== test tier: {env['QDQ_TEST_TIER']}", flush=True)
LAST = "tests/test_tensorflow_coexistence.py"

# lit first: the mutation test's unbroken baseline (tests/test_lit_mutation.py) reads lit's results of this run
# (QDQ_LIT_RESULTS: every guarding test passed on the real tree) and loads what lit compiled.
rc_lit = 0
if (root / "lit_tests" / "lit.cfg.py").is_file() and not args:
    results = root / "lit_tests" / "Output" / "results.json"
    results.unlink(missing_ok=True)
    # The tier's lit tests (tests/tiers.py: the CI tier samples the vmvx/vulkan end-to-end files).
    sys.path.insert(0, str(root / "tests"))
    os.environ["QDQ_TEST_TIER"] = env["QDQ_TEST_TIER"]
    import tiers
    lit_files = [str(p) for p in tiers.lit_tests(root / "lit_tests")]
    print(f"== lit: {len(lit_files)} tests ({env['QDQ_TEST_TIER']} tier)", flush=True)
    rc_lit = subprocess.call([str(bin_dir / "lit"), "-sv", "-o", str(results), *lit_files], cwd=root, env=env)
    if results.is_file():
        env["QDQ_LIT_RESULTS"] = str(results)
# --durations: where the suite's time goes, in every CI log (the budget is 9 minutes on 2 cores).
rc_py = subprocess.call([sys.executable, "-m", "pytest", "-n", jobs, "-ra", "--durations=25", "--deselect", LAST,
                         *args], cwd=root, env=env)
rc_tf = 0
if (root / LAST).is_file() and not args:
    print(f"== {LAST} (TensorFlow in the process; waits for .venv-tf if .ci/run is still installing it)", flush=True)
    rc_tf = subprocess.call([sys.executable, "-m", "pytest", "-n", jobs, "-ra", LAST], cwd=root, env=env)
print(f"pytest exit {rc_py}, lit exit {rc_lit}, TensorFlow coexistence pytest exit {rc_tf} "
      f"({env['QDQ_TEST_TIER']} tier, {time.monotonic() - started:.0f} s)")
sys.exit(1 if (rc_py or rc_lit or rc_tf) else 0)
