"""The engine under ``--cluster``: Dask distributed, its workers' resources, and what each worker says of itself.

A worker advertises, as Dask resources, what it can do for qdq_compiler:
  - ``qdq-build:<target>:<profile>`` for every target (compiling needs no device), and
  - ``qdq-run:<target>:<profile>`` (1) for each target it runs (``qdqc targets`` on its host, or a subset),
  - ``qdq-device`` (1): one cell at a time per worker, whatever its targets.
The profile is a digest of what on the worker's host shapes a target's artifacts (its compile flags, the cpu
target's x86-64 level, which multiply-add units it has): an artifact compiled under one profile runs on any
worker of the same profile, and on no other (an AVX-512 program on a CPU without it). On one machine, or a
lab of identical hosts, every target has one profile and compiles run on any worker.

A Dask scheduler sends its workers pickled functions to run: whoever reaches it runs code on every device host.
So a scheduler off this host is reached over TLS (``tls://``, certificates of the cluster's own CA: Dask admits
any certificate the CA signed, both ways), and plaintext only to loopback or with ``--insecure`` (``parse_address``).
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import socket
import ssl
import sys
import time
import urllib.parse

from ... import compile as C
from ... import emit
from ... import targets as T
from ...errors import QDQError

BUILD, RUN, DEVICE = "qdq-build", "qdq-run", "qdq-device"
_BUILD_SLOTS = 64          # compiles a worker takes at once are bounded by its threads, not by this
LOCAL = "local:"
TLS_SCHEMES = ("tls", "wss")
TLS_FLAGS = {"ca_file": "--tls-ca-file", "cert": "--tls-cert", "key": "--tls-key"}
INSTALL_HINT = "pip install 'qdq-compiler[cluster]' (Dask distributed)"


def require_distributed():
    """The ``distributed`` module, or a QDQError saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise QDQError(f"--cluster needs Dask distributed, which is not installed here: {INSTALL_HINT}",
                       arg="--cluster") from None
    return distributed


def target_profile(name: str) -> str:
    """A digest of what shapes ``name``'s artifacts on this host (flags, cpu level, multiply-add units)."""
    t = T.get(name)
    facts = {"flags": list(t.compile_flags), "contraction_free_level": list(t.contraction_free_level),
             "fma_units": list(t.fma_units())}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:12]


def software_identity() -> dict:
    """What must agree between the driver and every worker: the package's sources and templates (they shape
    the oracle and the programs) and the IREE compiler (it shapes the artifacts)."""
    return {"sources": C.source_fingerprint(emit.TEMPLATE_DIR), "compiler": C.compiler_identity()}


def advertised_targets(names: list[str] | None = None) -> list[str]:
    """The targets this host runs (``qdqc targets``), or the subset ``names`` of them; naming one this host
    cannot run is a QDQError with the reason."""
    here = T.available_targets()
    if not names:
        return here
    out = []
    for n in names:
        t = T.get(n)
        ok, why = t.availability()
        if not ok:
            raise QDQError(f"--targets {n}: this host cannot run it ({why}); it runs {', '.join(here) or 'none'}",
                           arg="--targets")
        out.append(t.name)
    return list(dict.fromkeys(out))


def resources(names: list[str] | None = None) -> dict[str, int]:
    """The Dask resources of a worker on this host that runs ``advertised_targets(names)``."""
    res = {f"{BUILD}:{n}:{target_profile(n)}": _BUILD_SLOTS for n in T.TARGETS}
    res.update({f"{RUN}:{n}:{target_profile(n)}": 1 for n in advertised_targets(names)})
    res[DEVICE] = 1
    return res


def run_targets_of(resource_names) -> list[str]:
    """The targets a worker with these resources runs (its ``qdq-run:<target>:<profile>`` names)."""
    return [r.split(":")[1] for r in resource_names if r.startswith(RUN + ":")]


def describe_self(dask_worker=None) -> dict:
    """What a worker says of itself (``client.run``): host, its targets' devices and profiles, the software."""
    from ..validate.environment import device_name, host_cpu
    held = getattr(getattr(dask_worker, "state", None), "total_resources", None) or \
        getattr(dask_worker, "total_resources", None) or {}
    runs = run_targets_of(held)
    return {"host": socket.gethostname(), "host_cpu": host_cpu(), "pid": os.getpid(),
            "devices": {t: device_name(t) for t in runs}, "identity": software_identity()}


