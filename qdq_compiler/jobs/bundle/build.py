"""Building a bundle: every entry of a config compiled for every target into one directory, with a
``manifest.json`` recording, per artifact, the op, its attributes (baked into the artifact as constants),
the dtype, the function signature (``null`` = a dynamic dimension), the target, the exact compiler
flags, the IREE compiler version, the SHA-256 of the file and the build time; at the top, which IREE built
it (``iree``: compiler and runtime versions and revisions, and the tools: the iree-base-compiler package or
the ``QDQ_IREE_TOOLS`` directory; see :func:`qdq_compiler.compile.iree_info`).

Reproducible: the artifacts are byte-identical for the same config and compiler (iree-compile is
deterministic; no path or time reaches it), and so is the manifest except ``build_time``, which is the
current UTC time, or ``SOURCE_DATE_EPOCH`` when that is set (https://reproducible-builds.org), which
makes the whole bundle byte-identical.
"""
from __future__ import annotations

import collections
import datetime as _dt
import hashlib
import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ...version import __version__
from ... import compile as C
from ... import emit
from ... import targets as T
from ...config import OpConfig
from ...targets.cpu import resolve_cpu
from ...errors import QDQError
from ...fileio import atomic_write
from .schema import MANIFEST, SCHEMA, SCHEMA_VERSION, BundleConfig, as_targets, parse_config
from .signature import check_module, function_signature


