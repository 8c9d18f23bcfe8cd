"""Compile StableHLO text to a .vmfb with iree-compile, through a content-addressed on-disk cache.

The key is a SHA-256 of the rendered MLIR, the flags and the compiler version. Artifacts are written
atomically (temp file + rename), each with a sidecar holding its own SHA-256, and verified on every
load: a truncated or corrupted file is rebuilt, never loaded. Safe across processes: a compile of one
key holds an exclusive lock (``<key>.lock``, ``flock``) while it compiles and writes, so concurrent
processes wait for the first one and then load its verified artifact; where locking is not possible
each process writes its own temp file and the last rename wins with identical bytes.

iree-compile runs in its own process group with a timeout (``QDQ_COMPILE_TIMEOUT``, seconds, default
300); a failure, a crash or a hang becomes a ``CompileError`` keeping the rendered MLIR (``.mlir``)
and the exact command (``.command``) for a bug report.

Which IREE: the iree-base-compiler/-runtime packages, or a build named by ``QDQ_IREE_TOOLS`` (its
iree-compile and runtime tools; its Python runtime on PYTHONPATH). ``iree_info()`` says which ran (for
reports); ``check_iree()`` refuses a compiler and a runtime that disagree. The cache keys name the compiler
(``compiler_identity``): artifacts of different IREEs never mix.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from .errors import CompileError, QDQError
from .fileio import atomic_write, sha256_bytes
from .iree_tools import (IREE_ALLOW_MISMATCH_ENV, IREE_TOOLS_ENV, PACKAGE_TOOLS, check_iree,  # noqa: F401
                         compiler_identity, compiler_version, iree_compile_path, iree_info, iree_tool,
                         iree_tools_dir, runtime_release)

DEFAULT_TIMEOUT_S = 300
TIMEOUT_ENV = "QDQ_COMPILE_TIMEOUT"
CACHE_ENV = "QDQ_CACHE_DIR"
# The only names the cache writes (and so the only ones ``cache_clear`` removes): <sha256>.vmfb,
# <sha256>.json, <sha256>.lock and the temp files of an interrupted write, <sha256>.{vmfb,json}.*.tmp;
# in its ``index/`` subdirectory (the configuration -> key index, see lookup_index), <sha256>.key and their
# temp files.
_CACHE_FILE = re.compile(r"^[0-9a-f]{64}\.(vmfb|json|lock|(vmfb|json)\..+\.tmp)$")
_INDEX_DIR = "index"
_INDEX_FILE = re.compile(r"^[0-9a-f]{64}\.key(\..+\.tmp)?$")
# and in ``templates/``, Jinja's compiled templates (emit.py: each process's first render compiled every template
# it used, ~0.4 s; Jinja checks each entry against its template's source) and their temp files
_TEMPLATES_DIR = "templates"
_TEMPLATE_FILE = re.compile(r"^__jinja2_[0-9a-f]{40}\.cache(.+\.tmp)?$")
_MAX_STDERR_LINES = 200


def cache_dir() -> Path:
    """QDQ_CACHE_DIR, else $XDG_CACHE_HOME/qdq_compiler, else ~/.cache/qdq_compiler."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "qdq_compiler"


def template_bytecode_dir() -> Path:
    """Where Jinja keeps the compiled templates (emit.py), inside the cache dir."""
    return cache_dir() / _TEMPLATES_DIR


def cache_key(mlir: str, flags: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"mlir": mlir, "flags": list(flags), "compiler": compiler_identity()}, sort_keys=True).encode())
    return h.hexdigest()