def device_of(target: str) -> str:
    """The device behind ``target`` on this worker's host (validate.environment.device_name)."""
    from ..validate.environment import device_name
    return device_name(target)


def worker_name(name, address: str) -> str:
    """A worker's name in reports: its ``--name``, ``worker-<i>`` in a ``local:N`` cluster, else its address."""
    if isinstance(name, str) and name:
        return name
    return f"worker-{name}" if isinstance(name, int) else str(address)


def worker_command(address: str, names: list[str] | None = None, name: str | None = None,
                   nthreads: int | None = None, tls: dict | None = None) -> list[str]:
    """Dask's own worker command with this host's resources filled in (what ``qdqc worker`` runs), with the TLS
    files given as flags (``tls_options``; Dask reads those of its config itself). A worker of a loopback
    scheduler listens on loopback (a worker's port runs code as the scheduler's does), and its HTTP server
    (health, metrics; no dashboard) on loopback always."""
    res = " ".join(f"{k}={v}" for k, v in resources(names).items())
    cmd = [sys.executable, "-m", "distributed.cli.dask_worker", str(address), "--resources", res,
           "--nthreads", str(nthreads or os.cpu_count() or 1), "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    for key, value in (tls or {}).items():
        cmd += [TLS_FLAGS[key], value]
    host = split_address(str(address))[1]
    if is_loopback(host):
        cmd += ["--host", f"[{host}]" if ":" in host else host]
    return cmd + (["--name", name] if name else [])


class Address(str):
    """A scheduler's address as the command line checked it (``cli_cluster.cluster_address``), with the TLS files
    its flags name (``tls_options``) and whether ``--insecure`` allows plaintext off this host; a str, so messages
    and reports show the text."""

    def __new__(cls, text: str, tls: dict | None = None, insecure: bool = False):
        self = super().__new__(cls, text)
        self.tls, self.insecure = dict(tls or {}), bool(insecure)
        return self


def split_address(text: str) -> tuple[str, str]:
    """(scheme, host) of a scheduler's address from its text alone, nothing resolved: ("tcp", "head") for
    ``head:8786`` (Dask's default scheme); host "" where none can be read."""
    scheme, sep, rest = text.strip().partition("://")
    if not sep:
        scheme, rest = "tcp", text.strip()
    try:
        host = urllib.parse.urlsplit("//" + rest).hostname or ""
    except ValueError:
        host = ""
    return scheme.lower(), host


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost, read from the text (a name is never looked up: any other is off this host)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _named(arg: str, address) -> str:
    return f"qdqc worker {address}" if arg == "address" else f"{arg} {address}"


def parse_address(address: str, insecure: bool | None = None, arg: str = "--cluster") -> tuple[str, int]:
    """("local", N) for ``local:N``, else ("remote", 0) for a scheduler's address; bad text, or plaintext to a
    host other than this one without ``insecure`` (default: the Address's own), is a QDQError naming ``arg``."""
    text = str(address).strip()
    if text.startswith(LOCAL):
        n = text[len(LOCAL):]
        if not n.isdigit() or int(n) < 1:
            raise QDQError(f"--cluster {address!r}: expected local:N with N >= 1 worker processes, or a "
                           f"scheduler's address such as tls://head:8786", arg="--cluster")
        return "local", int(n)
    if not text or " " in text:
        raise QDQError(f"{arg} {address!r}: expected a scheduler's address such as tls://head:8786 or "
                       f"127.0.0.1:8786" + (", or local:N" if arg == "--cluster" else ""), arg=arg)
    scheme, host = split_address(text)
    if insecure is None:
        insecure = getattr(address, "insecure", False)
    if scheme not in TLS_SCHEMES and not is_loopback(host) and not insecure:
        rest = text.partition("://")[2] or text
        raise QDQError(f"{_named(arg, text)}: plaintext to a scheduler off this host, where anyone who can reach it "
                       f"runs code on every worker (a Dask scheduler sends them pickled functions): use "
                       f"tls://{rest} with --tls-ca-file, --tls-cert and --tls-key (README, Validating across "
                       f"machines), or --insecure on a network you trust", arg=arg)
    return "remote", 0


def _dask_config(key: str):
    try:
        import dask.config
    except ImportError:
        return None
    return dask.config.get(key, None)


def tls_options(address, flags: dict | None = None, role: str = "client", arg: str = "--cluster") -> dict:
    """The TLS flags given (ca_file, cert, key: their paths) for ``role`` ("client": validate and build; "worker")
    at ``address``, checked before anything starts. Each flag wins over Dask's config (distributed.comm.tls.ca-file,
    .<role>.cert, .<role>.key), which fills what a flag leaves out. A tls:// address needs a CA file and a
    certificate (whose file may hold the key); a plaintext one or ``local:N`` takes none."""
    flags = {k: v for k, v in (flags or {}).items() if v}
    text = str(address).strip()
    if text.startswith(LOCAL) or split_address(text)[0] not in TLS_SCHEMES:
        if flags:
            flag = TLS_FLAGS[next(iter(flags))]
            raise QDQError(f"{flag} applies to a tls:// scheduler address, not {text}: write tls://host:port (a "
                           f"scheduler started with the TLS flags)", arg=flag)
        return {}
    config = {"ca_file": "distributed.comm.tls.ca-file", "cert": f"distributed.comm.tls.{role}.cert",
              "key": f"distributed.comm.tls.{role}.key"}
    files = {k: flags.get(k) or _dask_config(key) for k, key in config.items()}
    for k, what in (("ca_file", "the cluster's CA certificate"), ("cert", f"this {role}'s certificate")):
        if not files[k]:
            raise QDQError(f"{_named(arg, text)}: TLS needs {what}, which is not given: {TLS_FLAGS[k]} PATH (or "
                           f"Dask's config {config[k]})", arg=TLS_FLAGS[k])
    if any("\n" in v for v in files.values() if v):   # certificates in Dask's config itself: Dask checks them
        return flags

    def source(k):
        return f"{TLS_FLAGS[k]} {files[k]}" + ("" if k in flags else f" (Dask's config {config[k]})")
    for k, v in files.items():
        if v and not os.path.isfile(v):
            raise QDQError(f"{source(k)}: no such file", arg=TLS_FLAGS[k])
    try:
        ctx = ssl.create_default_context(cafile=files["ca_file"])
    except (ssl.SSLError, OSError) as e:
        raise QDQError(f"{source('ca_file')}: not a PEM CA certificate ({e})", arg="--tls-ca-file") from None
    try:
        ctx.load_cert_chain(files["cert"], files["key"])
    except (ssl.SSLError, OSError) as e:
        key = f" and {source('key')}" if files["key"] else " (no --tls-key: the key in its file)"
        raise QDQError(f"{source('cert')}{key}: not a PEM certificate and its private key ({e})",
                       arg="--tls-cert") from None
    return flags


def client_security(address):
    """Dask's Security of a client of ``address``: None over plaintext; for tls:// the flags' files (the Address's)
    over Dask's config."""
    flags = tls_options(address, getattr(address, "tls", None), "client")
    if split_address(str(address))[0] not in TLS_SCHEMES:
        return None
    from distributed.security import Security
    names = {"ca_file": "tls_ca_file", "cert": "tls_client_cert", "key": "tls_client_key"}
    return Security(require_encryption=True, **{names[k]: v for k, v in flags.items()})


CONNECT_ENV = "QDQ_CLUSTER_TIMEOUT"


def env_seconds(name: str, default: float, *, zero_ok: bool = False) -> float:
    """The number of seconds the environment variable ``name`` sets, else ``default``; anything but a positive
    number (or 0 with ``zero_ok``) is a QDQError naming it."""
    text = os.environ.get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        value = -1.0
    if not (value >= 0 if zero_ok else value > 0) or value == float("inf"):
        raise QDQError(f"{name}={text!r} must be a number of seconds {'>= 0' if zero_ok else '> 0'} "
                       f"(default {default:g})", arg=name)
    return value


def connect_timeout_s() -> float:
    """How long to try reaching a scheduler: QDQ_CLUSTER_TIMEOUT seconds, else 20."""
    return env_seconds(CONNECT_ENV, 20.0)


def connect(address: str):
    """(client, local cluster or None): a client of the scheduler at ``address``, or of a cluster of N worker
    processes on this machine started for it (``local:N``: one thread each; worker 0 runs every target
    here, the others the host-CPU ones)."""
    kind, n = parse_address(address)
    distributed = require_distributed()
    import logging
    if kind == "local":
        # One host, one of each device: worker 0 runs every target here; the others run those on the host's
        # cores (two lavapipe devices at once, each polling on two threads, ran Vulkan's cells 5x slower)
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", resources=resources(),
                                           silence_logs=logging.ERROR)
        on_cores = [t for t in advertised_targets() if T.get(t).runs_on_host_cpu]
        first = cluster.worker_spec[0]
        for i in range(1, n):
            cluster.worker_spec[i] = {"cls": first["cls"], "options": {**first["options"],
                                                                      "resources": resources(on_cores)}}
        cluster.sync(cluster._correct_state)
        client = distributed.Client(cluster)
        client.wait_for_workers(n)
        return client, cluster
    security = client_security(address)
    try:
        client = distributed.Client(str(address), timeout=f"{connect_timeout_s()}s", security=security)
    except (OSError, TimeoutError) as e:
        tls = ("; over TLS, this client and the scheduler hold certificates of one CA (--tls-ca-file)"
               if security is not None else "")
        raise QDQError(f"--cluster {address}: cannot reach a Dask scheduler there ({e}){tls}; start one with "
                       f"'dask scheduler' and workers with 'qdqc worker {address}'", arg="--cluster") from None
    return client, None


