"""The suite's two tiers, and the one rule that samples the CI tier (README, "Test tiers").

``full`` (``python tools/run_tests.py --full``) runs every case on every target here. ``ci`` (the default, and
``.ci/run``) runs every test function, but of the widest ones a fixed sample:

* a test marked ``@pytest.mark.sample(every=N)`` keeps the parametrized cases whose id hashes to 0 mod N (CRC-32
  of the id inside the brackets), and always its first case, so that every test function runs in CI; with
  ``only=SLOW_TARGETS`` only its cases on those targets are sampled (the cpu ones all run);
* a test that loops over many reference cases itself calls ``sample(cases, every=N, key=...)``, which keeps the
  cases whose key hashes to 0 mod N, and the first.

The rule depends on nothing but the ids: the same cases every run, on every machine, whatever else is added.
The deselected cases are counted in pytest's summary line ("N deselected").
"""
from __future__ import annotations

import os
import re
import zlib

TIER_VARIABLE = "QDQ_TEST_TIER"
TIERS = ("ci", "full")


def tier() -> str:
    value = os.environ.get(TIER_VARIABLE, "ci")
    if value not in TIERS:
        raise ValueError(f"{TIER_VARIABLE}={value!r}: allowed: {', '.join(TIERS)}")
    return value


def full() -> bool:
    return tier() == "full"


def kept(key: str, every: int) -> bool:
    """Whether the CI tier keeps the case called ``key`` of a test sampled one in ``every``."""
    return every <= 1 or zlib.crc32(str(key).encode()) % every == 0


def sample(cases, every: int, key=str):
    """``cases`` in the full tier; in the CI tier the first case and those whose ``key`` hashes to 0 mod
    ``every``, in their order."""
    cases = list(cases)
    if full() or every <= 1:
        return cases
    return [c for i, c in enumerate(cases) if i == 0 or kept(key(c), every)]


# The targets whose cases a test marked ``sample(every=N, only=SLOW_TARGETS)`` samples in the CI tier (its cpu cases
# all run): their compiles and calls are the slow ones (vmvx interprets; lavapipe runs Vulkan on the CPU).
SLOW_TARGETS = ("vmvx", "vulkan")


def sampled(param: str, only=None) -> bool:
    """Whether the case ``param`` ("[...]", as pytest writes it) is subject to sampling: every case, or with
    ``only`` those whose id names one of those (a ``-``/``,``-separated part of it)."""
    if not only:
        return True
    return bool(set(re.split(r"[\[\]\-,]", param)) & set(only))


def kept_ids(ids, every: int) -> set:
    """The parameter ids (as pytest writes them, without the brackets) that the CI tier keeps of a test marked
    ``sample(every=N)`` (conftest.py): the first and those whose "[id]" hashes to 0 mod N; all in the full tier.
    For a fixture that prepares only the cases that will run."""
    ids = list(ids)
    if full() or every <= 1:
        return set(ids)
    return {i for k, i in enumerate(ids) if k == 0 or kept(f"[{i}]", every)}


# The lit suite's CI tier: every test, but of the oracle-generated end-to-end files of the SLOW_TARGETS
# (lit_tests/e2e/vmvx, lit_tests/e2e/vulkan: one file an op, each a compile per case) one in LIT_E2E_EVERY, by
# the same rule on "<target>/<file name>" (so each target samples other ops), and always each folder's first
# file. The cpu folder runs whole: it holds every op's cases, and llvm-cpu is what most users deploy.
LIT_E2E_EVERY = 3


def lit_tests(lit_root) -> list:
    """The lit test files this tier runs (paths under ``lit_root``), in order."""
    from pathlib import Path
    root = Path(lit_root)
    files = sorted(p for p in root.rglob("*.test") if "Output" not in p.relative_to(root).parts)
    if full():
        return files
    out, firsts = [], set()
    for p in files:
        rel = p.relative_to(root).parts
        if len(rel) == 3 and rel[0] == "e2e" and rel[1] in SLOW_TARGETS:
            first = rel[1] not in firsts
            firsts.add(rel[1])
            if not first and not kept(f"{rel[1]}/{rel[2]}", LIT_E2E_EVERY):
                continue
        out.append(p)
    return out
