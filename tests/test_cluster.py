"""Validation across machines on Dask distributed (issue 26): a real cluster on this machine.

A scheduler and two workers in processes of their own, as a lab would start them: "gpu-box" advertises
cpu, vmvx and Vulkan (vmvx alone where this machine has no Vulkan), "cpu-box" cpu only. The checks: placement
(a device target's cells run only where it is advertised), a report equal to a local run's but for timings
and places, artifacts arriving in the driver's cache, a worker killed mid-run, Ctrl-C, a bundle
byte-identical to a local build. Each process is bounded in time and killed with its group at the end.

TLS (issue 47.5): a scheduler on tls://127.0.0.1 with certificates of a CA made here (openssl, as in the README),
a `qdqc worker` and a `qdqc validate --cluster` holding theirs; whoever lacks one is refused. Plaintext off this
host is refused before anything starts, and those refusals run under `unshare -n` (no network at all), so a
broken check cannot send a packet off this machine. All traffic here is to loopback.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qdq_compiler import compile as C
from qdq_compiler import targets as T
from qdq_compiler.errors import QDQError

distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed (qdq-compiler[cluster])")

from qdq_compiler.jobs.cluster import engine  # noqa: E402  (after the skip: it needs nothing, but reads better)
from qdq_compiler.jobs.validate import run_validation  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEVICE_TARGETS = ["vmvx", "vulkan"] if T.get("vulkan").availability()[0] else ["vmvx"]
OPS = "FakeQuantWithMinMaxArgs,FakeQuantWithMinMaxVarsPerChannel"
DEADLINE_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args, log: Path, env=None) -> subprocess.Popen:
    """A process in its own session (its group is killed at the end, children included)."""
    return subprocess.Popen(args, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True,
                            env=env or os.environ.copy())


def _kill(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def _wait_for(predicate, what: str, timeout_s: float = 60.0, every_s: float = 0.2):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if predicate():
            return
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _worker(address, name, targets, log_dir: Path, env=None) -> subprocess.Popen:
    return _start([sys.executable, "-m", "qdq_compiler", "worker", address, "--targets", ",".join(targets),
                   "--name", name, "--nthreads", "1"], log_dir / f"{name}.log", env)


def _names(client) -> set[str]:
    return {w.get("name") for w in client.scheduler_info()["workers"].values()}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(scheduler address, a client of it, the log directory): a head and two workers, as in the README."""
    logs = tmp_path_factory.mktemp("cluster_logs")
    address = f"tcp://127.0.0.1:{_free_port()}"
    procs = [_start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                     address.rsplit(":", 1)[1], "--no-dashboard", "--dashboard-address", "127.0.0.1:0"],
                    logs / "scheduler.log")]
    try:
        procs.append(_worker(address, "gpu-box", ["cpu", *DEVICE_TARGETS], logs))
        procs.append(_worker(address, "cpu-box", ["cpu"], logs))
        client = None
        t0 = time.monotonic()
        while client is None:
            try:
                client = distributed.Client(address, timeout="2s")
            except OSError:
                if time.monotonic() - t0 > 60:
                    raise
        _wait_for(lambda: {"gpu-box", "cpu-box"} <= _names(client), "both workers to join")
        yield address, client, logs
        client.close()
    finally:
        for p in procs[::-1]:
            _kill(p)


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _without_place(cells):
    """The cells but for timings and places (and why a target is not run: no device here, no worker there)."""
    return [{k: v for k, v in c.items() if k not in ("seconds", "host", "worker", "device")
             and not (k == "detail" and c["status"] == "skipped")} for c in cells]


