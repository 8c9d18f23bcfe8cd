"""The reports of a validation run: the text table, Markdown, the JSON report and JUnit XML."""
from __future__ import annotations

import json
from dataclasses import asdict
from xml.sax.saxutils import escape, quoteattr

from .cells import Cell


def _rows(cells: list[Cell]) -> dict[str, dict[str, Cell]]:
    rows: dict[str, dict[str, Cell]] = {}
    for c in cells:
        rows.setdefault(c.entry, {})[c.target] = c
    return rows


def format_table(cells: list[Cell], targets: list[str]) -> str:
    """One line per configuration, one column per target (what ``qdqc validate`` prints)."""
    rows = _rows(cells)
    w = max([len(r) for r in rows] + [10])
    lines = [f"{'configuration':<{w}}  " + "  ".join(f"{t:<10}" for t in targets)]
    for r, by_t in rows.items():
        lines.append(f"{r:<{w}}  " + "  ".join(f"{by_t[t].short() if t in by_t else '-':<10}" for t in targets))
    return "\n".join(lines)


def markdown(cells: list[Cell], targets: list[str], skipped: dict[str, str], summary: dict) -> str:
    """The table as Markdown, with the compiler version, the summary line and the skipped targets."""
    rows = _rows(cells)
    out = ["# qdqc validate", "", f"Compiler: IREE {summary['compiler']}. {summary['text']}", ""]
    out.append("| configuration | " + " | ".join(targets) + " |")
    out.append("|---|" + "---|" * len(targets))
    for r, by_t in rows.items():
        out.append(f"| `{r}` | " + " | ".join(by_t[t].short() if t in by_t else "-" for t in targets) + " |")
    for t, why in skipped.items():
        out.append(f"\n{t}: skipped ({why})")
    return "\n".join(out) + "\n"


def json_report(cells: list[Cell], summary: dict) -> str:
    """``{"summary": ..., "cells": [...]}``, every field of every cell."""
    return json.dumps({"summary": summary, "cells": [asdict(c) for c in cells]}, indent=1)


def junit(cells: list[Cell], skipped: dict[str, str]) -> str:
    """JUnit XML: a testcase per cell (ulp and error cells fail), and a skipped one per missing target."""
    fails = sum(c.status in ("ulp", "error") for c in cells)
    skips = sum(c.status == "skipped" for c in cells) + len(skipped)
    out = ['<?xml version="1.0" encoding="utf-8"?>',
           f'<testsuite name="qdqc-validate" tests="{len(cells) + len(skipped)}" failures="{fails}" '
           f'skipped="{skips}" errors="0">']
    for c in cells:
        out.append(f'  <testcase classname={quoteattr(c.target)} name={quoteattr(c.entry)} time="{c.seconds:.3f}">')
        if c.status in ("ulp", "error"):
            out.append(f'    <failure message={quoteattr(c.short())}>{escape(c.detail)}</failure>')
        elif c.status == "skipped":
            out.append(f'    <skipped message={quoteattr(c.detail)}/>')
        out.append("  </testcase>")
    for t, why in skipped.items():
        out.append(f'  <testcase classname={quoteattr(t)} name="target"><skipped message={quoteattr(why)}/></testcase>')
    out.append("</testsuite>")
    return "\n".join(out) + "\n"
