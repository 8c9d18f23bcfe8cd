"""A whole validation run: pick the targets, compile in parallel, run every cell, print and write the reports."""
from __future__ import annotations

import os
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from ... import dtypes as DT
from ... import semantics as SEM
from ... import execute, goldens, together
from ... import ops as op_registry
from ... import targets as T
from .. import diverge
from ...compile import compiler_version
from ...errors import QDQError
from ...outputs import write_atomic
from . import report
from .cells import Cell, bound_calls, run_cell
from .coverage import entry_coverage
from .environment import device_name, environment, golden_references, goldens_tf_versions, tf_version_text
from .inputs import _shape_for
from .matrix import build_matrix, shard as shard_of
from .selection import select_targets
from .progress import count as _count, progress as _progress, stage as _stage

DEFAULT_SIZES = (1000, 70000)  # 70000 > 65535: the lavapipe loop limit for reductions


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
    # Many configurations to a module first (iree-compile's cost is mostly per module); what does not compile
    # so is compiled alone below, and reports its own error.
    together.compile_together([cfg for _, _, cfg in work], jobs=jobs)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for (e, t, cfg), how in zip(work, pool.map(one, work)):
            done += 1
            view = "" if cfg == execute.config_for_entry(e, t, cfg.shape if e.static else None) else \
                f" ({'x'.join('?' if d is None else str(d) for d in cfg.shape)} view"  \
                f"{', ' + cfg.tuning if cfg.tuning else ''})"
            _progress(done, len(work), f"{how} {e.name}{view} for {t}", progress)
    return errors


def _write(path: str, text: str):
    write_atomic(path, text)


class LocalExecutor:
    """A run in this process: compiles in parallel (iree-compile runs as a subprocess), then every cell on this
    host's devices, one at a time. ``jobs/cluster``'s ClusterExecutor does the same on a Dask cluster."""

    def __init__(self, jobs: int = 0):
        self.jobs = jobs or os.cpu_count() or 1

    @staticmethod
    def select_targets(names):
        return select_targets(names)

    def cells(self, entries, run_on, compile_only, skipped, sizes, seed, progress):
        """(cells in the report's order, coverage per configuration)."""
        # bound once, before compiling: the oracle's answers are reused on every target, and the views the
        # calls pick tell precompile which artifacts they need
        _stage(f"preparing the calls of {_count(len(entries), 'configuration')} (goldens and random inputs, bound once "
               f"for every target)", progress)
        cases = {e.name: bound_calls(e, sizes, seed) for e in entries}
        compile_errors = precompile(entries, run_on + compile_only, sizes, self.jobs, progress, cases)
        cells = []
        for t in compile_only:  # compiled, not run: the report says so per configuration
            for e in entries:
                if (e.name, t) in compile_errors:
                    cells.append(Cell(e.name, t, "error", compile_errors[(e.name, t)]))
                elif not T.get(t).dtype_gap(e.dtype):
                    cells.append(Cell(e.name, t, "skipped", f"compiled; not run: {skipped[t]}"))
        first, total = len(cells), len(entries) * len(run_on)
        _stage(f"running {_count(total, 'cell')} ({_count(len(entries), 'configuration')} on "
               f"{', '.join(run_on) or 'no target'}) against the oracle", progress)
        coverage, host = [], socket.gethostname()
        devices = {t: device_name(t) for t in run_on}
        for e in entries:
            coverage.append(entry_coverage(e, cases[e.name]))
            for t in run_on:
                if (e.name, t) in compile_errors:
                    cells.append(Cell(e.name, t, "error", compile_errors[(e.name, t)]))
                else:
                    cells.append(run_cell(e, t, sizes, seed, calls=cases[e.name]))
                c = cells[-1]
                c.host, c.worker, c.device = host, "local", devices[t]
                _progress(len(cells) - first, total, f"{e.name} on {t}: {c.short()} ({_count(c.cases, 'case')}, "
                          f"{c.seconds:.1f} s)" if progress == "lines" else e.name, progress)
        return cells, coverage

    @staticmethod
    def environment(run_on, skipped) -> dict:
        return environment(run_on, skipped)

    def close(self):
        pass