def test_a_cluster_run_places_cells_by_target_and_reports_as_a_local_run(lab, tmp_path, monkeypatch, capsys):
    address, _, _ = lab
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "driver_cache"))   # empty: artifacts must arrive as bytes
    kw = dict(ops=OPS.split(","), targets=["cpu", *DEVICE_TARGETS, "cuda"], dtypes=["float32"], sizes=(1000,))
    assert run_validation(**kw, cluster=address, json_path=str(tmp_path / "c.json"),
                          markdown_path=str(tmp_path / "c.md"), junit_path=str(tmp_path / "c.xml")) == 0
    cluster = json.loads((tmp_path / "c.json").read_text())
    cells = cluster["cells"]
    ran = [c for c in cells if c["target"] != "cuda"]
    assert ran and all(c["status"] == "exact" for c in ran)
    assert {c["worker"] for c in ran} <= {"gpu-box", "cpu-box"}
    assert all(c["host"] == socket.gethostname() and c["device"] for c in ran)
    for t in DEVICE_TARGETS:   # only gpu-box advertises them
        assert {c["worker"] for c in ran if c["target"] == t} == {"gpu-box"}, t
    cuda = [c for c in cells if c["target"] == "cuda"]
    assert cuda and all(c["status"] == "skipped" and "compiled; not run: no worker of the cluster" in c["detail"]
                        for c in cuda)
    summary = cluster["summary"]
    assert [w["worker"] for w in summary["cluster"]["workers"]] == ["cpu-box", "gpu-box"]
    assert "gpu-box" in summary["devices"]["cpu"] and "cpu-box" in summary["devices"]["cpu"]
    # every artifact of the run is in the driver's cache, verified
    vmfbs = list((tmp_path / "driver_cache").glob("*.vmfb"))
    assert len(vmfbs) >= len(cells) / 2 and all(C.read_verified(v, v.with_suffix(".json")) for v in vmfbs)
    md, xml = (tmp_path / "c.md").read_text(), (tmp_path / "c.xml").read_text()
    assert "## Where the cells ran" in md and "worker `gpu-box`" in md
    assert '<property name="worker" value="gpu-box"/>' in xml
    # the same matrix and seed in this process: the same report but for timings and places
    assert run_validation(**kw, json_path=str(tmp_path / "l.json")) == 0
    local = json.loads((tmp_path / "l.json").read_text())
    assert _without_place(local["cells"]) == _without_place(cells)
    assert local["entries"] == cluster["entries"]
    places = ("seconds", "text", "devices", "skipped_targets", "skipped_details")   # and why a target is skipped
    same = {k for k in local["summary"] if k not in places}
    assert {k: local["summary"][k] for k in same} == {k: summary[k] for k in same}
    assert {c["worker"] for c in local["cells"] if c["status"] == "exact"} == {"local"}


def test_a_worker_killed_mid_run_has_its_cells_run_elsewhere_once(lab, tmp_path):
    """"victim" runs cpu and cpu-host, which no other worker runs; killed with tasks in flight, its cpu work
    is re-run on the others, and cpu-host's waiting cells fail naming it: every cell reported once."""
    address, client, logs = lab
    env = dict(os.environ, QDQ_CACHE_DIR=str(tmp_path / "victim_cache"))   # cold: its compiles take seconds
    victim = _worker(address, "victim", ["cpu", "cpu-host"], logs, env)
    try:
        _wait_for(lambda: "victim" in _names(client), "the victim to join")
        addr = next(a for a, w in client.scheduler_info()["workers"].items() if w.get("name") == "victim")
        driver_env = dict(os.environ, QDQ_CACHE_DIR=str(tmp_path / "driver_cache"), QDQ_CLUSTER_ORPHAN_S="1")
        driver = _start([sys.executable, "-m", "qdq_compiler", "validate", "--cluster", address, "--targets",
                         "cpu,cpu-host", "--ops", "QuantizeAndDequantizeV2", "--dtypes", "f32", "--sizes", "1000",
                         "--report", str(tmp_path / "k.json"), "--no-progress"], tmp_path / "driver.log", driver_env)
        try:
            _wait_for(lambda: client.processing(workers=[addr]).get(addr), "the victim to take a task")
            _kill(victim)
            rc = driver.wait(timeout=DEADLINE_S)
        finally:
            _kill(driver)
    finally:
        _kill(victim)
    log = (tmp_path / "driver.log").read_text()
    cells = _cells(tmp_path / "k.json")
    pairs = [(c["entry"], c["target"]) for c in cells]
    assert len(pairs) == len(set(pairs)) == 2 * 16, log[-2000:]
    cpu = [c for c in cells if c["target"] == "cpu"]
    assert all(c["status"] == "exact" for c in cpu), log[-2000:]
    host = [c for c in cells if c["target"] == "cpu-host"]
    assert all(c["status"] == "exact" and c["worker"] == "victim" or
               c["status"] == "error" and "no worker runs cpu-host any more" in c["detail"] and "victim" in c["detail"]
               for c in host), [c["detail"] for c in host]
    assert rc == (1 if any(c["status"] == "error" for c in host) else 0), log[-2000:]


