"""``qdqc worker`` and the ``--cluster`` option of ``qdqc validate`` and ``qdqc build`` (jobs/cluster)."""
from __future__ import annotations

import os
import shlex
import sys

from .errors import QDQError

CLUSTER_HELP = ("a Dask scheduler's address (tls://head:8786 with the --tls-* files; plaintext tcp:// only to "
                "127.0.0.1 or with --insecure; workers: 'qdqc worker ADDRESS') to run on every worker of a lab at "
                "once, or local:N for N worker processes here (needs qdq-compiler[cluster])")
TLS_ARGS = {"ca_file": "tls_ca_file", "cert": "tls_cert", "key": "tls_key"}


def add_tls_options(p, role: str):
    """Dask's own TLS flags (``dask scheduler/worker --help``), and --insecure; a flag wins over Dask's config."""
    p.add_argument("--tls-ca-file", metavar="PATH",
                   help="with a tls:// address: the cluster's own CA certificate (PEM); only certificates it signed "
                        "get in, both ways (default: Dask's config distributed.comm.tls.ca-file)")
    p.add_argument("--tls-cert", metavar="PATH", help=f"with a tls:// address: this {role}'s certificate (PEM), signed "
                   f"by that CA (default: Dask's config distributed.comm.tls.{role}.cert)")
    p.add_argument("--tls-key", metavar="PATH", help=f"with a tls:// address: its private key (PEM) (default: Dask's "
                   f"config distributed.comm.tls.{role}.key, else the --tls-cert file holds it)")
    p.add_argument("--insecure", action="store_true",
                   help="allow a plaintext (tcp://) scheduler off this host: anyone who can reach the scheduler then "
                        "runs code on every worker; only on a network you trust")


def tls_flags(args) -> dict:
    """The --tls-* flags given, by engine.TLS_FLAGS key."""
    return {k: getattr(args, a) for k, a in TLS_ARGS.items() if getattr(args, a)}


def add_cluster_options(p, what: str = "run on every worker of a lab at once"):
    p.add_argument("--cluster", help=CLUSTER_HELP.replace("run on every worker of a lab at once", what))
    p.add_argument("--min-workers", type=int, default=1,
                   help="with --cluster ADDRESS: wait until this many workers have joined (up to QDQ_CLUSTER_TIMEOUT "
                        "seconds, default 20) before starting (default 1)")
    add_tls_options(p, "client")


def cluster_address(args):
    """``--cluster``'s value with its TLS files and --insecure (an engine.Address), checked before anything starts:
    plaintext off this host is refused, TLS needs its files (jobs/cluster/engine.parse_address, tls_options)."""
    text, min_workers = args.cluster, args.min_workers
    if min_workers < 1:
        raise QDQError(f"--min-workers {min_workers}: must be >= 1", arg="--min-workers")
    if text is None:
        given = [f for f, on in (("--min-workers", min_workers != 1), ("--tls-ca-file", args.tls_ca_file),
                                 ("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key),
                                 ("--insecure", args.insecure)) if on]
        if given:
            raise QDQError(f"{given[0]} applies to --cluster ADDRESS, which is not given", arg=given[0])
        return None
    from .jobs.cluster import engine
    engine.parse_address(text, args.insecure)
    return engine.Address(text, engine.tls_options(text, tls_flags(args), "client"), args.insecure)


def add_worker(add):
    p = add("worker", "serve a validation cluster: a Dask worker that advertises this host's targets", cmd_worker)
    p.add_argument("address", help="the scheduler's address, e.g. tls://head:8786 with the --tls-* files (start it "
                                   "with 'dask scheduler'); plaintext tcp:// only to 127.0.0.1 or with --insecure")
    p.add_argument("--targets", help="comma-separated targets to run for the cluster (default: every one that runs "
                                     "here, as 'qdqc targets' lists them)")
    p.add_argument("--name", help="this worker's name in reports (default: its address)")
    p.add_argument("--nthreads", type=int, default=None,
                   help="tasks at once, >= 1 (default: one per core); cells still run one at a time")
    p.add_argument("--print-command", action="store_true",
                   help="print Dask's own worker command with the resources filled in, and exit")
    add_tls_options(p, "worker")


def cmd_worker(args):
    from .jobs.cluster import engine
    if args.nthreads is not None and args.nthreads < 1:
        raise QDQError(f"--nthreads {args.nthreads}: must be >= 1 (leave it out for one per core)", arg="--nthreads")
    if args.address.strip().startswith(engine.LOCAL):
        raise QDQError("qdqc worker ADDRESS: the address of a running scheduler ('dask scheduler' prints it); "
                       "local:N starts its own workers", arg="address")
    engine.parse_address(args.address, args.insecure, arg="address")
    tls = engine.tls_options(args.address, tls_flags(args), "worker", arg="address")
    names = [t.strip() for t in args.targets.split(",") if t.strip()] if args.targets else None
    runs = engine.advertised_targets(names)
    cmd = engine.worker_command(args.address, names, args.name, args.nthreads, tls)
    if args.print_command:
        print(shlex.join(cmd))
        return 0
    engine.require_distributed()
    print(f"qdqc worker: running {', '.join(runs) or 'no target (compiles only)'} for {args.address}",
          file=sys.stderr, flush=True)
    os.execv(cmd[0], cmd)
