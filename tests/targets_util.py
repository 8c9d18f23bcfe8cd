"""Which targets the tests run on, and how a missing one is reported (skipped, with the reason)."""
import os

import pytest

from qdq_compiler import targets

# Targets whose numerics the test-suite checks; QDQ_TEST_TARGETS narrows it (e.g. "cpu").
RUN_TARGETS = [t for t in os.environ.get("QDQ_TEST_TARGETS", "cpu,vmvx,vulkan").split(",") if t]


def require(target: str):
    ok, why = targets.get(target).availability()
    if not ok:
        pytest.skip(f"target {target} unavailable: {why}")
