"""Which IREE runs: the iree-base-compiler/-runtime packages, or a build named by ``QDQ_IREE_TOOLS``.

Finds the tools, reads the compiler's and the runtime's versions, refuses a pair that disagrees
(``check_iree``) and says which ran (``iree_info``, for reports and manifests). ``compile.py`` keys its
cache on ``compiler_identity`` so artifacts of different IREEs never mix.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from pathlib import Path

from .errors import QDQError


# -- which IREE: the iree-base-* packages, or a build named by QDQ_IREE_TOOLS ---------------------------------
# Compiler engineers point the whole package (qdqc compile/validate, the lit suite, bundles) at their own
# IREE: QDQ_IREE_TOOLS=<build>/tools for iree-compile and the runtime tools, and the build's Python
# runtime (iree.runtime) on PYTHONPATH. The compiler's version then comes from ``iree-compile --version``,
# the runtime's from the imported iree.runtime, and the two must agree (see _version_disagreement).
IREE_TOOLS_ENV = "QDQ_IREE_TOOLS"
IREE_ALLOW_MISMATCH_ENV = "QDQ_IREE_ALLOW_MISMATCH"
PACKAGE_TOOLS = "iree-base-compiler package"
_VERSION_LINE = re.compile(r"IREE compiler version\s+(\S+)(?:\s+@\s+(\S+))?")


def iree_tools_dir() -> Path | None:
    """The directory named by QDQ_IREE_TOOLS (resolved), or None when unset (the pip packages' tools).

    A QDQ_IREE_TOOLS that is not a directory is a QDQError naming it."""
    text = os.environ.get(IREE_TOOLS_ENV, "").strip()
    if not text:
        return None
    p = Path(text).expanduser()
    if not p.is_dir():
        raise QDQError(f"{IREE_TOOLS_ENV}={text!r} is not a directory: point it at the tools directory of an "
                       f"IREE build (e.g. <iree-build>/tools, where iree-compile is), or unset it to use the "
                       f"{PACKAGE_TOOLS}", arg=IREE_TOOLS_ENV)
    return p.resolve()


def iree_tool(name: str) -> str:
    """``name`` (iree-compile, iree-run-module, ...) from QDQ_IREE_TOOLS; a QDQError if it is not there.
    Only for QDQ_IREE_TOOLS: without it, use iree_compile_path / targets.cpu.runtime_tool."""
    d = iree_tools_dir()
    if d is None:
        raise QDQError(f"iree_tool({name!r}) needs {IREE_TOOLS_ENV}", arg=IREE_TOOLS_ENV)
    p = d / name
    if not (p.is_file() and os.access(p, os.X_OK)):
        raise QDQError(f"{IREE_TOOLS_ENV}={str(d)!r} has no executable {name} (looked for {p}); build it "
                       f"(e.g. cmake --build <iree-build> --target {name}) or unset {IREE_TOOLS_ENV}",
                       arg=IREE_TOOLS_ENV)
    return str(p)


def _stat_key(p: str) -> tuple:
    try:
        st = os.stat(p)
        return (p, st.st_size, st.st_mtime_ns)
    except OSError:
        return (p, None, None)


@functools.lru_cache(maxsize=16)
def _tool_version(stat_key: tuple) -> tuple[str, str | None]:
    """(version, revision or None) as ``iree-compile --version`` prints them; cached per binary (path,
    size, mtime): a rebuild is asked again."""
    import subprocess
    tool = stat_key[0]
    try:
        proc = subprocess.run([tool, "--version"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise QDQError(f"cannot run {tool} --version ({IREE_TOOLS_ENV}): {e}", arg=IREE_TOOLS_ENV) from None
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    m = _VERSION_LINE.search(text)
    if proc.returncode != 0 or not m:
        lines = text.strip().splitlines()
        raise QDQError(f"{tool} --version ({IREE_TOOLS_ENV}) printed no 'IREE compiler version ...' line "
                       f"(exit {proc.returncode}): {' | '.join(lines[:5]) or '(no output)'}", arg=IREE_TOOLS_ENV)
    return m.group(1), m.group(2)


def _compiler_release() -> tuple[str, str | None]:
    """(version, revision or None) of the compiler in use."""
    if iree_tools_dir() is not None:
        return _tool_version(_stat_key(iree_tool("iree-compile")))
    version = _package_module("version")
    return version.VERSION, (getattr(version, "REVISIONS", None) or {}).get("IREE")


def _compiler_package_dir() -> Path:
    """The directory of the iree.compiler package, found without importing it (its __init__ loads the MLIR
    libraries: 37 ms of a fresh process's first call, for a version string and a path)."""
    import importlib.util
    spec = importlib.util.find_spec("iree.compiler")
    if spec is None or not spec.submodule_search_locations:
        raise QDQError("the IREE compiler is not installed (pip install iree-base-compiler), and "
                       f"{IREE_TOOLS_ENV} names no build", arg=IREE_TOOLS_ENV)
    return Path(list(spec.submodule_search_locations)[0])


def _package_module(name: str):
    """iree.compiler.<name> (a plain Python file of the package), loaded on its own."""
    import importlib.util
    import sys
    full = f"iree.compiler.{name}"
    if full in sys.modules:
        return sys.modules[full]
    spec = importlib.util.spec_from_file_location(f"_qdq_iree_compiler_{name}", _compiler_package_dir() / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compiler_version() -> str:
    """The version of the iree-compile in use: the package's, or what QDQ_IREE_TOOLS' iree-compile prints
    (``(unknown)`` for a build without embedded release info)."""
    return _compiler_release()[0]


def runtime_release() -> tuple[str | None, str | None, str | None]:
    """(version, revision, where) of the importable IREE Python runtime (iree.runtime: the iree-base-runtime
    package, or a build's bindings on PYTHONPATH); (None, None, why) when it cannot be imported."""
    try:
        try:  # what iree.runtime.version re-exports, without loading the runtime's native library
            from iree._runtime_libs import version as v
        except ImportError:
            from iree.runtime import version as v
    except Exception as e:  # noqa: BLE001 - no runtime, or one without version info
        return None, None, f"iree.runtime not importable or without version info ({type(e).__name__}: {e})"
    return (getattr(v, "VERSION", None), (getattr(v, "REVISIONS", None) or {}).get("IREE"),
            str(Path(v.__file__).resolve().parent))


def _norm_version(v: str | None) -> str | None:
    """A release version to compare: None when unknown; PEP 440 local parts (``+...``) dropped."""
    if not v or v.strip() in ("(unknown)", "unknown", ""):
        return None
    return v.strip().split("+", 1)[0]


def _norm_revision(r: str | None) -> str | None:
    r = (r or "").strip().lower()
    return r if re.fullmatch(r"[0-9a-f]{7,40}", r) else None


def _version_disagreement(cv, crev, rv, rrev) -> str | None:
    """Why compiler and runtime disagree, or None. They disagree when both report a release version and
    the versions differ (``+local`` parts aside), or both report a source revision (git hash) and the
    revisions differ. An unknown side cannot disagree (it is recorded as unchecked)."""
    ncv, nrv = _norm_version(cv), _norm_version(rv)
    if ncv and nrv and ncv != nrv:
        return f"release versions differ: compiler {cv}, runtime {rv}"
    a, b = _norm_revision(crev), _norm_revision(rrev)
    if a and b and not (a.startswith(b) or b.startswith(a)):
        return f"source revisions differ: compiler {cv} @ {crev}, runtime {rv} @ {rrev}"
    return None


def _build_fingerprint(tool: str) -> list:
    """(path, size, mtime) of QDQ_IREE_TOOLS' iree-compile and of the compiler library next to it: a local
    build's version string stays the same across rebuilds (or is ``(unknown)``), so the cache key needs this."""
    d = Path(tool).parent
    libs = sorted({str(p.resolve()) for pat in ("libIREECompiler.so*", "libIREECompiler.dylib", "IREECompiler.dll")
                   for base in (d, d.parent / "lib", d.parent / "lib64") for p in base.glob(pat)})
    return [list(_stat_key(str(Path(tool).resolve())))] + [list(_stat_key(p)) for p in libs]


_INFO: dict = {}


def iree_info() -> dict:
    """Which IREE runs: compiler_version/compiler_revision/compiler (the iree-compile), runtime_version/
    runtime_revision/runtime (where the Python runtime comes from), tools (the QDQ_IREE_TOOLS directory or
    "iree-base-compiler package") and version_check ("ok", "unchecked: ...", "MISMATCH: ..." or
    "mismatch allowed by QDQ_IREE_ALLOW_MISMATCH: ..."). Cached per QDQ_IREE_TOOLS and iree-compile binary.
    Reports; does not refuse (check_iree does). A bad QDQ_IREE_TOOLS is a QDQError."""
    d = iree_tools_dir()
    tool = iree_tool("iree-compile") if d is not None else None
    allow = os.environ.get(IREE_ALLOW_MISMATCH_ENV, "").strip() not in ("", "0")
    key = (str(d), _stat_key(tool) if tool else None, allow)
    info = _INFO.get(key)
    if info is not None:
        return dict(info)
    cv, crev = _compiler_release()
    if tool is None:
        with contextlib.suppress(Exception):
            tool = iree_compile_path()
    rv, rrev, where = runtime_release()
    why = _version_disagreement(cv, crev, rv, rrev)
    if why:
        check = (f"mismatch allowed by {IREE_ALLOW_MISMATCH_ENV}: {why}" if allow else f"MISMATCH: {why}")
    elif _norm_version(cv) is None or _norm_version(rv) is None:
        unknown = [s for s, v in (("compiler", cv), ("runtime", rv)) if _norm_version(v) is None]
        check = f"unchecked: {' and '.join(unknown)} version unknown"
    else:
        check = "ok"
    info = {"compiler_version": cv, "compiler_revision": crev, "compiler": tool,
            "runtime_version": rv, "runtime_revision": rrev, "runtime": where,
            "tools": str(d) if d is not None else PACKAGE_TOOLS, "version_check": check}
    _INFO[key] = info
    return dict(info)


def check_iree() -> dict:
    """iree_info(), refusing (QDQError naming both versions and the fix) when compiler and runtime disagree."""
    info = iree_info()
    if info["version_check"].startswith("MISMATCH"):
        src = (f"{IREE_TOOLS_ENV}={info['tools']}" if info["tools"] != PACKAGE_TOOLS else "the iree-base-compiler package")
        raise QDQError(
            f"the IREE compiler and runtime disagree ({info['version_check'][len('MISMATCH: '):]}): iree-compile {info['compiler_version']}"
            f"{' @ ' + info['compiler_revision'] if info['compiler_revision'] else ''} (from {src}) but the Python "
            f"runtime iree.runtime is {info['runtime_version']}"
            f"{' @ ' + info['runtime_revision'] if info['runtime_revision'] else ''} (from {info['runtime']}). "
            f"Use the runtime of the same IREE: put the build's Python runtime on PYTHONPATH "
            f"(PYTHONPATH=<iree-build>/runtime/bindings/python), or install the matching iree-base-runtime; "
            f"{IREE_ALLOW_MISMATCH_ENV}=1 runs anyway (recorded in reports)", arg=IREE_TOOLS_ENV)
    return info


def compiler_identity() -> str:
    """What the cache keys name as "the compiler": the version for the package's iree-compile (so existing
    keys stay valid); for QDQ_IREE_TOOLS also the revision and the binary's path, size and mtime, so that
    artifacts of different builds (even of one unversioned checkout) never mix. Refuses a version mismatch."""
    check_iree()
    if iree_tools_dir() is None:
        return compiler_version()
    cv, crev = _compiler_release()
    return json.dumps({"version": cv, "revision": crev, "build": _build_fingerprint(iree_tool("iree-compile"))})


def iree_compile_path() -> str:
    """iree-compile: from QDQ_IREE_TOOLS when set (a QDQError if missing there), else the package's."""
    if iree_tools_dir() is not None:
        return iree_tool("iree-compile")
    exe = _compiler_package_dir() / "_mlir_libs" / "iree-compile"
    if exe.is_file():  # where the package keeps it; find_tool (which imports iree.compiler) otherwise
        return str(exe)
    from iree.compiler.tools.binaries import find_tool
    return find_tool("iree-compile")