def compile_timeout() -> float:
    """The compile timeout in seconds: QDQ_COMPILE_TIMEOUT, else 300. A bad value is a QDQError."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return float(DEFAULT_TIMEOUT_S)
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise QDQError(f"{TIMEOUT_ENV}={text!r} must be a positive number of seconds (default {DEFAULT_TIMEOUT_S})",
                       arg=TIMEOUT_ENV)
    return value


def _command_text(cmd: list[str]) -> str:
    import shlex
    return " ".join(shlex.quote(c) for c in cmd) + " < module.mlir"


def _kill_group(proc: subprocess.Popen):
    """Kill iree-compile and anything it started (it runs in its own session)."""
    import signal
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        with contextlib.suppress(OSError):
            proc.kill()


def compile_mlir(mlir: str, flags: tuple[str, ...], *, what: str = "module", timeout_s: float | None = None) -> bytes:
    """Run iree-compile on ``mlir``; a failure or a hang becomes a CompileError with the text and command."""
    import subprocess  # here: a process that finds its artifacts in the cache never loads it
    if timeout_s is None:
        timeout_s = compile_timeout()
    elif not timeout_s > 0:
        raise QDQError(f"timeout_s={timeout_s!r} must be a positive number of seconds", arg="timeout_s")
    try:
        check_iree()  # cached: QDQ_IREE_TOOLS' problems and a compiler/runtime mismatch are QDQErrors
        tool = iree_compile_path()
    except QDQError:  # says what is wrong itself (names QDQ_IREE_TOOLS, or both versions)
        raise
    except Exception as e:  # no iree-compile installed (find_tool raises its own error types)
        raise CompileError(f"cannot find iree-compile to compile {what}: {e}", mlir=mlir,
                           command=["iree-compile", "-", "-o", "-", *flags]) from None
    cmd = [tool, "-", "-o", "-", *flags]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        raise CompileError(f"cannot run iree-compile ({e.strerror or e}) to compile {what}; command: "
                           f"{_command_text(cmd)}", mlir=mlir, command=cmd) from None
    try:
        out, err = proc.communicate(mlir.encode(), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=10)
        raise CompileError(f"iree-compile timed out after {timeout_s:g} s compiling {what} (set {TIMEOUT_ENV} to "
                           f"allow longer); command: {_command_text(cmd)}", mlir=mlir, command=cmd) from None
    except BaseException:  # KeyboardInterrupt and the like: leave no compiler behind
        _kill_group(proc)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=10)
        raise
    if proc.returncode != 0 or not out:
        lines = err.decode(errors="replace").strip().splitlines()
        if len(lines) > _MAX_STDERR_LINES:
            lines = lines[:_MAX_STDERR_LINES] + [f"... ({len(lines) - _MAX_STDERR_LINES} more lines)"]
        how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exit {proc.returncode}" if proc.returncode else "exit 0 but wrote no module")
        body = "\n".join(lines) or "(no diagnostics)"
        raise CompileError(f"iree-compile failed for {what} ({how}):\n{body}\ncommand: {_command_text(cmd)}",
                           mlir=mlir, command=cmd)
    return out


def read_verified(vmfb: Path, meta: Path) -> bytes | None:
    """The artifact's bytes if they hash to its sidecar's SHA-256; None if missing, truncated or corrupted."""
    try:
        want = json.loads(meta.read_text())["sha256"]
        data = vmfb.read_bytes()
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    return data if isinstance(want, str) and sha256_bytes(data) == want else None


@contextlib.contextmanager
def _key_lock(d: Path, key: str):
    """An exclusive inter-process lock for one key; yields False (no lock) where one cannot be taken."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (not POSIX)
        yield False
        return
    try:
        fd = os.open(d / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        except OSError:  # e.g. a file system without flock
            locked = False
        yield locked
    finally:
        os.close(fd)  # releases the lock


_warned: set[str] = set()


def _warn_unwritable(d: Path, e: OSError):
    if str(d) in _warned:
        return
    _warned.add(str(d))
    print(f"qdq_compiler: warning: cache dir {d} is not writable ({e.strerror or e}); compiling in memory "
          f"(set {CACHE_ENV} to a writable directory)", file=sys.stderr)


def cached_compile(mlir: str, flags: tuple[str, ...], *, what: str = "module", info: dict | None = None) -> tuple[Path | None, bytes]:
    """The .vmfb bytes for (mlir, flags): from the cache when a verified copy exists, else compiled.

    Returns (path or None if the cache is unusable, bytes). An unwritable cache dir falls back to
    compiling in memory, with a warning on stderr (once per directory and process).
    """
    key = cache_key(mlir, flags)
    d = cache_dir()
    vmfb, meta = d / f"{key}.vmfb", d / f"{key}.json"
    data = read_verified(vmfb, meta)
    if data is not None:
        return vmfb, data
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        _warn_unwritable(d, e)
        return None, compile_mlir(mlir, flags, what=what)
    with _key_lock(d, key):
        # Another process may have built it while this one waited for the lock.
        data = read_verified(vmfb, meta)
        if data is not None:
            return vmfb, data
        data = compile_mlir(mlir, flags, what=what)
        try:
            _write_pair(vmfb, meta, data, artifact_record(data, flags, what=what, info=info))
        except OSError as e:
            _warn_unwritable(d, e)
            return None, data
    return vmfb, data


def artifact_record(data: bytes, flags: tuple[str, ...], *, what: str = "module", info: dict | None = None) -> dict:
    """The sidecar of an artifact: its SHA-256 (checked on every load), size, flags, compiler, what it is."""
    return {"sha256": sha256_bytes(data), "bytes": len(data), "flags": list(flags),
            "compiler": compiler_version(), "what": what, **(info or {})}


def _write_pair(vmfb: Path, meta: Path, data: bytes, record: dict):
    # The sidecar goes first: a reader that sees the new .vmfb also sees its hash, and a crash between the
    # two writes leaves a pair that fails verification and is rebuilt.
    atomic_write(meta, json.dumps(record, sort_keys=True, indent=1, default=str).encode())
    atomic_write(vmfb, data)


def store_artifact(key: str, data: bytes, record: dict) -> Path | None:
    """Put an artifact compiled in another process (a validation cluster's worker) into this cache under its
    content key, as ``cached_compile`` would have written it; the path, or None where the cache is unwritable.
    Bytes that do not hash to their record's SHA-256 are refused (a QDQError), never stored."""
    if not isinstance(record, dict) or record.get("sha256") != sha256_bytes(data):
        raise QDQError(f"artifact {key[:12]}... arrived with bytes that do not match its SHA-256; not stored",
                       arg="artifact")
    d = cache_dir()
    vmfb, meta = d / f"{key}.vmfb", d / f"{key}.json"
    if read_verified(vmfb, meta) is not None:
        return vmfb
    try:
        d.mkdir(parents=True, exist_ok=True)
        with _key_lock(d, key):
            if read_verified(vmfb, meta) is None:
                _write_pair(vmfb, meta, data, record)
    except OSError as e:
        _warn_unwritable(d, e)
        return None
    return vmfb


# -- the configuration -> artifact index -----------------------------------------------------------------
# A cache hit by configuration skips rendering and parsing: the index maps the identity of a configuration
# to the content key of its artifact. That identity must cover every input of the artifact: the config,
# the flags, the compiler, and every source that shapes the rendered program (all of the package's Python
# modules and the templates; the baked constants come from numerics, the quirks from targets, ...). A new
# release of the package therefore never serves an artifact built by the old code.


def source_fingerprint(template_dir: Path) -> str:
    """A hash of the package's Python sources and of the templates in ``template_dir``."""
    global _FINGERPRINT
    if _FINGERPRINT is None or _FINGERPRINT[0] != str(template_dir):
        h = hashlib.sha256()
        package = Path(__file__).resolve().parent
        files = sorted(package.rglob("*.py")) + sorted(Path(template_dir).glob("*.j2"))
        for f in files:
            h.update((f.name if f.suffix == ".j2" else f.relative_to(package).as_posix()).encode())
            h.update(f.read_bytes())
        _FINGERPRINT = (str(template_dir), h.hexdigest())
    return _FINGERPRINT[1]


_FINGERPRINT: tuple[str, str] | None = None


def _index_path(identity: dict) -> Path:
    ident = json.dumps({**identity, "compiler": compiler_identity()}, sort_keys=True, default=str)
    return cache_dir() / _INDEX_DIR / (hashlib.sha256(ident.encode()).hexdigest() + ".key")


def lookup_index(identity: dict) -> tuple[str, Path, bytes] | None:
    """(key, path, verified bytes) of the artifact indexed under ``identity``, or None."""
    try:
        key = _index_path(identity).read_text().strip()
        vmfb = cache_dir() / f"{key}.vmfb"
        data = read_verified(vmfb, vmfb.with_suffix(".json"))
    except OSError:
        return None
    return None if data is None else (key, vmfb, data)


def store_index(identity: dict, key: str) -> None:
    """Index the artifact ``key`` under ``identity``; best effort (the content-addressed cache holds it anyway)."""
    index = _index_path(identity)
    try:
        if index.read_text().strip() == key:   # already there (a cluster's workers install what the cache has)
            return
    except OSError:
        pass
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(index, key.encode())
    except OSError:
        pass


def _cache_files(d: Path, pattern=_CACHE_FILE) -> list[Path]:
    try:
        return [f for f in d.iterdir() if pattern.match(f.name) and f.is_file()]
    except OSError:
        return []


def cache_info() -> dict:
    """The cache dir, how many artifacts it holds and their size in bytes."""
    d = cache_dir()
    files = [f for f in _cache_files(d) if f.suffix == ".vmfb"]
    size = 0
    for f in files:
        with contextlib.suppress(OSError):
            size += f.stat().st_size
    return {"dir": str(d), "artifacts": len(files), "bytes": size}


def cache_clear() -> int:
    """Remove the cache's own files (and nothing else) from the cache dir; returns how many artifacts."""
    d = cache_dir()
    n = 0
    index, templates = d / _INDEX_DIR, d / _TEMPLATES_DIR
    for f in _cache_files(index, _INDEX_FILE) + _cache_files(templates, _TEMPLATE_FILE) + _cache_files(d):
        try:
            f.unlink()
        except FileNotFoundError:  # removed concurrently
            continue
        except OSError as e:
            raise QDQError(f"cannot clear cache file {f}: {e.strerror or e}", arg="cache") from None
        n += f.suffix == ".vmfb"
    for sub in (index, templates):
        with contextlib.suppress(OSError):  # only if empty: nothing but our own files is ever removed
            sub.rmdir()
    return n
