#!/usr/bin/env python3
"""Where could a loop-limited target (lavapipe: 65535 iterations) stop early? A static survey of dispatches.

Renders every program of the validation matrix (both semantics, every dtype, dynamic and static shapes)
for a target with ``Limits.max_loop_iterations``, lowers it to IREE's flow level and lists each dispatch
that holds a reduction, with the operand it reduces. It flags what issue 28 was: a reduction inside a
dispatch named element-wise (IREE fused the range into the element-wise pass, which lavapipe then ran in
one invocation), and a program whose reductions do not come in pairs, a block of
``targets.REDUCTION_BLOCK`` then the partials (macro ``reduce_in_blocks``). Element-wise dispatches are
tiled and distributed by IREE and have no data-sized loop. Exit status 1 when anything is flagged.

    .venv/bin/python tools/loop_bound_survey.py [--target vulkan]     # about a minute on 2 cores
"""
import argparse
import collections
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qdq_compiler import emit, iree_tools, targets  # noqa: E402
from qdq_compiler.execute import config_for_entry  # noqa: E402
from qdq_compiler.jobs import validate  # noqa: E402
from qdq_compiler.jobs.validate.inputs import _shape_for  # noqa: E402

_EXECUTABLE = re.compile(r"\n  flow\.executable private ")
_GENERIC = re.compile(r"linalg\.generic \{indexing_maps = \[.*?\], iterator_types = \[(.*?)\]\} ins\((.*?)\) outs")


def reductions(flow: str) -> list[tuple[str, str]]:
    """(dispatch name, reduced operand type) of every linalg.generic with a reduction iterator."""
    found = []
    for ex in _EXECUTABLE.split(flow)[1:]:
        export = re.search(r"flow\.executable\.export public @(\S+?)[\s(]", ex).group(1)
        name = re.sub(r"^.*?_dispatch_\d+_?", "", export) or export
        for m in _GENERIC.finditer(ex):
            if "reduction" in m.group(1):
                found.append((name, (re.findall(r"tensor<[^>]*>", m.group(2)) or ["?"])[0]))
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="vulkan", help="a target with Limits.max_loop_iterations (default vulkan)")
    args = ap.parse_args(argv)
    t = targets.get(args.target)
    if not t.limits.max_loop_iterations:
        ap.error(f"target {t.name!r} has no loop limit (Limits.max_loop_iterations)")
    compiler = iree_tools.iree_compile_path()
    entries = validate.build_matrix(semantics=("tf-cpu", "tf-xla"))

    def lower(e):
        cfg = config_for_entry(e, t.name, _shape_for(e, 70000) if e.static else None)
        flags = [f"--iree-hal-target-backends={t.backend}", *targets.COMMON_FLAGS, *t.flags, "--compile-to=flow"]
        r = subprocess.run([compiler, "-", *flags], input=emit.render(cfg), capture_output=True, text=True)
        return e.name, (reductions(r.stdout) if r.returncode == 0 else None), r.stderr[:300]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lower, entries))
    kinds, flagged = collections.Counter(), []
    for name, found, err in results:
        if found is None:
            flagged.append(f"{name}: does not compile: {err}")
            continue
        blocks = sum(f"x{targets.REDUCTION_BLOCK}x" in ty for _, ty in found)
        if 2 * blocks != len(found):
            flagged.append(f"{name}: {blocks} block reductions, {len(found) - blocks} others: {found}")
        for disp, ty in found:
            kinds[(disp, ty)] += 1
            if "elementwise" in disp:
                flagged.append(f"{name}: a reduction over {ty} inside element-wise dispatch {disp}")
    print(f"{len(results)} programs for {t.name}; dispatches with a reduction (count, dispatch, reduced operand):")
    for (disp, ty), n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {disp:32s} {ty}")
    print(f"flagged: {len(flagged)}")
    for f in flagged:
        print("  " + f)
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
