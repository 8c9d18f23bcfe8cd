"""Check a ``qdqc bench`` JSON file against the performance goals of issue 7 (internal; not part of qdqc).

    qdqc bench --json bench.json                      # the default sizes include 2^24
    python benchmarks/check_goals.py bench.json       # one line per goal: met / MISS
    python benchmarks/check_goals.py bench.json --strict   # exit status 1 when a goal is missed
    python benchmarks/check_goals.py bench.json --log2n 22 # evaluate at another measured size

The goals, at 2^24 float32 elements through the public NumPy API (the ``api`` variant, per target):

    per-tensor given range        <= 1.3 x the copy of its data
    per-tensor range from data    <= 2.0 x copy
    per-channel vs per-tensor     <= 1.3 x the per-tensor case it is compared to (``compare_to``)
    gradient                      <= 1.3 x the copy of its inputs
    16-element call (us)          <= 30 us per call (the ``latency`` block)

Standard library only: it reads the JSON and nothing of the package. Exit status 0 (1 with ``--strict``
and a goal missed; 2 when the file cannot be read).
"""
from __future__ import annotations

import argparse
import json
import sys

GOAL_LOG2N = 24
GOALS = {"per-tensor given range": 1.3, "per-tensor range from data": 2.0, "per-channel vs per-tensor": 1.3,
         "gradient": 1.3, "16-element call (us)": 30.0}
# The per-tensor case each per-channel case is compared to, for JSON written before rows carried ``compare_to``.
COMPARE_TO = {"FakeQuantWithMinMaxVarsPerChannel": "FakeQuantWithMinMaxVars",
              "QuantizeAndDequantizeV4[range_given,axis]": "QuantizeAndDequantizeV4[range_given]",
              "QuantizeAndDequantizeV4[from data,axis]": "QuantizeAndDequantizeV4[from data]"}


def evaluate_goals(res: dict, log2n: int = GOAL_LOG2N) -> list[dict]:
    """The goals, from the api rows at 2^log2n (each target), and the 16-element call."""
    rows = res.get("results", [])
    goals = []
    at = {(r["case"], r["variant"], r["target"]): r for r in rows if r["log2n"] == log2n}
    targets = sorted({r["target"] for r in rows if r["variant"] == "api"})
    for t in targets:
        for (name, variant, target), r in sorted(at.items()):
            if variant != "api" or target != t:
                continue
            kind = r.get("kind")
            if kind == "gradient":
                goal, what, ratio = "gradient", "x copy of its inputs", r["ratio_to_copy"]
            elif kind == "per-channel":
                compare_to = r.get("compare_to", COMPARE_TO.get(name))
                base = at.get((compare_to, "api", t))
                if base is None:
                    continue
                goal, what = "per-channel vs per-tensor", f"x {compare_to}"
                ratio = r["median_s"] / base["median_s"]
            elif r.get("range_from") == "data":
                goal, what, ratio = "per-tensor range from data", "x copy", r["ratio_to_copy"]
            else:
                goal, what, ratio = "per-tensor given range", "x copy", r["ratio_to_copy"]
            goals.append({"goal": goal, "case": name, "target": t, "measure": what, "value": ratio,
                          "limit": GOALS[goal], "met": ratio is not None and ratio <= GOALS[goal]})
    for lat in res.get("latency", []):
        if lat["variant"] == "api":
            limit = GOALS["16-element call (us)"]
            goals.append({"goal": "16-element call (us)", "case": lat["case"], "target": lat["target"],
                          "measure": "us per call", "value": lat["median_us"], "limit": limit,
                          "met": lat["median_us"] <= limit})
    return goals


def format_goals(goals: list[dict], log2n: int = GOAL_LOG2N) -> str:
    lines = [f"goals (issue 7) at 2^{log2n} float32 through the public API:"]
    for g in goals:
        value = "     n/a" if g["value"] is None else f"{g['value']:8.2f}"
        lines.append(f"  {'met ' if g['met'] else 'MISS'} {g['goal']:28s} {g['case']:44s} {g['target']:6s} "
                     f"{value} {g['measure']} (goal <= {g['limit']:g})")
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
