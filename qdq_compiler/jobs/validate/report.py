"""The reports of a validation run: the text table, Markdown, the JSON report and JUnit XML.

Each says what it covered: per configuration the structural attributes (in its name), the numeric
attribute sets its calls ran and how many cases (TF goldens + random); per run the seed, the sizes, the
host CPU, the device behind each target, the IREE compiler and runtime versions and the TF version the
goldens came from (``coverage.entry_coverage``, ``environment.environment``)."""
from __future__ import annotations

import json
import textwrap
from dataclasses import asdict
from xml.sax.saxutils import escape, quoteattr

from .. import diverge
from ... import semantics as SEM
from .cells import Cell
from .coverage import attribute_values


def _rows(cells: list[Cell]) -> dict[str, dict[str, Cell]]:
    rows: dict[str, dict[str, Cell]] = {}
    for c in cells:
        rows.setdefault(c.entry, {})[c.target] = c
    return rows


LEGEND = ("A configuration is Op[structural attributes]:dtype:shape@semantics: 'dynamic' is one artifact for "
          "every size, 'static' one compiled for the exact shape; no suffix is tf-cpu (TF's CPU kernels), "
          + "; ".join(f"@{s.name} {s.reference}" for s in SEM.SEMANTICS.values() if s.name != SEM.DEFAULT)
          + ". A cell is 'exact' (every bit as the oracle), 'ulp N' (the largest distance "
          "in units in the last place; 4611686018427387904 = 2^62 means NaN in one answer only), 'ERROR', "
          "'compiled' (no device here) or 'skipped'; 'goldens' is how many reference golden cases (TF's, "
          "PyTorch's, ONNX's answers from qdq_compiler/goldens/) each cell of the row ran. A progress line's "
          "'(?x? view, long-rows)' is the canonical view of the data a call runs in, and the target's tuning for it: "
          "an artifact of its own.")


def goldens_text(by_t: dict[str, Cell], targets: list[str]) -> str:
    """The reference golden cases the cells of a row ran: one number, or one per target ('85/0/-') where they
    differ (a cell stopped by an error); '-' where none ran (skipped, compiled only)."""
    ran = {t: by_t[t].goldens for t in targets if t in by_t and by_t[t].status != "skipped"}
    if len(set(ran.values())) <= 1:
        return str(next(iter(ran.values()))) if ran else "-"
    return "/".join(str(ran[t]) if t in ran else "-" for t in targets)


def no_goldens(coverage) -> list[str]:
    """Why configurations ran no golden case: one line per reason, with how many configurations it covers."""
    why: dict[str, list[str]] = {}
    for c in coverage or []:
        if not c["goldens"]:
            why.setdefault(c.get("no_goldens") or "-", []).append(c["entry"])
    return [f"0 goldens in {len(names)} configuration{'' if len(names) == 1 else 's'} ({names[0]}"
            f"{', ...' if len(names) > 1 else ''}): {reason}" for reason, names in why.items()]


def format_table(cells: list[Cell], targets: list[str], coverage: list[dict] | None = None) -> str:
    """One line per configuration, its golden cases run, one column per target (what ``qdqc validate`` prints),
    why a configuration ran none (``coverage``), then the legend."""
    rows = _rows(cells)
    w = max([len(r) for r in rows] + [10])
    lines = [f"{'configuration':<{w}}  {'goldens':<7}  " + "  ".join(f"{t:<10}" for t in targets)]
    for r, by_t in rows.items():
        lines.append(f"{r:<{w}}  {goldens_text(by_t, targets):<7}  "
                     + "  ".join(f"{by_t[t].short() if t in by_t else '-':<10}" for t in targets))
    return "\n".join(lines + no_goldens(coverage) + [textwrap.fill(LEGEND, 110)])


def _run_facts(summary: dict) -> list[tuple[str, str]]:
    """(name, value) of what the run ran on and with: seed, sizes, host, devices, versions."""
    facts = [("seed", str(summary.get("seed", "-"))),
             ("sizes", ", ".join(map(str, summary.get("sizes", [])))),
             ("host CPU", summary.get("host_cpu") or "-")]
    facts += [(f"device {t}", name) for t, name in (summary.get("devices") or {}).items()]
    facts += [("IREE compiler", summary.get("iree_compiler") or summary.get("compiler") or "-"),
              ("IREE runtime", summary.get("iree_runtime") or "-")]
    if summary.get("golden_references") is None or any(r.startswith("TF ") for r in summary["golden_references"]):
        facts.append(("goldens from TF", summary.get("tf_version") or "-"))
    facts.append(("goldens from", ", ".join(summary.get("golden_references") or []) or "none"))
    return facts