def survey(client, address: str, local: bool, min_workers: int = 1) -> dict[str, dict]:
    """Every worker by address: its label (host/name), host, resources, the targets it runs and their devices.
    Waits up to QDQ_CLUSTER_TIMEOUT for ``min_workers`` to have joined; refuses workers of other sources or
    another IREE compiler."""
    info = client.scheduler_info()["workers"]
    if len(info) < min_workers and not local:
        try:
            client.wait_for_workers(min_workers, timeout=connect_timeout_s())
        except Exception:  # noqa: BLE001 - distributed's TimeoutError
            have = len(client.scheduler_info()["workers"])
            raise QDQError(f"--cluster {address}: {have} worker(s) joined the scheduler within "
                           f"{connect_timeout_s():g} s, {min_workers} asked for (--min-workers); start one on each "
                           f"device host with 'qdqc worker {address}'", arg="--cluster") from None
        info = client.scheduler_info()["workers"]
    facts = client.run(describe_self)
    mine, out, stale = software_identity(), {}, []
    for addr, w in info.items():
        f = facts.get(addr)
        if f is None:   # left between the two questions
            continue
        name = worker_name(w.get("name"), addr)
        label = f"{f['host']}/{name}"
        if f["identity"] != mine:
            stale.append(label)
        out[addr] = {"label": label, "name": name, "host": f["host"], "resources": dict(w.get("resources") or {}),
                     "runs": run_targets_of(w.get("resources") or {}), "devices": f["devices"],
                     "nthreads": w.get("nthreads", 1)}
    if stale:
        raise QDQError(f"--cluster {address}: worker(s) {', '.join(stale)} run other qdq_compiler sources or another "
                       f"IREE compiler than this driver; install the same version on every host", arg="--cluster")
    return dict(sorted(out.items(), key=lambda kv: kv[1]["label"]))


class Session:
    """A client of the cluster at ``address`` (and the cluster ``local:N`` started for it), its workers surveyed
    (``survey``) and the time that took; ``close`` ends both."""

    def __init__(self, address: str, min_workers: int = 1):
        t0 = time.perf_counter()
        self.address = address
        self.client, self.local = connect(address)
        try:
            self.identity = software_identity()
            self.workers = survey(self.client, address, self.local is not None, min_workers)
        except BaseException:
            self.close()
            raise
        self.startup_s = time.perf_counter() - t0

    def close(self):
        for part in (self.client, self.local):
            if part is not None:
                try:
                    part.close()
                except Exception:  # noqa: BLE001 - closing a cluster that is going away anyway
                    pass