def _build_time(value=None) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, _dt.datetime):
        t = value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
    else:
        sde = os.environ.get("SOURCE_DATE_EPOCH")
        if sde:
            try:
                t = _dt.datetime.fromtimestamp(int(sde), _dt.timezone.utc)
            except (ValueError, OverflowError, OSError):
                raise QDQError(f"SOURCE_DATE_EPOCH={sde!r} must be an integer number of seconds", arg="build_time") from None
        else:
            t = _dt.datetime.now(_dt.timezone.utc)
    return t.astimezone(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class BuildResult:
    """What :func:`build_bundle` did: the manifest written, and compile seconds per target."""
    out: Path
    manifest: dict
    seconds: float
    seconds_per_target: dict = field(default_factory=dict)
    compiled: int = 0
    cached: int = 0

    def summary(self) -> str:
        """What was built, in one or two lines (``qdqc build`` prints it)."""
        m = self.manifest
        per = ", ".join(f"{t} {s:.1f} s" for t, s in self.seconds_per_target.items())
        total = sum(a["size"] for a in m["artifacts"])
        lines = [f"wrote {self.out}/{MANIFEST}: {len(m['artifacts'])} artifact{'s' * (len(m['artifacts']) != 1)} ({total} bytes) for "
                 f"{', '.join(m['targets'])}; {self.compiled} compiled, {self.cached} from the cache; "
                 f"{self.seconds:.1f} s wall (compile time per target: {per})"]
        if "cpu" in m["targets"]:
            c = m["targets"]["cpu"]["cpu"]
            exact = "bit-exact" if m["targets"]["cpu"]["bit_exact"] else "NOT bit-exact (FMA contraction)"
            lines.append(f"cpu artifacts: CPU {c['name']} ({'tuned' if c['tuned'] else 'portable'}, {exact})")
        return "\n".join(lines)


def build_bundle(config, out, *, targets: Sequence[str] | str | None = None, target_cpu: str | None = None,
                 jobs: int = 0, use_cache: bool = True, build_time=None, progress=None,
                 cluster: str | None = None, min_workers: int = 1) -> BuildResult:
    """Compile ``config`` (a path to TOML/JSON, a mapping or a :class:`BundleConfig`) into the directory ``out``.

    ``targets`` overrides the config's targets, ``target_cpu`` its ``target_cpu`` (see
    :func:`qdq_compiler.targets.cpu.resolve_cpu`). ``use_cache=False`` compiles every artifact afresh (the
    cache only ever returns verified bytes of the same MLIR, flags and compiler, so the bundle is the
    same either way). ``build_time``: a datetime or an ISO string for the manifest; default
    SOURCE_DATE_EPOCH, else now. ``progress(entry, target, seconds)`` is called as each artifact is done.
    ``cluster``: a Dask scheduler's address or ``local:N``: the compiles run on its workers (jobs/cluster/bundle.py);
    the bundle is byte-identical.
    """
    t_start = time.perf_counter()
    cfg = config if isinstance(config, BundleConfig) else parse_config(config)
    tlist = as_targets(targets, "--targets", "--targets") if targets else cfg.targets
    target_cpu = target_cpu if target_cpu is not None else cfg.target_cpu
    jobs = jobs or os.cpu_count() or 1
    if target_cpu is not None and "cpu" not in tlist:
        raise QDQError(f"target_cpu={target_cpu!r} applies to the 'cpu' target, which this build does not include "
                       f"(targets: {', '.join(tlist)})", arg="target_cpu")
    # Which IREE builds it (the package's or QDQ_IREE_TOOLS'); refuses a compiler and runtime that disagree.
    info = C.check_iree()
    cpu = resolve_cpu(target_cpu, T.get("cpu").compile_flags) if "cpu" in tlist else None
    out = Path(out)
    old = _prepare_out(out)
    stamp = _build_time(build_time)
    version, revision = info["compiler_version"], info["compiler_revision"] or ""
    # No paths but the QDQ_IREE_TOOLS directory: the manifest stays reproducible across machines.
    iree = {k: info[k] for k in ("compiler_version", "compiler_revision", "runtime_version", "runtime_revision",
                                 "tools", "version_check")}

    # An entry's own targets restrict the bundle's (or the --targets override's).
    jobs_list = [(e, t) for t in tlist for e in cfg.entries if e.targets is None or t in e.targets]
    if not jobs_list:
        raise QDQError("nothing to build: no entry is built for the selected targets", arg="targets")
    tlist = tuple(t for t in tlist if any(jt == t for _, jt in jobs_list))

    def flags_of(t: str) -> tuple[str, ...]:
        return cpu.flags if t == "cpu" else T.get(t).compile_flags

    def one(job):
        e, t = job
        oc = OpConfig.make(e.op, dict(e.attrs), e.dtype, e.shape, t, e.params, e.semantics)
        mlir = emit.render(oc)
        flags = flags_of(t) + T.get(t).program_flags(oc)
        t0 = time.perf_counter()
        was_cached = False
        if remote is not None:
            data, was_cached = remote.compile(mlir, flags, what=f"{e.name} ({oc.describe()})", info=oc.key(),
                                              use_cache=use_cache)
        elif use_cache:
            key = C.cache_key(mlir, flags)
            was_cached = (C.cache_dir() / f"{key}.vmfb").exists()
            _, data = C.cached_compile(mlir, flags, what=f"{e.name} ({oc.describe()})", info=oc.key())
        else:
            data = C.compile_mlir(mlir, flags, what=f"{e.name} ({oc.describe()})")
        dt = time.perf_counter() - t0
        fn = function_signature(oc)
        check_module(data, fn, f"{e.name}.{t}.vmfb (just compiled)")
        if progress:
            progress(e, t, dt)
        return e, t, oc, mlir, flags, data, dt, was_cached

    remote = None
    if cluster:
        from ..cluster.bundle import ClusterCompiler
        remote = ClusterCompiler(cluster, min_workers)
        jobs = max(jobs, remote.threads)
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        results = list(pool.map(one, jobs_list))
    finally:
        if remote is not None:
            remote.close()   # first: a thread still waiting on a worker (Ctrl-C) then returns at once
        pool.shutdown(wait=True, cancel_futures=True)

    staging = _staging(out)
    try:
        manifest, per_target, compiled, cached = _write(staging, results, tlist, cfg, cpu, flags_of, version,
                                                        revision, iree, stamp)
        _publish(staging, out, old)
    except BaseException as e:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(e, OSError):   # a full disk: no partial bundle, and the file named (issue 29.6)
            raise QDQError(f"--out {out}: cannot write {e.filename or 'the bundle'}: {e.strerror or e}; the bundle "
                           f"was left as it was", arg="out") from None
        raise
    return BuildResult(out, manifest, time.perf_counter() - t_start, dict(per_target), compiled, cached)


def _write(staging: Path, results, tlist, cfg, cpu, flags_of, version, revision, iree, stamp):
    """The artifacts and the manifest into ``staging``: (manifest, seconds per target, compiled, cached)."""
    artifacts, per_target = [], collections.OrderedDict((t, 0.0) for t in tlist)
    compiled = cached = 0
    for e, t, oc, mlir, flags, data, dt, was_cached in results:
        fname = f"{e.name}.{t}.vmfb"
        _write_file(staging / fname, data)
        per_target[t] = per_target.get(t, 0.0) + dt
        cached += was_cached
        compiled += not was_cached
        tgt = T.get(t)
        art = {
            "name": e.name, "op": e.op, "attrs": dict(oc.attrs), "dtype": e.dtype, "semantics": e.semantics,
            "params": e.params,
            "shape": list(oc.shape), "function": function_signature(oc),
            "target": t, "backend": tgt.backend, "driver": tgt.driver,
            "file": fname, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "mlir_sha256": hashlib.sha256(mlir.encode()).hexdigest(),
            "compiler_flags": list(flags), "iree_compiler_version": version,
            "bit_exact": cpu.bit_exact if t == "cpu" else tgt.bit_exact,
            "build_time": stamp,
        }
        if t == "cpu":
            art["cpu"] = cpu.record()
        artifacts.append(art)
    tinfo = {}
    for t in tlist:
        tgt = T.get(t)
        tinfo[t] = {"backend": tgt.backend, "driver": tgt.driver,
                    "bit_exact": cpu.bit_exact if t == "cpu" else tgt.bit_exact,
                    "compiler_flags": list(flags_of(t))}
        if t == "cpu":
            tinfo[t]["cpu"] = cpu.record()
    manifest = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "name": cfg.name,
        "generator": f"qdq_compiler {__version__}",
        "iree_compiler_version": version, "iree_compiler_revision": revision, "iree": iree,
        "build_time": stamp, "targets": tinfo, "artifacts": artifacts,
    }
    text = json.dumps(manifest, indent=1, ensure_ascii=True) + "\n"
    _write_file(staging / MANIFEST, text.encode())
    return manifest, per_target, compiled, cached


