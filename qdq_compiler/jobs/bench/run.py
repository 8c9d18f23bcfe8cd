"""A whole ``qdqc bench`` run: measure, print the table, write the JSON and the plot."""
from __future__ import annotations

import json
import sys

from ... import targets as T
from ...outputs import write_atomic
from .cases import FRAMEWORKS, Case
from .measure import run_bench
from .report import format_table, plot


def _log(s: str):
    print(s, file=sys.stderr, flush=True)


def benchmark(cases: list[Case], targets: list[str], sizes: list[int], repeat: int = 7,
              json_path: str | None = None, plot_path: str | None = None, frameworks=FRAMEWORKS) -> int:
    """Measure ``cases`` at the log2 ``sizes`` on ``targets`` (TensorFlow and the 16-element call included).

    The table goes to stdout, progress and the files written to stderr; the exit status is 0. Unknown
    targets are an error; unavailable ones are skipped with the reason.
    """
    for t in targets:
        T.get(t)
    res = run_bench(cases, targets, sizes, repeat, tf="tf" in frameworks, torch="torch" in frameworks,
                    latency=True, log=_log)
    print(format_table(res))
    if json_path:
        write_atomic(json_path, json.dumps(res, indent=1), "--json")
        print(f"wrote {json_path}", file=sys.stderr)
    if plot_path and plot(res, plot_path):
        print(f"wrote {plot_path}", file=sys.stderr)
    return 0