def environment_line(summary: dict) -> str:
    """Two lines for the console: versions, host and seed; the device of each target that ran."""
    run = summary.get("targets", [])
    devices = "; ".join(f"{t}: {n}" for t, n in (summary.get("devices") or {}).items() if t in run)
    return (f"IREE {summary.get('iree_compiler') or summary.get('compiler')} (runtime {summary.get('iree_runtime')}); "
            f"goldens from {', '.join(summary.get('golden_references') or []) or 'none'}; "
            f"host CPU {summary.get('host_cpu')}; "
            f"seed {summary.get('seed')}\ndevices: {devices or 'none'}")


def _by_entry(coverage) -> dict[str, dict]:
    return {c["entry"]: c for c in coverage or []}


def _sets_text(cov: dict) -> str:
    """``num_bits=8 narrow_range=false: 85 golden + 2 random; ...``"""
    return "; ".join(f"{r['attrs']}: {r['golden']} golden + {r['random']} random" for r in cov["attribute_sets"])


def markdown(cells: list[Cell], targets: list[str], skipped: dict[str, str], summary: dict,
             coverage: list[dict] | None = None, divergence: dict | None = None) -> str:
    """The run's facts (seed, host, devices, versions), then the table with each configuration's numeric
    attributes and case counts, the skipped targets, each configuration's attribute sets and, when both
    semantics ran, where TF's two answers differ (``diverge.json_rows``)."""
    rows, cov = _rows(cells), _by_entry(coverage)
    out = ["# qdqc validate", "", f"Compiler: IREE {summary['compiler']}. {summary['text']}", "",
           "| run | |", "|---|---|"]
    out += [f"| {k} | {escape(v).replace('|', '/')} |" for k, v in _run_facts(summary)]
    out += ["", "| configuration | numeric attributes | cases (goldens + random) | goldens run | "
            + " | ".join(targets) + " |", "|---|---|---|---|" + "---|" * len(targets)]
    for r, by_t in rows.items():
        c = cov.get(r)
        attrs, cases = (attribute_values(c), f"{c['goldens']} + {c['random']}") if c else ("-", "-")
        out.append(f"| `{r}` | {attrs} | {cases} | {goldens_text(by_t, targets)} | "
                   + " | ".join(by_t[t].short() if t in by_t else "-" for t in targets) + " |")
    zeros = [f"- {escape(line)}" for line in no_goldens(coverage)]
    out += [""] + (zeros + [""] if zeros else []) + [LEGEND]
    for t, why in skipped.items():
        out.append(f"\n{t}: skipped ({why})")
    bad = [c for c in cells if not c.ok]
    if bad:
        out += ["", "## Mismatches and errors", ""]
        for c in bad:
            text, _, rerun = c.detail.partition(" Rerun: ")
            out.append(f"- `{c.entry}` on {c.target}{f' at {c.place}' if c.place else ''}: {escape(text)}"
                       + (f" Rerun: `{rerun}`" if rerun else ""))
    out += _placement(cells)
    if cov:
        out += ["", "## Numeric attribute sets per configuration", ""]
        out += [f"- `{name}`: {_sets_text(c)}" + (f" (goldens: `{c['golden_file']}`)" if c.get("golden_file") else "")
                for name, c in cov.items()]
    if divergence:
        out += ["", "## Where TF's two answers differ (tf-cpu against tf-xla)", "",
                f"{divergence['size']} random elements per call, seed {divergence['seed']}:", "",
                diverge.markdown(diverge.from_json(divergence)).rstrip()]
    return "\n".join(out) + "\n"


