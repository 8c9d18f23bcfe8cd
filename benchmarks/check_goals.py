"""Check a ``qdqc bench`` JSON file against the performance goals of issue 13 (internal; not part of qdqc).

    qdqc bench --json bench.json                      # the default sizes include 2^24
    python benchmarks/check_goals.py bench.json       # one line per goal: met / MISS
    python benchmarks/check_goals.py bench.json --strict   # exit status 1 when a goal is missed
    python benchmarks/check_goals.py bench.json --log2n 22 # evaluate at another measured size

The goals, at 2^24 float32 elements through the public NumPy API (the ``api`` variant, per target):

    given range (per-tensor and per-axis)    <= 1.3 x the copy of its data
    range from the data                      <= 2.0 x copy
    gradient with sums (Vars, PerChannel)    <= 1.5 x the copy of its inputs
    gradient without sums (Args, V4Grad)     <= 1.0 x (they stay about 0.5x)
    faster than TensorFlow / PyTorch         >= 2 x: each framework at its best, its op alone in its own process
                                             (tf-op, torch-op) over ours alone (the ``device`` call); a file
                                             without those rows: TF's NumPy round trip over the public call
    16-element call (us)                     <= 30 us per call (the ``latency`` block)

Standard library only: it reads the JSON and nothing of the package. Exit status 0 (1 with ``--strict``
and a goal missed; 2 when the file cannot be read).
"""
from __future__ import annotations

import argparse
import json
import sys

GOAL_LOG2N = 24
GOALS = {"given range": 1.3, "range from data": 2.0, "gradient with sums": 1.5, "gradient without sums": 1.0,
         "faster than TensorFlow": 2.0, "faster than PyTorch": 2.0, "16-element call (us)": 30.0}
FRAMEWORKS = (("tf", "TensorFlow"), ("torch", "PyTorch"))
WITH_SUMS = ("FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient")


def _goal(goal, r, t, what, value, at_least=False):
    limit = GOALS[goal]
    met = value is not None and (value >= limit if at_least else value <= limit)
    return {"goal": goal, "case": r["case"], "target": t, "measure": what, "value": value, "limit": limit,
            "at_least": at_least, "met": met}


def evaluate_goals(res: dict, log2n: int = GOAL_LOG2N) -> list[dict]:
    """The goals, from the api rows at 2^log2n (each target), TF's rows, and the 16-element call."""
    rows = res.get("results", [])
    goals = []
    at = {(r["case"], r["variant"], r["target"]): r for r in rows if r["log2n"] == log2n}
    targets = sorted({r["target"] for r in rows if r["variant"] == "api"})
    for t in targets:
        for (name, variant, target), r in sorted(at.items()):
            if variant != "api" or target != t:
                continue
            if r.get("kind") == "gradient":
                goal = "gradient with sums" if r.get("op", name) in WITH_SUMS else "gradient without sums"
                goals.append(_goal(goal, r, t, "x copy of its inputs", r["ratio_to_copy"]))
            else:
                goal = "range from data" if r.get("range_from") == "data" else "given range"
                goals.append(_goal(goal, r, t, "x copy", r["ratio_to_copy"]))
            for fw, label in FRAMEWORKS:
                alone, ours_alone = at.get((name, f"{fw}-op", "-")), at.get((name, "device", t))
                if alone is not None and ours_alone is not None and ours_alone["median_s"]:
                    goals.append(_goal(f"faster than {label}", r, t, f"x ({fw} op alone / ours alone)",
                                       alone["median_s"] / ours_alone["median_s"], at_least=True))
                elif fw == "tf" and at.get((name, "tf", "-")) is not None and r["median_s"]:
                    goals.append(_goal("faster than TensorFlow", r, t, "x (TF / ours, NumPy round trips)",
                                       at[(name, "tf", "-")]["median_s"] / r["median_s"], at_least=True))
    for lat in res.get("latency", []):
        if lat["variant"] == "api":
            goals.append(_goal("16-element call (us)", lat, lat["target"], "us per call", lat["median_us"]))
    return goals


def format_goals(goals: list[dict], log2n: int = GOAL_LOG2N) -> str:
    lines = [f"goals (issue 13) at 2^{log2n} float32 through the public API:"]
    for g in goals:
        value = "     n/a" if g["value"] is None else f"{g['value']:8.2f}"
        lines.append(f"  {'met ' if g['met'] else 'MISS'} {g['goal']:24s} {g['case']:44s} {g['target']:6s} "
                     f"{value} {g['measure']} (goal {'>=' if g.get('at_least') else '<='} {g['limit']:g})")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="the file written by 'qdqc bench --json FILE'")
    ap.add_argument("--log2n", type=int, default=GOAL_LOG2N, help=f"the size to evaluate at (default {GOAL_LOG2N})")
    ap.add_argument("--strict", action="store_true", help="exit status 1 when a goal is missed")
    a = ap.parse_args(argv)
    try:
        with open(a.json) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_goals: error: {a.json}: {e}", file=sys.stderr)
        return 2
    sizes = res.get("config", {}).get("sizes_log2", [])
    if a.log2n not in sizes:
        print(f"check_goals: {a.json} has no results at 2^{a.log2n} (sizes measured: "
              f"{', '.join(map(str, sizes)) or 'none'}); only the per-call goal is checked", file=sys.stderr)
    goals = evaluate_goals(res, a.log2n)
    print(format_goals(goals, a.log2n))
    return 1 if a.strict and not all(g["met"] for g in goals) else 0


if __name__ == "__main__":
    sys.exit(main())
