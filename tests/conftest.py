import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Tests share one artifact cache per run unless the caller set one.
os.environ.setdefault("QDQ_CACHE_DIR", str(Path(__file__).resolve().parent.parent / ".qdq_cache"))
# One lavapipe thread per test process (tools/run_tests.py says why), unless the caller chose.
os.environ.setdefault("LP_NUM_THREADS", "1")
