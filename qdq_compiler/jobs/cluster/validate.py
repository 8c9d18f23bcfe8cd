"""``qdqc validate --cluster``: the validation matrix on a Dask cluster, every device host at once.

Per configuration one task binds its calls and computes the oracle's answers (once, for every target); per
(configuration, target) one compiles its artifacts on any worker of the target's profile (engine.py) and
one runs the cell on a worker that advertises the target. Artifacts travel as bytes: into the driver's
cache as they arrive, and to the runner with its task. Dask re-runs the tasks of a worker that dies on
another; a target whose last worker left is a failed cell per configuration, naming the workers that left.
The cells come back in a local run's order, so the reports are a local run's, each cell naming its host,
worker and device.
"""
from __future__ import annotations

import sys
import time
import uuid
from collections import Counter

from ... import execute
from ... import targets as T
from ..validate.cells import Cell
from ..validate.coverage import entry_coverage
from ..validate.environment import environment
from ..validate.progress import count, progress as show, stage
from ..validate.selection import select_targets
from . import engine, tasks

ORPHAN_GRACE_S = 10.0   # a target with no live worker for this long fails its waiting cells (a nanny restarts in ~1 s)
ORPHAN_ENV = "QDQ_CLUSTER_ORPHAN_S"


def orphan_grace_s() -> float:
    """How long a target may have no live worker before its waiting cells fail: QDQ_CLUSTER_ORPHAN_S, else 10."""
    return engine.env_seconds(ORPHAN_ENV, ORPHAN_GRACE_S, zero_ok=True)


_POLL_S = 0.2