def _write_file(path: Path, data: bytes):
    """atomic_write, its OSError naming the bundle's file."""
    try:
        atomic_write(path, data)
    except OSError as e:
        raise OSError(e.errno, e.strerror, path.name) from None


def _staging(out: Path) -> Path:
    """A fresh directory beside ``out`` that the bundle is written into, then renamed to ``out``: a bundle
    appears whole or not at all (a full disk used to leave .vmfb files and no manifest)."""
    staging = out.parent / f".{out.name}.building-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
    except OSError as e:
        raise QDQError(f"--out {out}: cannot create it: {e.strerror}", arg="out") from None
    return staging


def _publish(staging: Path, out: Path, old: set[str]):
    """``staging`` becomes ``out``. Files of an existing ``out`` that its old manifest did not list (a user's
    notes) move along; the previous bundle's own files go."""
    if out.is_dir() and any(out.iterdir()):
        for p in out.iterdir():
            if p.name != MANIFEST and p.name not in old and not (staging / p.name).exists():
                os.replace(p, staging / p.name)
        previous = out.parent / f".{out.name}.previous-{os.getpid()}"
        os.replace(out, previous)
        os.replace(staging, out)
        shutil.rmtree(previous, ignore_errors=True)
    else:
        os.replace(staging, out)   # an empty directory is replaced, a missing one made


def _prepare_out(out: Path) -> set[str]:
    """Check ``out``: an existing directory must be empty or hold a bundle (whose files are returned); the
    bundle is written beside it and renamed into place (_staging, _publish)."""
    if out.exists() and not out.is_dir():
        raise QDQError(f"--out {out} exists and is not a directory", arg="out")
    if out.is_dir():
        names = {p.name for p in out.iterdir()}
        if names and MANIFEST not in names:
            raise QDQError(f"--out {out} is not empty and holds no {MANIFEST}; refusing to write a bundle into it",
                           arg="out")
        old = set()
        if MANIFEST in names:
            try:
                old = {a["file"] for a in json.loads((out / MANIFEST).read_text()).get("artifacts", [])
                       if isinstance(a, dict) and isinstance(a.get("file"), str) and "/" not in a["file"]
                       and a["file"].endswith(".vmfb")}
            except (OSError, ValueError, AttributeError):
                old = set()
        return old
    return set()
