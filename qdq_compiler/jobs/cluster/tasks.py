"""What a cluster's workers run: a configuration's cases with the oracle's answers (once per case), its
artifacts (compiled where the driver's placement says, shipped as bytes), and its cells on a device.

Each task first checks that the worker runs the driver's sources and IREE compiler (``engine.software_identity``):
a worker of another version would compute other programs or another oracle, so its tasks fail, naming it.
"""
from __future__ import annotations

import functools
import socket
import threading
import time
import warnings
from dataclasses import dataclass, field

from ... import compile as C
from ... import execute, oracle
from ...errors import QDQError, QDQWarning
from ..validate.cells import Case, Cell, bound_calls, run_cell
from ..validate.coverage import entry_coverage
from ..validate.inputs import _shape_for
from ..validate.matrix import MatrixEntry
from . import engine


CELL_TIMEOUT_ENV = "QDQ_CLUSTER_CELL_TIMEOUT"   # read on the worker: how long its device may take over a cell
DEFAULT_CELL_TIMEOUT_S = 900.0


@dataclass
class Prepared:
    """A configuration's bound calls with the oracle's answers, and what they cover (the report's)."""
    cases: list[Case]
    coverage: dict


@dataclass
class Compiled:
    """The artifacts of one configuration on one target, as ``execute.install`` takes them, or the first
    compile error; where they were built and how many came from that worker's cache."""
    shipped: list[tuple] = field(default_factory=list)
    error: str = ""
    host: str = ""
    worker: str = ""
    from_cache: int = 0


def where() -> tuple[str, str]:
    """(host name, worker name) of the worker running the current task: its ``--name``, else its address."""
    try:
        from distributed import get_worker
        w = get_worker()
        name = engine.worker_name(w.name, w.address)
    except (ImportError, ValueError):
        name = "driver"
    return socket.gethostname(), str(name)


def _check_identity(identity: dict):
    mine = engine.software_identity()
    if mine != identity:
        host, worker = where()
        diff = ", ".join(k for k in identity if identity[k] != mine.get(k))
        raise QDQError(f"worker {worker} on host {host} runs other {diff} than the driver (qdq_compiler sources "
                       f"{mine['sources'][:12]} against {identity['sources'][:12]}; {mine['compiler']} against "
                       f"{identity['compiler']}): install the driver's version there", arg="--cluster")


def prepare(entry: MatrixEntry, sizes, seed: int, identity: dict) -> Prepared:
    """``entry``'s calls bound as a local run binds them, each with the oracle's answer."""
    _check_identity(identity)
    cases = bound_calls(entry, sizes, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QDQWarning)
        for case in cases:
            case.want = oracle.compute(case.call)
    return Prepared(cases, entry_coverage(entry, cases))


def coverage_of(prepared: Prepared) -> dict:
    """What the driver needs of a prepared configuration (its report's coverage); the cases stay on the workers."""
    return prepared.coverage


def compile_pair(entry: MatrixEntry, target: str, sizes, prepared: Prepared, identity: dict) -> Compiled:
    """The artifacts a local run's ``precompile`` builds for ``entry`` on ``target``: the entry's own and each
    view or tuning its calls pick; the first failure is kept (an error cell), the rest still compile."""
    _check_identity(identity)
    cfgs = [execute.config_for_entry(entry, target, _shape_for(entry, max(sizes)) if entry.static else None)]
    if not entry.static:
        cfgs += [execute.config_for_call(c.call, target) for c in prepared.cases]
    host, worker = where()
    out = Compiled(host=host, worker=worker)
    for cfg in dict.fromkeys(cfgs):
        try:
            held = execute.in_process(cfg)
            art = execute.artifact_for(cfg)
        except QDQError as ex:
            out.error = out.error or " ".join(str(ex).split())[:400]
            continue
        out.from_cache += held or art.from_cache
        out.shipped.append(execute.shipped(art))
    return out


@functools.lru_cache(maxsize=None)
def _device(target: str) -> str:
    return engine.device_of(target)


def cell_timeout_s() -> float:
    """How long this worker's device may take over one cell: QDQ_CLUSTER_CELL_TIMEOUT seconds, else 900."""
    return engine.env_seconds(CELL_TIMEOUT_ENV, DEFAULT_CELL_TIMEOUT_S)


def _within(seconds: float, fn):
    """``fn()`` in a thread of its own: (True, its value) or, when it has not returned within ``seconds``,
    (False, None); its exception is raised here. A late answer counts as none: the waiting thread may get the GIL
    back only after fn has returned (a 1 us limit then passed a cell that took milliseconds)."""
    box: dict = {}

    def body():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e
    thread = threading.Thread(target=body, name="qdq-cell", daemon=True)
    t0 = time.perf_counter()
    thread.start()
    thread.join(seconds)
    if thread.is_alive() or time.perf_counter() - t0 > seconds:
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box["value"]


def _restart_worker(reason: str):
    """Retire this worker once the current result is out (the scheduler moves its data elsewhere); its nanny
    starts a fresh process. A device that hung keeps its thread; only a new process frees it."""
    from distributed import get_worker
    w = get_worker()
    w.loop.call_later(1.0, w.close_gracefully, restart=True, reason=reason)


def run_pair(entry: MatrixEntry, target: str, sizes, seed: int, prepared: Prepared, compiled: Compiled,
             identity: dict) -> Cell:
    """``entry`` on ``target`` on this worker's device, against the oracle's answers it came with. Whatever
    fails here (the device, a bug) is an error cell that names the host and worker, never a lost cell; a
    device that does not answer within ``cell_timeout_s`` fails its cell and the worker restarts."""
    t0 = time.perf_counter()
    host, worker = where()
    if compiled.error:   # the compile failure is the cell (as in a local run); nothing to run
        return Cell(entry.name, target, "error", compiled.error, host=compiled.host, worker=compiled.worker)
    device = ""
    try:
        _check_identity(identity)
        for item in compiled.shipped:
            execute.install(*item)
        device = _device(target)
        limit = cell_timeout_s()
        answered, cell = _within(limit, lambda: run_cell(entry, target, sizes, seed, calls=prepared.cases))
        if not answered:
            cell = Cell(entry.name, target, "error", f"no answer from {device} after {limit:g} s "
                        f"({CELL_TIMEOUT_ENV}); worker {worker} restarts", seconds=time.perf_counter() - t0)
            _restart_worker(f"{target} did not answer within {limit:g} s")
    except Exception as e:  # noqa: BLE001 - reported as the cell's error, with where it happened
        cell = Cell(entry.name, target, "error", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}",
                    seconds=time.perf_counter() - t0)
    cell.host, cell.worker, cell.device = host, worker, device
    return cell


def compile_module(mlir: str, flags: tuple[str, ...], what: str, info: dict | None, use_cache: bool,
                   identity: dict) -> tuple[bytes, bool]:
    """A bundle's artifact: (bytes, whether this worker's cache had it); explicit flags, so any host builds
    the same bytes."""
    _check_identity(identity)
    if not use_cache:
        return C.compile_mlir(mlir, flags, what=what), False
    key = C.cache_key(mlir, flags)
    had = C.read_verified(C.cache_dir() / f"{key}.vmfb", C.cache_dir() / f"{key}.json") is not None
    return C.cached_compile(mlir, flags, what=what, info=info)[1], had
