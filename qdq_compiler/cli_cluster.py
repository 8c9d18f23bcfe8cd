"""``qdqc worker`` and the ``--cluster`` option of ``qdqc validate`` and ``qdqc build`` (jobs/cluster)."""
from __future__ import annotations

import os
import shlex
import sys

from .errors import QDQError

CLUSTER_HELP = ("a Dask scheduler's address (tcp://head:8786; workers: 'qdqc worker ADDRESS') to run on every "
                "worker of a lab at once, or local:N for N worker processes here (needs qdq-compiler[cluster])")


def add_cluster_options(p, what: str = "run on every worker of a lab at once"):
    p.add_argument("--cluster", help=CLUSTER_HELP.replace("run on every worker of a lab at once", what))
    p.add_argument("--min-workers", type=int, default=1,
                   help="with --cluster ADDRESS: wait until this many workers have joined (up to QDQ_CLUSTER_TIMEOUT "
                        "seconds, default 20) before starting (default 1)")


def cluster_address(text: str | None, min_workers: int = 1) -> str | None:
    """``--cluster``'s value, checked before anything starts (jobs/cluster/engine.parse_address)."""
    if min_workers < 1:
        raise QDQError(f"--min-workers {min_workers}: must be >= 1", arg="--min-workers")
    if text is None:
        if min_workers != 1:
            raise QDQError("--min-workers applies to --cluster ADDRESS, which is not given", arg="--min-workers")
        return None
    from .jobs.cluster.engine import parse_address
    parse_address(text)
    return text


def add_worker(add):
    p = add("worker", "serve a validation cluster: a Dask worker that advertises this host's targets", cmd_worker)
    p.add_argument("address", help="the scheduler's address, e.g. tcp://head:8786 (start it with 'dask scheduler')")
    p.add_argument("--targets", help="comma-separated targets to run for the cluster (default: every one that runs "
                                     "here, as 'qdqc targets' lists them)")
    p.add_argument("--name", help="this worker's name in reports (default: its address)")
    p.add_argument("--nthreads", type=int, default=None,
                   help="tasks at once, >= 1 (default: one per core); cells still run one at a time")
    p.add_argument("--print-command", action="store_true",
                   help="print Dask's own worker command with the resources filled in, and exit")


def cmd_worker(args):
    from .jobs.cluster import engine
    if args.nthreads is not None and args.nthreads < 1:
        raise QDQError(f"--nthreads {args.nthreads}: must be >= 1 (leave it out for one per core)", arg="--nthreads")
    kind, _ = engine.parse_address(args.address)
    if kind == "local":
        raise QDQError("qdqc worker ADDRESS: the address of a running scheduler ('dask scheduler' prints it); "
                       "local:N starts its own workers", arg="address")
    names = [t.strip() for t in args.targets.split(",") if t.strip()] if args.targets else None
    runs = engine.advertised_targets(names)
    cmd = engine.worker_command(args.address, names, args.name, args.nthreads)
    if args.print_command:
        print(shlex.join(cmd))
        return 0
    engine.require_distributed()
    print(f"qdqc worker: running {', '.join(runs) or 'no target (compiles only)'} for {args.address}",
          file=sys.stderr, flush=True)
    os.execv(cmd[0], cmd)
