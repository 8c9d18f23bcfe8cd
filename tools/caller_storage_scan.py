"""Which validation-matrix programs make IREE copy a temporary into the caller's buffer (internal; not part of qdqc).

    python tools/caller_storage_scan.py                        # every semantics, cpu, 2 compiles at a time
    python tools/caller_storage_scan.py --semantics ocp --target cpu-host

Each program is compiled to IREE's stream level with the package's flags; a ``stream.cmd.copy`` of a
runtime-sized resource means the dispatch wrote a temporary that is then copied into the buffer the caller
passed (an extra read and write of the data). Only the targets whose programs take the caller's buffer
(Target.caller_storage: cpu, cpu-host) can have it. tests/test_caller_storage.py checks a sample in CI; this checks
all of them (the 649 dynamic ones, about 1.5 minutes on 2 cores). Exit status 1 when any program copies.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from qdq_compiler import emit, execute, semantics, targets  # noqa: E402
from qdq_compiler.iree_tools import iree_compile_path  # noqa: E402
from qdq_compiler.jobs.validate.matrix import build_matrix  # noqa: E402
from test_caller_storage import data_copies  # noqa: E402


def scan(entry, target: str) -> list[str]:
    cfg = execute.config_for_entry(entry, target)
    t = targets.get(target)
    out = subprocess.run([iree_compile_path(), "-", "-o", "-", "--compile-to=stream", *t.level_for(cfg),
                          *t.program_flags(cfg)], input=emit.render(cfg), capture_output=True, text=True)
    if out.returncode:
        return ["compile error: " + out.stderr.strip().splitlines()[0]]
    return data_copies(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--semantics", default=",".join(semantics.names()))
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if not targets.get(a.target).caller_storage:
        print(f"{a.target}'s programs return their results (Target.caller_storage is off): no caller's buffer to copy "
              f"into; the targets that take one: " + ", ".join(n for n, t in targets.TARGETS.items() if t.caller_storage))
        return 2
    entries = [e for e in build_matrix(semantics=tuple(a.semantics.split(","))) if not e.static]
    with ThreadPoolExecutor(a.jobs) as ex:
        found = list(ex.map(lambda e: (e.name, scan(e, a.target)), entries))
    bad = [(n, c) for n, c in found if c]
    for n, c in bad:
        print(f"{n}: {', '.join(c)}")
    print(f"{len(entries)} dynamic programs on {a.target}; {len(bad)} copy their data into the caller's buffer")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
