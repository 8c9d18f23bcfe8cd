"""A whole validation run: pick the targets, compile in parallel, run every cell, print and write the reports."""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from ... import dtypes as DT
from ... import semantics as SEM
from ... import execute
from ... import ops as op_registry
from ... import targets as T
from .. import diverge
from ...compile import compiler_version
from ...errors import QDQError
from ...outputs import write_atomic
from . import report
from .cells import Cell, bound_calls, run_cell
from .coverage import entry_coverage
from .environment import environment, golden_references, goldens_tf_versions, tf_version_text
from .inputs import _shape_for
from .matrix import build_matrix, shard as shard_of

DEFAULT_SIZES = (1000, 70000)  # 70000 > 65535: the lavapipe loop limit for reductions


PROGRESS_MODES = ("bar", "lines", "off")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


_stage_started = [time.perf_counter()]   # when the current stage began (_stage), for the ETA


def _eta(done: int, total: int) -> str:
    """' ETA 3m 10s' from the stage's pace so far ('' at the start and the end)."""
    if not 0 < done < total:
        return ""
    left = (time.perf_counter() - _stage_started[0]) / done * (total - done)
    return f" ETA {int(left // 60)}m {int(left % 60):02d}s" if left >= 60 else f" ETA {int(left)}s"


def _progress(done: int, total: int, label: str, mode):
    """Progress on stderr: a bar redrawn in place on a terminal ("bar"), one flushed line per step where
    nobody redraws (CI logs, ``| tee``: "lines"), or nothing ("off"; False/True mean off/bar); each with
    the time the stage has left at its pace so far."""
    mode = {False: "off", True: "bar", None: "off"}.get(mode, mode)
    if mode == "off":
        return
    if mode == "lines":
        sys.stderr.write(f"[{done}/{total}{_eta(done, total)}] {label}\n")
        sys.stderr.flush()
        return
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}{_eta(done, total)} {label[:60]:<60}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _stage(text: str, mode):
    """A stage heading: a line on stderr unless progress is off."""
    _stage_started[0] = time.perf_counter()
    if mode not in ("off", False, None):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def precompile(entries, targets, sizes, jobs: int, progress: str, cases: dict | None = None):
    """Compile every artifact the run will use, in parallel (iree-compile runs as a subprocess): per (entry,
    target) the entry's own (dynamic, or its static shape) and, from its bound ``cases`` (entry name ->
    cells.Case list), every other view or tuning its calls pick (config.canonical_view), so that none is
    compiled one at a time while the cells run."""
    work, seen = [], set()
    for e in entries:
        for t in targets:
            if T.get(t).dtype_gap(e.dtype):
                continue  # reported as a skip with the reason (cells.run_cell)
            cfgs = [execute.config_for_entry(e, t, _shape_for(e, max(sizes)) if e.static else None)]
            if not e.static:
                cfgs += [execute.config_for_call(c.call, t) for c in (cases or {}).get(e.name, [])]
            for cfg in dict.fromkeys(cfgs):
                if (cfg, t) not in seen:
                    seen.add((cfg, t))
                    work.append((e, t, cfg))
    errors = {}

    def one(item):
        e, t, cfg = item
        try:
            return "loaded from the cache" if execute.artifact_for(cfg).from_cache else "compiled"
        except QDQError as ex:
            errors.setdefault((e.name, t), " ".join(str(ex).split())[:400])
            return "failed to compile"

    done = 0
    _stage(f"compiling {_count(len(work), 'artifact')} ({_count(jobs, 'parallel job')}; cached ones load at once)",
           progress)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for (e, t, cfg), how in zip(work, pool.map(one, work)):
            done += 1
            view = "" if cfg == execute.config_for_entry(e, t, cfg.shape if e.static else None) else \
                f" ({'x'.join('?' if d is None else str(d) for d in cfg.shape)} view"  \
                f"{', ' + cfg.tuning if cfg.tuning else ''})"
            _progress(done, len(work), f"{how} {e.name}{view} for {t}", progress)
    return errors