def test_ctrl_c_cancels_the_clusters_tasks_and_leaves_the_cache_sound(lab, tmp_path):
    address, client, _ = lab
    env = dict(os.environ, QDQ_CACHE_DIR=str(tmp_path / "driver_cache"))
    args = ["validate", "--cluster", address, "--targets", ",".join(["cpu", *DEVICE_TARGETS]), "--ops",
            "QuantizeAndDequantizeV2,QuantizeAndDequantizeV3", "--sizes", "1000,20000"]
    driver = subprocess.Popen([sys.executable, "-m", "qdq_compiler", *args], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in driver.stderr:
            if line.startswith("[1/"):
                break
        driver.send_signal(signal.SIGINT)
        rest = driver.stderr.read()
        assert driver.wait(timeout=60) == 130, rest
    finally:
        if driver.poll() is None:
            driver.kill()
    assert "interrupted" in rest
    _wait_for(lambda: not any(client.processing().values()), "the cancelled tasks to stop", 30)
    vmfbs = list((tmp_path / "driver_cache").glob("*.vmfb"))
    assert all(C.read_verified(v, v.with_suffix(".json")) is not None for v in vmfbs)


def test_a_bundle_built_on_the_cluster_is_the_local_build(lab, tmp_path):
    from qdq_compiler.jobs.bundle import build_bundle
    address, _, _ = lab
    config = {"targets": ["cpu", "vmvx"], "entries": [
        {"op": "FakeQuantWithMinMaxArgs", "shape": "?", "attrs": {"num_bits": 4}},
        {"op": "FakeQuantWithMinMaxVarsPerChannel", "shape": "?x8", "name": "per_channel"}]}
    remote = build_bundle(config, tmp_path / "remote", cluster=address, build_time="2026-01-01T00:00:00Z")
    local = build_bundle(config, tmp_path / "local", use_cache=False, build_time="2026-01-01T00:00:00Z")
    files = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "remote").iterdir()) and len(files) == 5
    for name in files:
        assert (tmp_path / "remote" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert remote.manifest == local.manifest


def test_local_n_starts_its_own_workers(tmp_path, capsys):
    rc = run_validation(ops=["FakeQuantWithMinMaxArgs"], targets=["cpu"], dtypes=["float32"], sizes=(100,),
                        cluster="local:2", json_path=str(tmp_path / "r.json"), progress="lines")
    err = capsys.readouterr().err
    assert rc == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert {w["worker"] for w in report["summary"]["cluster"]["workers"]} == {"worker-0", "worker-1"}
    assert report["summary"]["cluster"]["startup_seconds"] > 0
    assert all(c["status"] == "exact" and c["worker"] in ("worker-0", "worker-1") for c in report["cells"])
    assert "cluster local:2: 2 workers in" in err and " run, " in err and "s on the cluster" in err


# -- without a cluster -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("address, words", [
    ("local:0", "expected local:N with N >= 1"), ("local:x", "expected local:N"), ("", "scheduler's address"),
    ("tcp://a b", "scheduler's address")])
def test_a_bad_cluster_address_is_refused_before_anything_starts(address, words):
    with pytest.raises(QDQError, match=words) as e:
        engine.parse_address(address)
    assert e.value.arg == "--cluster"


