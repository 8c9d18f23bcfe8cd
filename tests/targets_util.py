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


def dumped_dispatches(cfg, tmp_path) -> list[str]:
    """The executable sources of ``cfg``'s program, one text per dispatch, as IREE dumps them when it compiles
    with the flags the package uses (the target's and the program's own)."""
    import subprocess
    from qdq_compiler import emit
    from qdq_compiler.iree_tools import iree_compile_path
    src, dump = tmp_path / "m.mlir", tmp_path / "dump"
    src.write_text(emit.render(cfg))
    t = targets.get(cfg.target)
    subprocess.run([iree_compile_path(), str(src), "-o", str(tmp_path / "m.vmfb"), *t.compile_flags,
                    *t.program_flags(cfg), f"--iree-hal-dump-executable-sources-to={dump}"], check=True,
                   capture_output=True)
    return [f.read_text() for f in sorted(dump.glob("*.mlir"))]