def _placement(cells: list[Cell]) -> list[str]:
    """Markdown: where the cells ran. A local run: one line per target and device. A cluster's: per worker and
    target its device and every configuration it ran, so that each cell names its host and device."""
    ran = [c for c in cells if c.worker]
    if not ran:
        return []
    groups: dict[tuple, list[str]] = {}
    for c in ran:
        groups.setdefault((c.host, c.worker, c.target, c.device), []).append(c.entry)
    out = ["", "## Where the cells ran", ""]
    for (host, worker, target, device), entries in groups.items():
        head = f"- {target} on host `{host}`" + (f", worker `{worker}`" if worker != "local" else "") + \
            f" ({escape(device or 'device unknown')}): {len(entries)} cell{'' if len(entries) == 1 else 's'}"
        out.append(head + (": " + ", ".join(f"`{e}`" for e in entries) if worker != "local" else ""))
    return out


def json_report(cells: list[Cell], summary: dict, coverage: list[dict] | None = None,
                environment: dict | None = None, divergence: dict | None = None) -> str:
    """``{"summary", "environment", "entries", "cells"}``: the run, where it ran, what each configuration
    covered (``coverage.entry_coverage``) and every field of every cell; ``"divergence"`` too when both
    semantics ran (``diverge.json_rows``)."""
    data = {"summary": summary, "environment": environment or {}, "entries": coverage or [],
            "cells": [asdict(c) for c in cells]}
    if divergence:
        data["divergence"] = divergence
    return json.dumps(data, indent=1)


def _properties(props: list[tuple[str, str]], indent: str) -> list[str]:
    if not props:
        return []
    return ([f"{indent}<properties>"]
            + [f"{indent}  <property name={quoteattr(k)} value={quoteattr(str(v))}/>" for k, v in props]
            + [f"{indent}</properties>"])


def junit(cells: list[Cell], skipped: dict[str, str], summary: dict | None = None,
          coverage: list[dict] | None = None, divergence: dict | None = None) -> str:
    """JUnit XML: a testcase per cell (ulp and error cells fail), and a skipped one per missing target. The
    suite's properties say where it ran (seed, host CPU, devices, IREE and TF versions); each testcase's
    its attributes and case counts. When both semantics ran, a second suite, ``qdqc-diverge``, under a
    ``<testsuites>`` root, says where TF's two answers differ (``diverge.junit_suite``)."""
    fails = sum(c.status in ("ulp", "error") for c in cells)
    skips = sum(c.status == "skipped" for c in cells) + len(skipped)
    cov = _by_entry(coverage)
    out = ['<?xml version="1.0" encoding="utf-8"?>',
           f'<testsuite name="qdqc-validate" tests="{len(cells) + len(skipped)}" failures="{fails}" '
           f'skipped="{skips}" errors="0">']
    out += _properties(_run_facts(summary) if summary else [], "  ")
    for c in cells:
        out.append(f'  <testcase classname={quoteattr(c.target)} name={quoteattr(c.entry)} time="{c.seconds:.3f}">')
        e = cov.get(c.entry)
        if e:
            structural = ",".join(f"{k}={v}" for k, v in e["structural"].items()) or "-"
            out += _properties([("structural attributes", structural), ("numeric attributes", attribute_values(e)),
                                ("goldens", e["goldens"]), ("random", e["random"]), ("cases run", c.cases),
                                ("goldens run", c.goldens), ("golden file", e.get("golden_file") or "none")]
                               + ([("no goldens", e["no_goldens"])] if e.get("no_goldens") else [])
                               + [("attribute sets", _sets_text(e))]
                               + [(k, getattr(c, k)) for k in ("host", "worker", "device") if getattr(c, k)], "    ")
        if c.status in ("ulp", "error"):
            out.append(f'    <failure message={quoteattr(c.short())}>{escape(c.detail)}</failure>')
        elif c.status == "skipped":
            out.append(f'    <skipped message={quoteattr(c.detail)}/>')
        out.append("  </testcase>")
    details = (summary or {}).get("skipped_details") or {}
    for t, why in skipped.items():
        body = f">{escape(details[t])}</skipped>" if t in details else "/>"
        out.append(f'  <testcase classname={quoteattr(t)} name="target"><skipped message={quoteattr(why)}{body}'
                   f'</testcase>')
    out.append("</testsuite>")
    if divergence:
        out = ([out[0], "<testsuites>"] + ["  " + line for line in out[1:]]
               + diverge.junit_suite(diverge.from_json(divergence), divergence["size"], divergence["seed"])
               + ["</testsuites>"])
    return "\n".join(out) + "\n"