def test_an_unreachable_scheduler_is_a_clear_error(monkeypatch, capsys):
    from qdq_compiler import cli
    monkeypatch.setenv("QDQ_CLUSTER_TIMEOUT", "1")
    assert cli.main(["validate", "--cluster", f"tcp://127.0.0.1:{_free_port()}", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach a Dask scheduler there" in err and "qdqc worker" in err


def test_worker_print_command_fills_in_this_hosts_resources(capsys):
    from qdq_compiler import cli
    assert cli.main(["worker", "tcp://head:8786", "--insecure", "--targets", "cpu", "--name", "n1",
                     "--print-command"]) == 0
    out = capsys.readouterr().out
    assert "distributed.cli.dask_worker tcp://head:8786" in out and "--name n1" in out
    assert f"qdq-run:cpu:{engine.target_profile('cpu')}=1" in out and "qdq-run:vmvx" not in out
    assert f"qdq-build:vmvx:{engine.target_profile('vmvx')}=64" in out and "qdq-device=1" in out
    assert "--host" not in out and "--tls" not in out and "--dashboard-address 127.0.0.1:0" in out


def test_a_worker_refuses_a_target_its_host_cannot_run(capsys, monkeypatch):
    from qdq_compiler import cli
    monkeypatch.setattr(T.Target, "availability", lambda self: (self.name != "vmvx", "no such device here"))
    assert cli.main(["worker", "tcp://127.0.0.1:8786", "--targets", "cpu,vmvx", "--print-command"]) == 2
    assert "--targets vmvx: this host cannot run it (no such device here)" in capsys.readouterr().err


class _StubClient:
    """What engine.survey asks of a client, for workers of a given identity."""

    def __init__(self, identity):
        self.identity = identity

    def scheduler_info(self):
        return {"workers": {"tcp://w:1": {"name": "lab-1", "resources": {"qdq-run:cpu:x": 1}, "nthreads": 2}}}

    def run(self, fn):
        return {"tcp://w:1": {"host": "h1", "devices": {"cpu": "a CPU"}, "identity": self.identity}}


def test_a_worker_of_another_version_is_refused():
    good = engine.software_identity()
    assert engine.survey(_StubClient(good), "tcp://x:1", False)["tcp://w:1"]["label"] == "h1/lab-1"
    with pytest.raises(QDQError, match="h1/lab-1 run other qdq_compiler sources or another IREE compiler"):
        engine.survey(_StubClient({**good, "sources": "0" * 64}), "tcp://x:1", False)


def test_min_workers_is_checked_and_waited_for(monkeypatch, capsys):
    from qdq_compiler import cli
    assert cli.main(["validate", "--min-workers", "0", "--cluster", "local:1"]) == 2
    assert "--min-workers 0: must be >= 1" in capsys.readouterr().err
    assert cli.main(["validate", "--min-workers", "2"]) == 2
    assert "--min-workers applies to --cluster ADDRESS" in capsys.readouterr().err

    class Lonely(_StubClient):
        def wait_for_workers(self, n, timeout):
            raise TimeoutError
    monkeypatch.setenv("QDQ_CLUSTER_TIMEOUT", "0.5")
    with pytest.raises(QDQError, match=r"1 worker\(s\) joined the scheduler within 0.5 s, 3 asked for"):
        engine.survey(Lonely(engine.software_identity()), "tcp://x:1", False, min_workers=3)


def test_without_dask_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)   # import distributed -> ImportError
    with pytest.raises(QDQError, match=r"needs Dask distributed, which is not installed here: pip install "
                                       r"'qdq-compiler\[cluster\]'"):
        engine.connect("local:1")


def test_a_device_that_does_not_answer_fails_its_cell_and_its_worker_restarts(lab, tmp_path):
    """hung-box's cells all outlast its QDQ_CLUSTER_CELL_TIMEOUT (a microsecond): each fails naming it, and its
    nanny restarts it between them (a hung device's thread is only freed with its process)."""
    address, client, logs = lab
    hung = _worker(address, "hung-box", ["cpu-host"], logs, dict(os.environ, QDQ_CLUSTER_CELL_TIMEOUT="0.000001"))
    try:
        _wait_for(lambda: "hung-box" in _names(client), "hung-box to join")
        first = {a for a, w in client.scheduler_info()["workers"].items() if w.get("name") == "hung-box"}
        out = subprocess.run([sys.executable, "-m", "qdq_compiler", "validate", "--cluster", address, "--targets",
                              "cpu-host", "--ops", "FakeQuantWithMinMaxArgs", "--dtypes", "f32", "--sizes", "100",
                              "--report", str(tmp_path / "h.json"), "--no-progress"], cwd=ROOT, capture_output=True,
                             text=True, timeout=DEADLINE_S,   # a slow restart is no orphan: grace 60 s
                             env=dict(os.environ, QDQ_CACHE_DIR=str(tmp_path / "c"), QDQ_CLUSTER_ORPHAN_S="60"))
        _wait_for(lambda: {a for a, w in client.scheduler_info()["workers"].items()
                           if w.get("name") == "hung-box"} - first, "hung-box to come back as a new process")
    finally:
        _kill(hung)
    assert out.returncode == 1, out.stderr[-2000:]
    cells = _cells(tmp_path / "h.json")
    assert len(cells) == 2 and all(c["status"] == "error" and c["worker"] == "hung-box" for c in cells), cells
    assert all("no answer from host CPU" in c["detail"] and "after 1e-06 s (QDQ_CLUSTER_CELL_TIMEOUT); worker "
               "hung-box restarts" in c["detail"] for c in cells), cells
    assert "MISMATCH cpu-host FakeQuantWithMinMaxArgs:f32:dynamic at " in out.stdout


def test_an_answer_after_the_limit_counts_as_none():
    """tasks._within: a cell's answer counts only within the limit, also when the waiting thread gets the GIL back
    after the cell returned (the race that once passed a cell of the hung-box test above); the cell's error is raised
    where it came in time."""
    from qdq_compiler.jobs.cluster import tasks
    interval = sys.getswitchinterval()
    sys.setswitchinterval(5.0)   # the cell keeps the GIL until it returns: the waiter resumes after it, late
    try:
        assert tasks._within(0.001, lambda: sum(range(3_000_000))) == (False, None)
    finally:
        sys.setswitchinterval(interval)
    assert tasks._within(0.01, lambda: time.sleep(0.2)) == (False, None)
    assert tasks._within(30.0, lambda: 1) == (True, 1)
    with pytest.raises(ZeroDivisionError):
        tasks._within(30.0, lambda: 1 / 0)


def test_jobs_is_a_local_runs_option(capsys):
    from qdq_compiler import cli
    assert cli.main(["validate", "--cluster", "local:2", "--jobs", "2"]) == 2
    assert "--jobs applies to a local run" in capsys.readouterr().err


def test_a_target_runs_under_the_profile_most_of_its_workers_share():
    """Three cpu workers, two of one x86-64 profile (say AVX-512) and one of another: the cpu tasks ask for the
    two's resources, so no artifact runs on a CPU it was not built for; a target nobody runs is skipped."""
    from qdq_compiler.jobs.cluster.validate import ClusterExecutor
    ex = object.__new__(ClusterExecutor)   # the placement rules alone, without a cluster
    ex.address = "tcp://lab:8786"
    ex.workers = {a: {"label": f"h/{a}", "runs": ["cpu"],
                      "resources": {f"qdq-run:cpu:{p}": 1, f"qdq-build:cpu:{p}": 64}}
                  for a, p in (("w1", "v4"), ("w2", "v3"), ("w3", "v4"))}
    assert ex._profile(engine.RUN, "cpu") == "qdq-run:cpu:v4"
    assert ex._profile(engine.BUILD, "cpu") == "qdq-build:cpu:v4"
    run, skipped, compile_only = ex.select_targets(["cpu", "vulkan"])
    assert run == ["cpu"] and compile_only == ["vulkan"]
    assert skipped["vulkan"] == ("no worker of the cluster tcp://lab:8786 advertises it "
                                 "(workers: h/w1: cpu; h/w2: cpu; h/w3: cpu)")
    assert ex.select_targets(["all"])[2] == []   # 'all': the others are skipped, not compiled


# -- TLS (issue 47.5) -----------------------------------------------------------------------------------------

def _make_certs(d: Path) -> Path:
    """A CA of the cluster's own and the certificates it signed (head, worker, client), and a stranger's: a
    certificate of another CA; made with openssl as in the README (P-256 keys: milliseconds)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *key, "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2", "-subj", f"/CN={ca}")
    for name, ca in (("head", "ca"), ("worker", "ca"), ("client", "ca"), ("stranger", "other-ca")):
        openssl("req", "-new", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
                "-out", f"{name}.pem", "-days", "2")
    return d


def _tls(d: Path, who: str, ca: str = "ca") -> list[str]:
    return ["--tls-ca-file", str(d / f"{ca}.pem"), "--tls-cert", str(d / f"{who}.pem"),
            "--tls-key", str(d / f"{who}.key")]


def _security(d: Path, who: str):
    from distributed.security import Security
    return Security(tls_ca_file=str(d / "ca.pem"), tls_client_cert=str(d / f"{who}.pem"),
                    tls_client_key=str(d / f"{who}.key"), require_encryption=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return _make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_scheduler(certs, tmp_path_factory):
    """(tls:// address, a client of it holding the client certificate, the log directory): Dask's scheduler on
    loopback over TLS, started as the README starts it."""
    logs = tmp_path_factory.mktemp("tls_logs")
    port = _free_port()
    address = f"tls://127.0.0.1:{port}"
    proc = _start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--protocol", "tls", "--host", "127.0.0.1",
                   "--port", str(port), "--dashboard-address", "127.0.0.1:0", *_tls(certs, "head")],
                  logs / "scheduler.log")
    try:
        client, t0 = None, time.monotonic()
        while client is None:
            try:
                client = distributed.Client(address, timeout="2s", security=_security(certs, "client"))
            except OSError:
                if time.monotonic() - t0 > 60:
                    raise
        yield address, client, logs
        client.close()
    finally:
        _kill(proc)


def test_a_tls_cluster_validates_with_qdqc_worker_and_validate(certs, tls_scheduler, tmp_path, capsys, monkeypatch):
    """`qdqc worker tls://...` (Dask's worker with the TLS flags) joins; `qdqc validate --cluster tls://...` runs
    its cells there: both hold certificates of the cluster's CA."""
    from qdq_compiler import cli
    address, client, logs = tls_scheduler
    # the driver reads its sources again, as the new worker does (a long session may outlive an edit of them)
    monkeypatch.setattr(C, "_FINGERPRINT", None)
    worker = _start([sys.executable, "-m", "qdq_compiler", "worker", address, "--targets", "cpu", "--name", "tls-box",
                     "--nthreads", "1", *_tls(certs, "worker")], logs / "tls-box.log")
    try:
        _wait_for(lambda: "tls-box" in _names(client), "tls-box to join")
        (addr, info), = client.scheduler_info()["workers"].items()
        assert addr.startswith("tls://127.0.0.1:") and info["name"] == "tls-box"   # over TLS, on loopback
        rc = cli.main(["validate", "--cluster", address, *_tls(certs, "client"), "--targets", "cpu", "--ops",
                       "FakeQuantWithMinMaxArgs", "--dtypes", "f32", "--sizes", "100", "--report",
                       str(tmp_path / "t.json")])   # progress: one line per step (stderr is no terminal)
    finally:
        _kill(worker)
    err = capsys.readouterr().err
    assert rc == 0, err
    report = json.loads((tmp_path / "t.json").read_text())
    cells = report["cells"]
    assert [(c["entry"], c["target"], c["status"], c["worker"]) for c in cells] == [
        ("FakeQuantWithMinMaxArgs:f32:dynamic", "cpu", "exact", "tls-box"),
        ("FakeQuantWithMinMaxArgs:f32:static", "cpu", "exact", "tls-box")], cells
    cluster = report["summary"]["cluster"]
    assert cluster["address"] == address and [w["worker"] for w in cluster["workers"]] == ["tls-box"]
    assert f"cluster {address}: 1 worker in" in err and "on cpu at " in err and "/tls-box: exact" in err


def test_a_tls_scheduler_refuses_who_holds_no_certificate_of_its_ca(certs, tls_scheduler, monkeypatch, capsys):
    from qdq_compiler import cli
    address, client, _ = tls_scheduler
    port = int(address.rsplit(":", 1)[1])
    # no certificate: the scheduler ends the handshake (Dask asks for one, CERT_REQUIRED)
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, ctx.wrap_socket(raw) as tls:
        # TLS 1.3: the refusal comes with a read, as an alert or as the connection closed under it
        with pytest.raises(ssl.SSLError, match="CERTIFICATE_REQUIRED|EOF occurred in violation of protocol"):
            tls.sendall(b"\0")
            tls.recv(1)
    # a certificate of another CA, through Dask's own client and through qdqc: the alert, or the connection closed
    refused = "unknown ca|EOF occurred in violation of protocol"
    with pytest.raises(OSError, match=refused):
        distributed.Client(address, timeout="5s", security=_security(certs, "stranger"))
    monkeypatch.setenv("QDQ_CLUSTER_TIMEOUT", "5")
    assert cli.main(["validate", "--cluster", address, *_tls(certs, "stranger"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"--cluster {address}: cannot reach a Dask scheduler there" in err and re.search(refused, err), err
    assert "certificates of one CA (--tls-ca-file)" in err
    # plaintext to the TLS port
    assert cli.main(["validate", "--cluster", f"tcp://127.0.0.1:{port}", "--no-progress"]) == 2
    assert "cannot reach a Dask scheduler there" in capsys.readouterr().err
    assert not client.scheduler_info()["workers"]   # and nobody joined on the way


def _unshared_network() -> list[str]:
    """`unshare -n`: the command runs in a network namespace of its own, no interface up, so nothing it tries can
    leave this machine; where it does not work the test fails (it must not run unguarded)."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, timeout=30)
    assert probe.returncode == 0, f"'unshare -n' does not work here ({probe.stderr.strip()}): run as root"
    return ["unshare", "-n"]


PLAINTEXT_OFF_HOST = ["tcp://10.1.2.3:8786", "tcp://example.invalid:8786", "10.1.2.3:8786", "ws://10.1.2.3:8786"]


@pytest.mark.parametrize("command, address", [("worker", "tcp://10.1.2.3:8786"),
                                              ("validate", "tcp://example.invalid:8786"), ("build", "10.1.2.3:8786")])
def test_plaintext_off_this_host_is_refused_before_anything_starts(command, address, tmp_path):
    """Under `unshare -n`: no packet could leave even were the check broken; the refusal comes before any
    connection (one would end otherwise in 'cannot reach', or a build's files)."""
    argv = {"worker": ["worker", address, "--targets", "cpu"],
            "validate": ["validate", "--cluster", address, "--targets", "cpu", "--no-progress"],
            "build": ["build", "--cluster", address, "--config", str(ROOT / "examples" / "small_bundle.json"),
                      "--out", str(tmp_path / "out")]}[command]
    out = subprocess.run([*_unshared_network(), sys.executable, "-m", "qdq_compiler", *argv], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, QDQ_CLUSTER_TIMEOUT="1"))
    named = f"qdqc worker {address}" if command == "worker" else f"--cluster {address}"
    rest = address.partition("://")[2] or address
    assert (out.returncode, out.stderr) == (2, (
        f"qdqc: error: {named}: plaintext to a scheduler off this host, where anyone who can reach it runs code on "
        f"every worker (a Dask scheduler sends them pickled functions): use tls://{rest} with --tls-ca-file, "
        f"--tls-cert and --tls-key (README, Validating across machines), or --insecure on a network you trust\n"))
    assert not (tmp_path / "out").exists()


def test_insecure_lets_plaintext_off_this_host_through(tmp_path):
    """--insecure: the run goes on to connect, inside `unshare -n`'s empty network: unreachable, said so."""
    out = subprocess.run([*_unshared_network(), sys.executable, "-m", "qdq_compiler", "validate", "--cluster",
                          "tcp://10.1.2.3:8786", "--insecure", "--targets", "cpu", "--no-progress"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, QDQ_CLUSTER_TIMEOUT="1"))
    assert out.returncode == 2 and out.stderr.startswith(
        "qdqc: error: --cluster tcp://10.1.2.3:8786: cannot reach a Dask scheduler there ("), out.stderr
    assert "plaintext" not in out.stderr and "over TLS" not in out.stderr


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "127.9.8.7:1", "tcp://[::1]:8786", "localhost:8786",
                                     "tcp://LOCALHOST:8786", "tls://10.1.2.3:8786", "local:2"])
def test_loopback_tls_and_local_addresses_pass(address):
    assert engine.parse_address(address) == (("local", 2) if address == "local:2" else ("remote", 0))


@pytest.mark.parametrize("address", PLAINTEXT_OFF_HOST + ["tcp://127.0.0.1.example.invalid:1", "tcp://[::2]:1",
                                                          "tcp://:8786", "ucx://10.1.2.3:1"])
def test_plaintext_off_this_host_needs_insecure(address):
    """Read from the text alone: nothing is resolved (a name other than localhost is off this host)."""
    with pytest.raises(QDQError, match="plaintext to a scheduler off this host.*--insecure on a network you") as e:
        engine.parse_address(address)
    assert e.value.arg == "--cluster"
    assert engine.parse_address(address, insecure=True) == ("remote", 0)
    assert engine.parse_address(engine.Address(address, insecure=True)) == ("remote", 0)
    with pytest.raises(QDQError, match="qdqc worker .*: plaintext") as e:
        engine.parse_address(address, arg="address")
    assert e.value.arg == "address"


def test_a_tls_address_needs_its_files_named_before_anything_starts(certs, capsys, monkeypatch):
    from qdq_compiler import cli
    monkeypatch.setattr(engine, "connect", lambda *a, **k: pytest.fail("connected"))
    tls = f"tls://127.0.0.1:{_free_port()}"
    ca, cert, key = (str(certs / n) for n in ("ca.pem", "client.pem", "client.key"))
    cases = [
        (["validate", "--cluster", tls], "--tls-ca-file", f"--cluster {tls}: TLS needs the cluster's CA certificate, "
         "which is not given: --tls-ca-file PATH (or Dask's config distributed.comm.tls.ca-file)"),
        (["build", "--config", "c.toml", "--out", "o", "--cluster", tls, "--tls-ca-file", ca], "--tls-cert",
         f"--cluster {tls}: TLS needs this client's certificate, which is not given: --tls-cert PATH (or Dask's "
         "config distributed.comm.tls.client.cert)"),
        (["worker", tls, "--tls-ca-file", ca, "--print-command"], "--tls-cert", f"qdqc worker {tls}: TLS needs this "
         "worker's certificate, which is not given: --tls-cert PATH (or Dask's config "
         "distributed.comm.tls.worker.cert)"),
        (["validate", "--cluster", tls, "--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", "/nonexistent/k.pem"],
         "--tls-key", "--tls-key /nonexistent/k.pem: no such file"),
        (["validate", "--cluster", tls, "--tls-ca-file", ca, "--tls-cert", cert, "--tls-key",
          str(certs / "worker.key")], "--tls-cert", f"--tls-cert {cert} and --tls-key {certs / 'worker.key'}: not a "
         "PEM certificate and its private key ([X509: KEY_VALUES_MISMATCH]"),
        (["validate", "--cluster", tls, "--tls-ca-file", key, "--tls-cert", cert], "--tls-ca-file",
         f"--tls-ca-file {key}: not a PEM CA certificate"),
        (["validate", "--cluster", "tcp://127.0.0.1:8786", "--tls-cert", cert], "--tls-cert", "--tls-cert applies to "
         "a tls:// scheduler address, not tcp://127.0.0.1:8786: write tls://host:port"),
        (["validate", "--cluster", "local:2", "--tls-ca-file", ca], "--tls-ca-file", "--tls-ca-file applies to a "
         "tls:// scheduler address, not local:2"),
        (["validate", "--tls-key", key], "--tls-key", "--tls-key applies to --cluster ADDRESS, which is not given"),
        (["build", "--config", "c.toml", "--out", "o", "--insecure"], "--insecure",
         "--insecure applies to --cluster ADDRESS, which is not given"),
    ]
    parser = cli.build_parser()
    for argv, flag, words in cases:
        args = parser.parse_args(argv)
        with pytest.raises(QDQError) as e:
            args.func(args)
        assert e.value.arg == flag and str(e.value).startswith(words), (argv, flag, e.value.arg, str(e.value))
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"qdqc: error: {words}") and err.count("\n") == 1, (argv, err)
    with pytest.raises(QDQError) as e:
        engine.tls_options(tls, {"ca_file": ca})
    assert e.value.arg == "--tls-cert"


def test_dask_config_fills_what_the_tls_flags_leave_out(certs, capsys):
    """Dask's config distributed.comm.tls.* (its YAML files, DASK_* variables) serves where a flag is not given;
    a flag wins, field by field."""
    import dask
    tls = f"tls://127.0.0.1:{_free_port()}"
    ca, cert, key = (str(certs / n) for n in ("ca.pem", "client.pem", "client.key"))
    with dask.config.set({"distributed.comm.tls.ca-file": ca, "distributed.comm.tls.client.cert": cert,
                          "distributed.comm.tls.client.key": key}):
        assert engine.tls_options(tls) == {}
        sec = engine.client_security(tls)
        assert (sec.tls_ca_file, sec.tls_client_cert, sec.tls_client_key) == (ca, cert, key)
        assert sec.require_encryption is True
        mine = engine.Address(tls, {"cert": str(certs / "worker.pem"), "key": str(certs / "worker.key")})
        sec = engine.client_security(mine)
        assert (sec.tls_ca_file, sec.tls_client_cert) == (ca, str(certs / "worker.pem"))
        with pytest.raises(QDQError, match=r"TLS needs this worker's certificate.*distributed.comm.tls.worker.cert"):
            engine.tls_options(tls, role="worker")
    with dask.config.set({"distributed.comm.tls.ca-file": "/nonexistent/ca.pem"}):
        with pytest.raises(QDQError, match=r"--tls-ca-file /nonexistent/ca.pem \(Dask's config "
                                           r"distributed.comm.tls.ca-file\): no such file"):
            engine.tls_options(tls, {"cert": cert, "key": key})
    assert engine.client_security("tcp://127.0.0.1:1") is None


def test_worker_print_command_passes_tls_on_and_listens_on_loopback_for_a_loopback_scheduler(certs, capsys):
    from qdq_compiler import cli
    flags = _tls(certs, "worker")
    assert cli.main(["worker", "tls://127.0.0.1:8786", *flags, "--targets", "cpu", "--print-command"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{sys.executable} -m distributed.cli.dask_worker tls://127.0.0.1:8786 --resources ")
    assert out.endswith(f" --no-dashboard --dashboard-address 127.0.0.1:0 {' '.join(flags)} --host 127.0.0.1\n")
    assert cli.main(["worker", "tls://head.lab:8786", *flags, "--targets", "cpu", "--print-command"]) == 0
    assert capsys.readouterr().out.endswith(f" {' '.join(flags)}\n")   # off this host: Dask's own listening address
    assert cli.main(["worker", "tcp://[::1]:8786", "--targets", "cpu", "--print-command"]) == 0
    assert capsys.readouterr().out.endswith(" --host '[::1]'\n")
    assert engine.worker_command("localhost:8786", ["cpu"])[-2:] == ["--host", "localhost"]