class ClusterExecutor(engine.Session):
    """The cluster behind ``address`` (``local:N`` starts one here): its workers, targets and placement."""

    def __init__(self, address: str, progress="off", min_workers: int = 1):
        super().__init__(address, min_workers)
        stage(f"cluster {address}: {count(len(self.workers), 'worker')} in {self.startup_s:.1f} s: "
              + "; ".join(f"{w['label']} runs {', '.join(w['runs']) or 'nothing'}" for w in self.workers.values()),
              progress)

    # -- the cluster's workers ------------------------------------------------------------------------
    def _profile(self, kind: str, target: str) -> str | None:
        """The resource the tasks of ``target`` ask for: the profile most workers offering it share."""
        held = Counter(r for w in self.workers.values() for r in w["resources"]
                       if r.startswith(f"{kind}:{target}:"))
        return min(held, key=lambda r: (-held[r], r)) if held else None

    def select_targets(self, names):
        """As a local run selects them (``validate.select_targets``), "runs here" meaning "a worker advertises it"."""
        return select_targets(names, self._availability)

    def _availability(self, target: str) -> tuple[bool, str]:
        if self._profile(engine.RUN, target):
            return True, ""
        return False, (f"no worker of the cluster {self.address} advertises it (workers: "
                       + "; ".join(f"{w['label']}: {', '.join(w['runs']) or 'none'}" for w in self.workers.values())
                       + ")")

    def environment(self, run_on, skipped) -> dict:
        """The local environment, with the devices the workers report and the cluster's workers."""
        env = environment([], skipped)
        for t in run_on:   # workers with the same device share one entry
            by_device: dict[str, list[str]] = {}
            for w in self.workers.values():
                if t in w["runs"]:
                    by_device.setdefault(w["devices"].get(t, "?"), []).append(w["label"])
            env["devices"][t] = "; ".join(f"{', '.join(labels)}: {d}" for d, labels in by_device.items())
        env["cluster"] = {"address": self.address, "startup_seconds": round(self.startup_s, 2),
                          "workers": [{"worker": w["name"], "host": w["host"], "runs": w["runs"],
                                       "devices": w["devices"]} for w in self.workers.values()]}
        return env

    # -- the run ----------------------------------------------------------------------------------------
    def cells(self, entries, run_on, compile_only, skipped, sizes, seed, progress):
        """(cells in a local run's order, coverage per configuration), from the cluster's tasks."""
        c, run_id = self.client, uuid.uuid4().hex[:8]
        pending: dict[str, tuple] = {}   # future key -> (kind, what, future); a finished one is dropped at once
        prepared = {}
        for e in entries:   # the cases stay on the workers (MBs each); the driver gathers their coverage
            prepared[e.name] = c.submit(tasks.prepare, e, sizes, seed, self.identity,
                                        key=f"prepare {e.name} {run_id}", priority=30)
            f = c.submit(tasks.coverage_of, prepared[e.name], key=f"coverage {e.name} {run_id}", priority=30)
            pending[f.key] = ("prepare", e.name, f)
        n_runs = 0
        for t in run_on + compile_only:
            build = {self._profile(engine.BUILD, t): 1}
            where = {self._profile(engine.RUN, t): 1, engine.DEVICE: 1} if t in run_on else None
            # a device that closes when idle (Limits.idle_device_s: lavapipe's keeps two threads polling while
            # open) runs its cells first, back to back, while the other workers take the rest
            first = T.get(t).limits.idle_device_s is not None
            for e in entries:
                if T.get(t).dtype_gap(e.dtype):
                    continue
                comp = c.submit(tasks.compile_pair, e, t, sizes, prepared[e.name], self.identity,
                                key=f"compile {t} {e.name} {run_id}", resources=build, priority=10)
                pending[comp.key] = ("compile", (e.name, t), comp)
                if where:
                    f = c.submit(tasks.run_pair, e, t, sizes, seed, prepared[e.name], comp, self.identity,
                                 key=f"run {t} {e.name} {run_id}", resources=where, priority=25 if first else 20)
                    pending[f.key] = ("run", (e.name, t), f)
                    n_runs += 1
        del prepared   # the scheduler keeps a result while a task waits for it; the driver holds only pending ones
        stage(f"running {count(n_runs, 'cell')} ({count(len(entries), 'configuration')} on "
              f"{', '.join(run_on) or 'no target'}) on {count(len(self.workers), 'worker')}; compiling on any worker "
              f"of a target's profile", progress)
        try:
            done = self._collect(pending, n_runs, progress)
        except BaseException:   # Ctrl-C included: nothing keeps running for a driver that left
            c.cancel([f for _, _, f in pending.values()], force=True)
            raise
        return self._ordered(entries, run_on, compile_only, skipped, done)

    def _collect(self, pending: dict, n_runs: int, progress) -> dict:
        """Each task's outcome as it completes (artifacts into the driver's cache, cells with their place);
        a finished future is dropped at once, so that workers free its result."""
        from distributed import as_completed
        out: dict = {"prepare": {}, "compile": {}, "run": {}}
        per_worker, compiles, t_start = Counter(), Counter(), time.perf_counter()
        ac = as_completed([f for _, _, f in pending.values()])
        orphaned_since: dict[str, float] = {}
        while not ac.is_empty():
            batch = ac.next_batch(block=False)
            if not batch:
                time.sleep(_POLL_S)
                self._fail_orphans(pending, orphaned_since)
                continue
            for f in batch:
                kind, k, _ = pending.pop(f.key)
                try:
                    value = f.result()
                except Exception as e:  # noqa: BLE001 - KilledWorker, a cancelled dependency, a task's bug
                    value = e
                f.release()
                if kind == "prepare":
                    out["prepare"][k] = value
                elif kind == "compile":
                    if isinstance(value, tasks.Compiled):
                        for item in value.shipped:
                            execute.install(*item, load=False)   # the driver's cache holds every artifact
                        compiles[f"{value.host}/{value.worker}"] += len(value.shipped) - value.from_cache
                        value.shipped = []
                    out["compile"][k] = value
                else:
                    cell = value if isinstance(value, Cell) else self._failed_run(k, value)
                    out["run"][k] = cell
                    per_worker[cell.place or "nowhere"] += 1
                    show(len(out["run"]), n_runs, f"{k[0]} on {k[1]} at {cell.place or 'no worker'}: {cell.short()} "
                         f"({count(cell.cases, 'case')}, {cell.seconds:.1f} s)" if progress == "lines"
                         else " ".join(f"{w}:{n}" for w, n in sorted(per_worker.items())), progress)
        if progress not in ("off", False, None):
            for w in sorted(set(per_worker) | set(compiles)):
                sys.stderr.write(f"  {w}: {count(per_worker[w], 'cell')} run, {count(compiles[w], 'artifact')} "
                                 f"compiled\n")
            sys.stderr.write(f"  {time.perf_counter() - t_start:.1f} s on the cluster\n")
        return out

    def _fail_orphans(self, pending: dict, orphaned_since: dict):
        """Cancel the waiting runs of a target that no live worker runs any more (after ORPHAN_GRACE_S): each
        becomes an error cell naming the workers that ran it (``_failed_run``)."""
        live = {r for w in self.client.scheduler_info()["workers"].values() for r in (w.get("resources") or {})}
        now, grace = time.monotonic(), orphan_grace_s()
        for t in {k[1] for kind, k, _ in pending.values() if kind == "run"}:
            if self._profile(engine.RUN, t) in live:
                orphaned_since.pop(t, None)
            elif now - orphaned_since.setdefault(t, now) >= grace:
                for kind, k, f in list(pending.values()):
                    if kind == "run" and k[1] == t:
                        f.cancel()

    def _failed_run(self, k, error) -> Cell:
        """The error cell of a run task that failed as a task: its worker died too often, a dependency failed,
        or it was cancelled because no worker runs its target any more."""
        entry, t = k
        if "CancelledError" in type(error).__name__:   # _fail_orphans cancelled it
            gone = ", ".join(w["label"] for w in self.workers.values() if t in w["runs"])
            why = f"no worker runs {t} any more (those that did left the cluster: {gone})"
        else:
            why = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
        return Cell(entry, t, "error", why)

    def _ordered(self, entries, run_on, compile_only, skipped, done):
        """The cells and coverage in a local run's order (validate.LocalExecutor)."""
        cells = []
        for t in compile_only:
            for e in entries:
                comp = done["compile"].get((e.name, t))
                if comp is None:
                    continue   # a dtype the target lacks: a local run lists nothing either
                err = comp.error if not isinstance(comp, BaseException) else f"{type(comp).__name__}: {comp}"
                cells.append(Cell(e.name, t, "error", err, host=getattr(comp, "host", ""),
                                  worker=getattr(comp, "worker", "")) if err
                             else Cell(e.name, t, "skipped", f"compiled; not run: {skipped[t]}"))
        coverage = []
        for e in entries:
            prep = done["prepare"].get(e.name)
            coverage.append(prep if isinstance(prep, dict) else entry_coverage(e, []))
            for t in run_on:
                cell = done["run"].get((e.name, t))
                comp = done["compile"].get((e.name, t))
                if comp is not None and not isinstance(comp, BaseException) and comp.error:
                    cell = Cell(e.name, t, "error", comp.error, host=comp.host, worker=comp.worker)
                cells.append(cell or Cell(e.name, t, "skipped", T.get(t).dtype_gap(e.dtype)))
        return cells, coverage