def run_validation(ops: list[str] | None = None, targets: list[str] | None = None,
                   dtypes: list[str] | None = None, sizes=DEFAULT_SIZES, shard: tuple[int, int] | None = None,
                   jobs: int = 0, seed: int = 0, progress: str = "off", json_path: str | None = None,
                   junit_path: str | None = None, markdown_path: str | None = None,
                   semantics=(SEM.DEFAULT,), cluster: str | None = None, min_workers: int = 1) -> int:
    """Validate the matrix of ``ops`` x ``dtypes`` (default: all) on ``targets``; the exit status (1: a mismatch).

    Prints the run's versions, host and devices, the table, the mismatches and a summary line on stdout
    (skipped targets on stderr, and the progress there: ``progress`` is one of progress.PROGRESS_MODES);
    writes the JSON report, JUnit XML and Markdown (each with what every configuration covered) to the paths given.
    ``shard`` (i, n) runs the i-th of n slices of the matrix; ``jobs`` parallel compiles (0: one per core).
    ``cluster``: a Dask scheduler's address, or ``local:N`` (N worker processes here), to run the matrix on
    every worker's targets at once (``jobs/cluster``); the same report, each cell naming its host and worker;
    ``min_workers``: how many workers to wait for (QDQ_CLUSTER_TIMEOUT, default 20 s) before starting.
    """
    t0 = time.perf_counter()
    for o in ops or []:
        op_registry.get(o)  # an unknown op is a QDQError listing the known ones
    dtypes = [DT.get(d).name for d in dtypes] if dtypes else None
    sizes = tuple(sizes)
    semantics = tuple(SEM.get(s).name for s in semantics)
    entries = build_matrix(ops, dtypes, semantics)
    if not entries:
        raise QDQError(f"no configuration to validate: {_why_empty(ops, dtypes, semantics)}", arg="--dtypes")
    if shard:
        entries = shard_of(entries, *shard)
        if not entries:
            raise QDQError(f"shard {shard[0]}/{shard[1]} is empty: the matrix has "
                           f"{_count(len(build_matrix(ops, dtypes, semantics)), 'configuration')}", arg="--shard")
    goldens.require((e.op, e.semantics) for e in entries)   # before compiling: a missing file, named
    if cluster:
        from ..cluster.validate import ClusterExecutor
        executor = ClusterExecutor(cluster, progress, min_workers)
    else:
        executor = LocalExecutor(jobs)
    try:
        run_on, skipped, compile_only = executor.select_targets(targets)
        cells, coverage = executor.cells(entries, run_on, compile_only, skipped, sizes, seed, progress)
        env = executor.environment(run_on, skipped)
    finally:
        executor.close()
    env["goldens_tf_version"] = goldens_tf_versions((e.op, e.semantics) for e in entries)
    for t, why in skipped.items():
        print(f"{t}: skipped ({why})", file=sys.stderr)
    bad = [c for c in cells if not c.ok]
    elapsed = time.perf_counter() - t0
    exact = sum(c.status == "exact" for c in cells)
    compiled = sum(c.short() == "compiled" for c in cells)
    compared = sum(c.status != "skipped" for c in cells)   # run against the oracle (exact, ulp or error)
    goldens_run = sum(c.goldens for c in cells)
    text = (f"{exact} of {_count(compared, 'cell')} exact ({_count(len(entries), 'configuration')} x "
            f"{_count(len(run_on), 'target')}: {', '.join(run_on) or 'none'}; sizes {', '.join(map(str, sizes))}"
            f"; {_count(goldens_run, 'golden case')} run)"
            + (f"; {compiled} compiled, not run: {', '.join(compile_only)}" if compile_only else "")
            + (f"; {len(cells) - compared - compiled} skipped (a dtype the target lacks)"
               if len(cells) - compared - compiled else "")
            + (f"; targets skipped: {', '.join(skipped)}" if skipped else "") + f"; {elapsed:.1f} s")
    summary = {"compiler": compiler_version(), "targets": run_on, "skipped_targets": skipped,
               "semantics": list(semantics),
               "configurations": len(entries), "cells": len(cells), "compared": compared, "exact": exact,
               "compiled_only": compiled, "goldens_run": goldens_run,
               "failed": len(bad), "seconds": round(elapsed, 2), "text": text, "seed": seed, "sizes": list(sizes),
               "known_deviations": {n: T.get(n).deviation for n in run_on if T.get(n).deviation},
               "host_cpu": env["host_cpu"], "devices": env["devices"], "iree_compiler": env["iree_compiler"],
               "iree_runtime": env["iree_runtime"], "tf_version": tf_version_text(env["goldens_tf_version"]),
               "golden_references": golden_references((e.op, e.semantics) for e in entries),
               "skipped_details": env.pop("skipped_details"), **({"cluster": env["cluster"]} if "cluster" in env else {})}
    divergence = None
    if set(diverge.SEMANTICS) <= set(semantics):  # both answers validated: where they differ, on the same inputs
        _stage("comparing TF's two answers (tf-cpu, tf-xla) on the same inputs", progress)
        divergence = diverge.json_rows(diverge.diverge(ops, dtypes, max(sizes), seed), max(sizes), seed)
    print(report.environment_line(summary))
    print(report.format_table(cells, run_on + compile_only, coverage))
    for c in bad:
        print(f"MISMATCH {c.target} {c.entry}{f' at {c.place}' if c.place else ''}: {c.detail}")
    if divergence:
        print(f"{divergence['total']} (tf-cpu against tf-xla; per configuration in the reports and 'qdqc diverge')")
    print(text)
    if not compared:
        print(f"nothing was compared with the oracle: no selected target runs {'on the cluster' if cluster else 'here'} "
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
