"""Compile StableHLO text to a .vmfb with iree-compile, through a content-addressed on-disk cache.

The key is a SHA-256 of the rendered MLIR, the flags and the compiler version. Artifacts are written
atomically (temp file + rename), each with a sidecar holding its own SHA-256, and verified on every
load: a truncated or corrupted file is rebuilt, never loaded. Safe across processes: concurrent
compiles of one key each write their own temp file and the last rename wins with identical bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

from .errors import CompileError, QDQError

DEFAULT_TIMEOUT_S = 300


def compiler_version() -> str:
    from iree.compiler import version
    return version.VERSION


def iree_compile_path() -> str:
    from iree.compiler.tools.binaries import find_tool
    return find_tool("iree-compile")


def cache_dir() -> Path:
    """QDQ_CACHE_DIR, else $XDG_CACHE_HOME/qdq_compiler, else ~/.cache/qdq_compiler."""
    env = os.environ.get("QDQ_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "qdq_compiler"


def cache_key(mlir: str, flags: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"mlir": mlir, "flags": list(flags), "compiler": compiler_version()}, sort_keys=True).encode())
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compile_mlir(mlir: str, flags: tuple[str, ...], *, what: str = "module", timeout_s: float | None = None) -> bytes:
    """Run iree-compile on ``mlir``; a failure or a hang becomes a CompileError with the text and command."""
    cmd = [iree_compile_path(), "-", "-o", "-", *flags]
    timeout_s = timeout_s or float(os.environ.get("QDQ_COMPILE_TIMEOUT", DEFAULT_TIMEOUT_S))
    try:
        proc = subprocess.run(cmd, input=mlir.encode(), capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise CompileError(f"iree-compile timed out after {timeout_s:g} s compiling {what}; command: "
                           f"{' '.join(cmd)}", mlir=mlir, command=cmd) from None
    if proc.returncode != 0 or not proc.stdout:
        err = proc.stderr.decode(errors="replace").strip()
        raise CompileError(f"iree-compile failed for {what} (exit {proc.returncode}):\n{err}\n"
                           f"command: {' '.join(cmd)} < module.mlir", mlir=mlir, command=cmd)
    return proc.stdout


def _atomic_write(path: Path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read_verified(vmfb: Path, meta: Path) -> bytes | None:
    try:
        want = json.loads(meta.read_text())["sha256"]
        data = vmfb.read_bytes()
    except (OSError, ValueError, KeyError):
        return None
    return data if sha256_bytes(data) == want else None


def cached_compile(mlir: str, flags: tuple[str, ...], *, what: str = "module", info: dict | None = None) -> tuple[Path | None, bytes]:
    """The .vmfb bytes for (mlir, flags): from the cache when a verified copy exists, else compiled.

    Returns (path or None if the cache is unusable, bytes). An unwritable cache dir falls back to
    compiling in memory, with a warning on stderr.
    """
    key = cache_key(mlir, flags)
    d = cache_dir()
    vmfb, meta = d / f"{key}.vmfb", d / f"{key}.json"
    if vmfb.exists():
        data = _read_verified(vmfb, meta)
        if data is not None:
            return vmfb, data
    data = compile_mlir(mlir, flags, what=what)
    try:
        d.mkdir(parents=True, exist_ok=True)
        _atomic_write(vmfb, data)
        record = {"sha256": sha256_bytes(data), "flags": list(flags), "compiler": compiler_version(),
                  "what": what, **(info or {})}
        _atomic_write(meta, json.dumps(record, sort_keys=True, indent=1).encode())
    except OSError as e:
        import sys
        print(f"qdq_compiler: warning: cache dir {d} is not writable ({e.strerror}); "
              f"compiled in memory (set QDQ_CACHE_DIR)", file=sys.stderr)
        return None, data
    return vmfb, data


def cache_info() -> dict:
    d = cache_dir()
    files = list(d.glob("*.vmfb")) if d.is_dir() else []
    return {"dir": str(d), "artifacts": len(files), "bytes": sum(f.stat().st_size for f in files)}


def cache_clear() -> int:
    d = cache_dir()
    n = 0
    if d.is_dir():
        for f in list(d.glob("*.vmfb")) + list(d.glob("*.json")) + list(d.glob("*.tmp")):
            try:
                f.unlink()
                n += f.suffix == ".vmfb"
            except OSError as e:
                raise QDQError(f"cannot clear cache file {f}: {e.strerror}", arg="cache") from None
    return n