def select_targets(names: list[str] | None) -> tuple[list[str], dict[str, str], list[str]]:
    """The targets to run, those skipped with their reasons, and the skipped ones named explicitly
    (these are still compiled, so a missing device does not hide a compile failure).

    ``names`` None (or empty): the default target, cpu (the quick start: 142 artifacts, about a minute
    cold on 2 cores). ``["all"]``: cpu and every other target, the unavailable ones skipped and not
    compiled.
    """
    if not names:
        names = ["cpu"]
    every = list(names) == ["all"]
    if "all" in names and not every:
        raise QDQError(f"targets={','.join(names)!r}: 'all' stands alone (cpu and every other available "
                       f"target), or name targets: {', '.join(T.TARGETS)}", arg="targets")
    names = ["cpu"] + [n for n in T.TARGETS if n not in ("cpu", "cpu-host")] if every else list(names)
    run, skipped, compile_only = [], {}, []
    for n in names:
        t = T.get(n)
        ok, why = t.availability()
        if ok:
            run.append(t.name)
        else:
            skipped[t.name] = why
            if not every:
                compile_only.append(t.name)
    return run, skipped, compile_only


def _write(path: str, text: str):
    write_atomic(path, text)


def run_validation(ops: list[str] | None = None, targets: list[str] | None = None,
                   dtypes: list[str] | None = None, sizes=DEFAULT_SIZES, shard: tuple[int, int] | None = None,
                   jobs: int = 0, seed: int = 0, progress: str = "off", json_path: str | None = None,
                   junit_path: str | None = None, markdown_path: str | None = None,
                   semantics=(SEM.DEFAULT,)) -> int:
    """Validate the matrix of ``ops`` x ``dtypes`` (default: all) on ``targets``; the exit status (1: a mismatch).

    Prints the run's versions, host and devices, the table, the mismatches and a summary line on stdout
    (skipped targets on stderr, and the progress there: ``progress`` is one of PROGRESS_MODES); writes the
    JSON report, JUnit XML and Markdown (each with what every configuration covered) to the paths given.
    ``shard`` (i, n) runs the i-th of n slices of the matrix; ``jobs`` parallel compiles (0: one per core).
    """
    t0 = time.perf_counter()
    for o in ops or []:
        op_registry.get(o)  # an unknown op is a QDQError listing the known ones
    dtypes = [DT.get(d).name for d in dtypes] if dtypes else None
    sizes = tuple(sizes)
    run_on, skipped, compile_only = select_targets(targets)
    semantics = tuple(SEM.get(s).name for s in semantics)
    entries = build_matrix(ops, dtypes, semantics)
    if not entries:
        raise QDQError(f"no configuration to validate: {_why_empty(ops, dtypes, semantics)}", arg="--dtypes")
    if shard:
        entries = shard_of(entries, *shard)
        if not entries:
            raise QDQError(f"shard {shard[0]}/{shard[1]} is empty: the matrix has "
                           f"{_count(len(build_matrix(ops, dtypes, semantics)), 'configuration')}", arg="--shard")
    # bound once, before compiling: the oracle's answers are reused on every target, and the views the
    # calls pick tell precompile which artifacts they need
    cases = {e.name: bound_calls(e, sizes, seed) for e in entries}
    compile_errors = precompile(entries, run_on + compile_only, sizes, jobs or os.cpu_count() or 1, progress, cases)
    cells = []
    for t in compile_only:  # compiled, not run: the report says so per configuration
        for e in entries:
            if (e.name, t) in compile_errors:
                cells.append(Cell(e.name, t, "error", compile_errors[(e.name, t)]))
            elif not T.get(t).dtype_gap(e.dtype):
                cells.append(Cell(e.name, t, "skipped", f"compiled; not run: {skipped[t]}"))
    first, total = len(cells), len(entries) * len(run_on)
    _stage(f"running {_count(len(entries) * len(run_on), 'cell')} ({_count(len(entries), 'configuration')} on "
           f"{', '.join(run_on) or 'no target'}) against the oracle", progress)
    coverage = []
    for e in entries:
        coverage.append(entry_coverage(e, cases[e.name]))
        for t in run_on:
            if (e.name, t) in compile_errors:
                cells.append(Cell(e.name, t, "error", compile_errors[(e.name, t)]))
            else:
                cells.append(run_cell(e, t, sizes, seed, calls=cases[e.name]))
            c = cells[-1]
            _progress(len(cells) - first, total, f"{e.name} on {t}: {c.short()} ({_count(c.cases, 'case')}, "
                      f"{c.seconds:.1f} s)" if progress == "lines" else e.name, progress)
    env = environment(run_on, skipped)
    env["goldens_tf_version"] = goldens_tf_versions((e.op, e.semantics) for e in entries)
    for t, why in skipped.items():
        print(f"{t}: skipped ({why})", file=sys.stderr)
    bad = [c for c in cells if not c.ok]
    elapsed = time.perf_counter() - t0
    exact = sum(c.status == "exact" for c in cells)
    compiled = sum(c.short() == "compiled" for c in cells)
    compared = sum(c.status != "skipped" for c in cells)   # run against the oracle (exact, ulp or error)
    text = (f"{exact} of {_count(compared, 'cell')} exact ({_count(len(entries), 'configuration')} x "
            f"{_count(len(run_on), 'target')}: {', '.join(run_on) or 'none'}; sizes {', '.join(map(str, sizes))})"
            + (f"; {compiled} compiled, not run: {', '.join(compile_only)}" if compile_only else "")
            + (f"; {len(cells) - compared - compiled} skipped (a dtype the target lacks)"
               if len(cells) - compared - compiled else "")
            + (f"; targets skipped: {', '.join(skipped)}" if skipped else "") + f"; {elapsed:.1f} s")
    summary = {"compiler": compiler_version(), "targets": run_on, "skipped_targets": skipped,
               "semantics": list(semantics),
               "configurations": len(entries), "cells": len(cells), "compared": compared, "exact": exact,
               "compiled_only": compiled,
               "failed": len(bad), "seconds": round(elapsed, 2), "text": text, "seed": seed, "sizes": list(sizes),
               "known_deviations": {n: T.get(n).deviation for n in run_on if T.get(n).deviation},
               "host_cpu": env["host_cpu"], "devices": env["devices"], "iree_compiler": env["iree_compiler"],
               "iree_runtime": env["iree_runtime"], "tf_version": tf_version_text(env["goldens_tf_version"]),
               "golden_references": golden_references((e.op, e.semantics) for e in entries),
               "skipped_details": env.pop("skipped_details")}
    divergence = None
    if set(diverge.SEMANTICS) <= set(semantics):  # both answers validated: where they differ, on the same inputs
        _stage("comparing TF's two answers (tf-cpu, tf-xla) on the same inputs", progress)
        divergence = diverge.json_rows(diverge.diverge(ops, dtypes, max(sizes), seed), max(sizes), seed)
    print(report.environment_line(summary))
    print(report.format_table(cells, run_on + compile_only))
    for c in bad:
        print(f"MISMATCH {c.target} {c.entry}: {c.detail}")
    if divergence:
        print(f"{divergence['total']} (tf-cpu against tf-xla; per configuration in the reports and 'qdqc diverge')")
    print(text)
    if not compared:
        print("nothing was compared with the oracle: no selected target runs here "
              f"({'; '.join(f'{t}: {why}' for t, why in skipped.items()) or 'none selected'})", file=sys.stderr)
    if json_path:
        _write(json_path, report.json_report(cells, summary, coverage, env, divergence))
    if junit_path:
        _write(junit_path, report.junit(cells, skipped, summary, coverage, divergence))
    if markdown_path:
        _write(markdown_path, report.markdown(cells, run_on + compile_only, skipped, summary, coverage, divergence))
    return 1 if bad or not compared else 0


def _why_empty(ops, dtypes, semantics) -> str:
    """Why --ops/--dtypes/--semantics select no configuration: what each op takes under each semantics."""
    parts = []
    for name in ops or op_registry.OPS:
        spec = op_registry.get(name)
        own = [s for s in semantics if SEM.get(s).namespace == spec.namespace]   # another namespace's: silent
        for sem in own or semantics:
            why = (spec.family.rules(sem).unsupported(spec) if spec.family.answers(sem)
                   else f"{name} has no rules under {sem}")
            parts.append(f"{name} under {sem}: {why}" if why else
                         f"{name} takes {', '.join(spec.family.rules(sem).dtypes)} under {sem}")
    asked = f" (asked for {', '.join(dtypes)})" if dtypes else ""
    return "; ".join(parts) + asked
