"""Ahead-of-time deployment bundles: many op configurations x many targets, one verified directory.

``qdqc build --config bundle.toml --out dist/`` (or :func:`build_bundle`) compiles every entry of the
config for every target into ``dist/``: one ``<entry>.<target>.vmfb`` each and a ``manifest.json``
recording, per artifact, the op, its attributes (baked into the artifact as constants), the dtype, the
function signature (``null`` = a dynamic dimension), the target, the exact compiler flags, the IREE
compiler version, the SHA-256 of the file and the build time.

Reproducible: the artifacts are byte-identical for the same config and compiler (iree-compile is
deterministic; no path or time reaches it), and so is the manifest except ``build_time``, which is the
current UTC time, or ``SOURCE_DATE_EPOCH`` when that is set (https://reproducible-builds.org), which
makes the whole bundle byte-identical.

:func:`load_bundle` verifies every file's hash and size, the runtime's compatibility (IREE version,
driver, device, and for ``cpu`` artifacts the CPU features they were compiled for), and exposes each
entry as a callable with the raw op's keyword arguments (TF's input names). Anything wrong is a
:class:`~qdq_compiler.errors.BundleError` naming the file and what differs.

The ``cpu`` target is portable by default (``x86-64-v2``, no FMA: bit-exact). ``target_cpu="host"`` or
an LLVM CPU name builds a tuned variant: the name is resolved to LLVM's (``host`` -> e.g. ``znver4``)
and FMA is switched off (``-fma,-fma4``) so it stays bit-exact. Note that in LLVM every AVX-512
feature depends on FMA, so such a build uses AVX2 at most (and is not always faster than the portable
one: IREE's masked AVX2 loads/stores are slow on AMD CPUs). ``"<cpu>,+fma"`` keeps FMA and AVX-512, the
fastest build, but IREE contracts ``a*b+c`` then, so the manifest records ``bit_exact: false``. The
loader refuses a tuned build on a CPU that lacks a feature it requires.
"""
from __future__ import annotations

import collections
import datetime as _dt
import functools
import hashlib
import inspect
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from . import registry as R
from .errors import BundleError, QDQError, QDQTypeError

SCHEMA = "qdq_compiler.bundle"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
DEFAULT_TARGETS = ("cpu",)
PORTABLE_CPU = "x86-64-v2"
# Disabling FMA switches every contraction off: fma4 is AMD's older four-operand form.
NO_FMA = ("-fma", "-fma4")

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_DTYPES = {"f32": "float32", "float32": "float32", "f64": "float64", "float64": "float64"}
_ENTRY_KEYS = ("name", "op", "attrs", "dtype", "shape", "targets")
_TOP_KEYS = ("schema_version", "name", "targets", "target_cpu", "entries")


# ----------------------------------------------------------------------------------------------
# The config


@dataclass(frozen=True)
class Entry:
    """One op configuration of a bundle config."""
    name: str
    op: str
    attrs: Mapping[str, Any]
    dtype: str
    shape: tuple
    targets: tuple[str, ...] | None = None


@dataclass(frozen=True)
class BundleConfig:
    name: str
    targets: tuple[str, ...]
    entries: tuple[Entry, ...]
    target_cpu: str | None = None
    source: str = "<config>"


def _cfg_error(source: str, msg: str) -> QDQError:
    if source.startswith("--"):  # a command-line override
        return QDQError(msg, arg=source)
    return QDQError(f"bundle config {source}: {msg}", arg="config")


def _read_config_file(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise _cfg_error(str(path), f"cannot read it: {e.strerror}") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(raw.decode())
        except (UnicodeDecodeError, ValueError) as e:
            raise _cfg_error(str(path), f"invalid JSON: {e}") from None
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise _cfg_error(str(path), "reading TOML on Python 3.10 needs the 'tomli' package "
                                        "(pip install tomli), or write the config as JSON") from None
    try:
        return tomllib.loads(raw.decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise _cfg_error(str(path), f"invalid TOML: {e}") from None


def _as_targets(value, source: str, what: str) -> tuple[str, ...]:
    from . import targets as T
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
        raise _cfg_error(source, f"{what} must be a non-empty list of target names, got {value!r}")
    out = []
    for t in value:
        if t == "cpu-host":
            raise _cfg_error(source, f"{what}: target 'cpu-host' is not portable and cannot be checked on load; "
                                     f"use target 'cpu' with target_cpu = \"host\" (--target-cpu host)")
        if t == "oracle":
            raise _cfg_error(source, f"{what}: 'oracle' is the NumPy reference, not a compile target")
        try:
            T.get(t)
        except QDQError as e:
            raise _cfg_error(source, f"{what}: {e}") from None
        if t not in out:
            out.append(t)
    return tuple(out)


def parse_config(data: Mapping | str | os.PathLike) -> BundleConfig:
    """A bundle config from a TOML/JSON file (by suffix; anything but .json is read as TOML) or a mapping.

    Top level: ``targets`` (default ``["cpu"]``), optional ``name``, ``target_cpu`` and
    ``schema_version`` (1), and ``entries``: a list of tables with ``op`` (a raw op name), ``attrs``
    (its attributes; defaults filled in), ``dtype`` (f32/f64, default f32), ``shape`` (``"?x64"`` or a
    list with ``"?"`` for dynamic dims; default ``"?"``), ``name`` (default: the op; must be unique) and
    an optional per-entry ``targets`` list.
    """
    from .config import OpConfig, parse_shape
    if isinstance(data, (str, os.PathLike)):
        source = str(data)
        data = _read_config_file(Path(data))
    else:
        source = "<mapping>"
    if not isinstance(data, Mapping):
        raise _cfg_error(source, "the top level must be a table/object")
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise _cfg_error(source, f"unknown key {unknown[0]!r}; allowed: {', '.join(_TOP_KEYS)}")
    version = data.get("schema_version", 1)
    if version != 1:
        raise _cfg_error(source, f"schema_version={version!r}; this qdq_compiler reads version 1")
    targets = _as_targets(data.get("targets", list(DEFAULT_TARGETS)), source, "targets")
    name = data.get("name", "bundle")
    if not isinstance(name, str):
        raise _cfg_error(source, f"name must be a string, got {name!r}")
    target_cpu = data.get("target_cpu")
    if target_cpu is not None and not isinstance(target_cpu, str):
        raise _cfg_error(source, f"target_cpu must be a string, got {target_cpu!r}")
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise _cfg_error(source, "'entries' must be a non-empty list of tables ([[entries]] in TOML)")
    entries, seen = [], {}
    for i, e in enumerate(raw_entries, 1):
        where = f"entries[{i}]"
        if not isinstance(e, Mapping):
            raise _cfg_error(source, f"{where} must be a table, got {e!r}")
        unknown = sorted(set(e) - set(_ENTRY_KEYS))
        if unknown:
            raise _cfg_error(source, f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(_ENTRY_KEYS)}")
        op = e.get("op")
        if not isinstance(op, str):
            raise _cfg_error(source, f"{where}: 'op' (a raw op name, see 'qdqc ops') is required")
        ename = e.get("name", op)
        where = f"entries[{i}] ({ename})"
        if not isinstance(ename, str) or not _NAME_RE.match(ename):
            raise _cfg_error(source, f"{where}: name {ename!r} must be letters, digits, '_', '-' or '.'")
        if ename in seen:
            raise _cfg_error(source, f"{where}: name {ename!r} is also entries[{seen[ename]}]'s; give each entry "
                                     f"a distinct 'name'")
        seen[ename] = i
        attrs = e.get("attrs", {})
        if not isinstance(attrs, Mapping):
            raise _cfg_error(source, f"{where}: attrs must be a table, got {attrs!r}")
        dtype = _DTYPES.get(e.get("dtype", "float32"))
        if dtype is None:
            raise _cfg_error(source, f"{where}: dtype {e.get('dtype')!r} is not supported; allowed: f32, f64")
        shape = e.get("shape", "?")
        if isinstance(shape, list):
            shape = [None if d == "?" else d for d in shape]
        try:
            shape = parse_shape(shape)
            cfg = OpConfig.make(op, dict(attrs), dtype, shape, "cpu", "baked")
        except QDQError as err:
            raise _cfg_error(source, f"{where}: {err}") from None
        etargets = _as_targets(e["targets"], source, f"{where}.targets") if "targets" in e else None
        if etargets and set(etargets) - set(targets):
            extra = sorted(set(etargets) - set(targets))[0]
            raise _cfg_error(source, f"{where}.targets: {extra!r} is not one of the bundle's targets "
                                     f"({', '.join(targets)}); an entry's targets select among them")
        entries.append(Entry(ename, op, dict(cfg.attrs), dtype, cfg.shape, etargets))
    return BundleConfig(name, targets, tuple(entries), target_cpu, source)


# ----------------------------------------------------------------------------------------------
# The CPU choice


@dataclass(frozen=True)
class CpuChoice:
    """What a ``cpu`` artifact is compiled for, as recorded in the manifest."""
    requested: str            # what the user asked for ('x86-64-v2' by default, 'host', a name...)
    name: str                 # LLVM's CPU name ('host' resolved)
    features: tuple[str, ...]  # the explicit +/- modifiers passed to iree-compile
    flags: tuple[str, ...]    # the complete compile flags of the cpu target
    llvm_features: tuple[str, ...]  # LLVM's resolved feature list (+x/-x), as IREE records it
    required: tuple[str, ...]  # the features the code may use (resolved, implied disables applied)
    bit_exact: bool
    tuned: bool

    def record(self) -> dict:
        return {"requested": self.requested, "name": self.name, "features": list(self.features),
                "tuned": self.tuned, "required_features": list(self.required)}


_PROBE_MLIR = ("func.func @probe(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
               "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")


@functools.lru_cache(maxsize=None)
def _probe_cpu(flags: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(LLVM CPU name, its feature list) as IREE resolves ``flags``: compiled to executable sources."""
    from . import compile as C
    cmd = [C.iree_compile_path(), "-", "--compile-to=executable-sources", *flags]
    try:
        proc = subprocess.run(cmd, input=_PROBE_MLIR.encode(), capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:  # pragma: no cover
        raise QDQError(f"iree-compile timed out resolving the CPU ({' '.join(flags)})", arg="target_cpu") from None
    text = proc.stdout.decode(errors="replace")
    m_cpu = re.search(r'\bcpu = "([^"]*)"', text)
    m_feat = re.search(r'\bcpu_features = "([^"]*)"', text)
    if proc.returncode != 0 or not m_cpu:
        cpu = next((f.split("=", 1)[1] for f in flags if f.startswith("--iree-llvmcpu-target-cpu=")), "?")
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise QDQError(f"target CPU {cpu!r} is not a CPU LLVM knows for x86-64 ({err[-1] if err else 'no output'}); "
                       f"use 'host', a level such as x86-64-v3, or a name such as haswell, skylake-avx512, znver3",
                       arg="target_cpu")
    feats = tuple(f for f in (m_feat.group(1) if m_feat else "").split(",") if f)
    return m_cpu.group(1), feats


def _enabled_features(llvm_features: Sequence[str]) -> tuple[str, ...]:
    """The features left enabled by a +/- list (last one wins), with LLVM's implied disables applied:
    every AVX-512/AVX10 feature depends on FMA (and on AVX2), so ``-fma`` or ``-avx2`` removes them."""
    state: dict[str, bool] = {}
    for f in llvm_features:
        if f[:1] in "+-":
            state[f[1:]] = f[0] == "+"
    on = {f for f, v in state.items() if v}
    if not state.get("fma", False) or not state.get("avx2", False):
        on = {f for f in on if not (f.startswith("avx512") or f.startswith("avx10") or f in ("evex512", "amx-avx512"))}
    if not state.get("avx", False):
        on = {f for f in on if not (f.startswith("avx") or f in ("fma", "f16c", "vaes", "vpclmulqdq"))}
    return tuple(sorted(on))


def resolve_cpu(target_cpu: str | None) -> CpuChoice:
    """The ``cpu`` target's flags for ``target_cpu``.

    ``None``/``"portable"``/``"x86-64-v2"``: the portable default. Else ``"NAME[,+feat,-feat...]"``
    where NAME is ``host`` or an LLVM CPU name: FMA is disabled (bit-exact) unless ``+fma`` is given.
    """
    from . import targets as T
    base = T.get("cpu").compile_flags
    if target_cpu is None or target_cpu.strip() in ("", "portable", PORTABLE_CPU):
        name, llvm = _probe_cpu(base)
        return CpuChoice(PORTABLE_CPU, name, (), base, llvm, _enabled_features(llvm), True, False)
    parts = [p.strip() for p in target_cpu.split(",") if p.strip()]
    requested, user_feats = parts[0], tuple(parts[1:])
    for f in user_feats:
        if f[:1] not in "+-" or not re.match(r"^[+-][A-Za-z0-9_.-]+$", f):
            raise QDQError(f"target CPU feature {f!r} must look like +name or -name (LLVM's names, e.g. +fma, -avx512f)",
                           arg="target_cpu")
    if not re.match(r"^[A-Za-z0-9_.-]+$", requested):
        raise QDQError(f"target CPU {requested!r} is not a CPU name", arg="target_cpu")
    stripped = tuple(f for f in base if not f.startswith(("--iree-llvmcpu-target-cpu=",
                                                          "--iree-llvmcpu-target-cpu-features=")))
    name = requested
    if requested == "host":  # IREE refuses 'host' with explicit features: resolve the name first
        name, _ = _probe_cpu(stripped + ("--iree-llvmcpu-target-cpu=host",))
    keep_fma = "+fma" in user_feats
    feats = (() if keep_fma else NO_FMA) + user_feats
    flags = stripped + (f"--iree-llvmcpu-target-cpu={name}",)
    if feats:
        flags += ("--iree-llvmcpu-target-cpu-features=" + ",".join(feats),)
    resolved, llvm = _probe_cpu(flags)
    enabled = _enabled_features(llvm)
    return CpuChoice(requested, resolved, feats, flags, llvm, enabled,
                     bit_exact="fma" not in enabled and "fma4" not in enabled, tuned=True)


# Host CPU features, in LLVM's names. /proc/cpuinfo's flag for each LLVM feature the loader checks.
_PROC_FLAGS = {
    "sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2",
    "sse4a": "sse4a", "cmov": "cmov", "cx8": "cx8", "cx16": "cx16", "fxsr": "fxsr", "mmx": "mmx", "x87": "fpu",
    "sahf": "lahf_lm", "popcnt": "popcnt", "crc32": "sse4_2", "avx": "avx", "avx2": "avx2", "fma": "fma",
    "fma4": "fma4", "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm", "movbe": "movbe",
    "aes": "aes", "pclmul": "pclmulqdq", "adx": "adx", "sha": "sha_ni", "gfni": "gfni", "vaes": "vaes",
    "vpclmulqdq": "vpclmulqdq", "avx512f": "avx512f", "avx512cd": "avx512cd", "avx512bw": "avx512bw",
    "avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512ifma": "avx512ifma", "avx512vbmi": "avx512vbmi",
    "avx512vbmi2": "avx512_vbmi2", "avx512vnni": "avx512_vnni", "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq", "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16",
    "avxvnni": "avx_vnni", "amx-tile": "amx_tile", "amx-int8": "amx_int8", "amx-bf16": "amx_bf16",
}


def _runtime_tool(name: str) -> str | None:
    """A native tool shipped by iree-base-runtime (no Python wrapper), else one on PATH."""
    try:
        import iree._runtime_libs as libs
        p = Path(libs.__file__).parent / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    except ImportError:  # pragma: no cover
        pass
    return shutil.which(name)


@functools.lru_cache(maxsize=1)
def detect_host_cpu_features() -> tuple[frozenset[str], frozenset[str]]:
    """(the host's features, the features that could be checked), in LLVM's names.

    ``iree-cpuinfo`` (IREE's own view, the CPU's and the OS's support) answers for the features it
    reports; /proc/cpuinfo, where there is one, for the others in ``_PROC_FLAGS``.
    """
    have, known = set(), set()
    tool = _runtime_tool("iree-cpuinfo")
    if tool:
        try:
            out = subprocess.run([tool], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):  # pragma: no cover
            out = ""
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] in ("0", "1"):
                known.add(parts[0])
                if parts[1] == "1":
                    have.add(parts[0])
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    m = re.search(r"^flags\s*:(.*)$", text, re.M)
    if m:
        flags = set(m.group(1).split())
        for llvm, proc in _PROC_FLAGS.items():
            if llvm in known:
                continue
            known.add(llvm)
            if proc in flags:
                have.add(llvm)
    return frozenset(have), frozenset(known)


def _is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


# ----------------------------------------------------------------------------------------------
# Building


def _tensor_desc(name: str, mlir_type: str) -> dict:
    m = re.fullmatch(r"tensor<(.*)>", mlir_type)
    parts = m.group(1).split("x")
    etype = parts[-1]
    dims = [None if d == "?" else int(d) for d in parts[:-1]]
    dtype = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}[etype]
    return {"name": name, "dtype": dtype, "shape": dims, "type": mlir_type}


def function_signature(cfg) -> dict:
    """The artifact's function: name, inputs (TF's names, in TF's order) and outputs, with dynamic dims."""
    from .emit import RenderContext
    ctx = RenderContext(cfg, dict(cfg.attrs))
    spec = cfg.spec
    inputs = [_tensor_desc(n, t) for n, t in ctx.arguments]
    outputs = [_tensor_desc(n, t) for n, t in zip(spec.outputs, ctx.result_types)]
    return {"name": cfg.op, "inputs": inputs, "outputs": outputs}


def _declaration_types(decl: str) -> tuple[list[str], list[str]]:
    """The argument and result types of an ``iree.abi.declaration`` string."""
    m = re.search(r"\((.*?)\)\s*->\s*\((.*)\)\s*$", decl)
    if not m:
        return [], []
    find = lambda s: re.findall(r"tensor<[^>]*>", s)  # noqa: E731
    return find(m.group(1)), find(m.group(2))


def _check_module(data: bytes, fn: dict, where: str, instance=None):
    """Parse the .vmfb with the IREE runtime and check its function against the manifest's signature."""
    import iree.runtime as rt
    try:
        module = rt.VmModule.copy_buffer(instance or rt.VmInstance(), data)
    except Exception as e:
        raise BundleError(f"{where}: the IREE runtime cannot load it: {str(e).splitlines()[0]}", arg="bundle") from None
    if fn["name"] not in module.function_names:
        raise BundleError(f"{where}: has no function @{fn['name']} (it exports {', '.join(module.function_names)})",
                          arg="bundle")
    decl = module.lookup_function(fn["name"]).reflection.get("iree.abi.declaration", "")
    args, results = _declaration_types(decl)
    want_args = [i["type"] for i in fn["inputs"]]
    want_results = [o["type"] for o in fn["outputs"]]
    if decl and (args != want_args or results != want_results):
        raise BundleError(f"{where}: its @{fn['name']} takes ({', '.join(args)}) -> ({', '.join(results)}) but the "
                          f"manifest says ({', '.join(want_args)}) -> ({', '.join(want_results)})", arg="bundle")
    return module


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


def _atomic_write(path: Path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@dataclass
class BuildResult:
    """What :func:`build_bundle` did: the manifest written, and compile seconds per target."""
    out: Path
    manifest: dict
    seconds: float
    seconds_per_target: dict = field(default_factory=dict)
    compiled: int = 0
    cached: int = 0


def build_bundle(config, out, *, targets: Sequence[str] | str | None = None, target_cpu: str | None = None,
                 jobs: int = 0, use_cache: bool = True, build_time=None, progress=None) -> BuildResult:
    """Compile ``config`` (a path to TOML/JSON, a mapping or a :class:`BundleConfig`) into the directory ``out``.

    ``targets`` overrides the config's targets, ``target_cpu`` its ``target_cpu`` (see :func:`resolve_cpu`).
    ``use_cache=False`` compiles every artifact afresh (the cache only ever returns verified bytes of
    the same MLIR, flags and compiler, so the bundle is the same either way). ``build_time``: a
    datetime or an ISO string for the manifest; default SOURCE_DATE_EPOCH, else now.
    """
    from . import compile as C
    from . import emit
    from . import targets as T
    from .config import OpConfig
    t_start = time.perf_counter()
    cfg = config if isinstance(config, BundleConfig) else parse_config(config)
    tlist = _as_targets(targets, "--targets", "--targets") if targets else cfg.targets
    target_cpu = target_cpu if target_cpu is not None else cfg.target_cpu
    jobs = jobs or os.cpu_count() or 1
    if target_cpu is not None and "cpu" not in tlist:
        raise QDQError(f"target_cpu={target_cpu!r} applies to the 'cpu' target, which this build does not include "
                       f"(targets: {', '.join(tlist)})", arg="target_cpu")
    cpu = resolve_cpu(target_cpu) if "cpu" in tlist else None
    out = Path(out)
    old = _prepare_out(out)
    stamp = _build_time(build_time)
    version = C.compiler_version()
    from iree.compiler import version as _cv
    revision = (getattr(_cv, "REVISIONS", {}) or {}).get("IREE", "")
    from . import __version__

    # An entry's own targets restrict the bundle's (or the --targets override's).
    jobs_list = [(e, t) for t in tlist for e in cfg.entries if e.targets is None or t in e.targets]
    if not jobs_list:
        raise QDQError("nothing to build: no entry is built for the selected targets", arg="targets")
    tlist = tuple(t for t in tlist if any(jt == t for _, jt in jobs_list))

    def flags_of(t: str) -> tuple[str, ...]:
        return cpu.flags if t == "cpu" else T.get(t).compile_flags

    def one(job):
        e, t = job
        oc = OpConfig.make(e.op, dict(e.attrs), e.dtype, e.shape, t, "baked")
        mlir = emit.render(oc)
        flags = flags_of(t)
        t0 = time.perf_counter()
        was_cached = False
        if use_cache:
            key = C.cache_key(mlir, flags)
            was_cached = (C.cache_dir() / f"{key}.vmfb").exists()
            _, data = C.cached_compile(mlir, flags, what=f"{e.name} ({oc.describe()})", info=oc.key())
        else:
            data = C.compile_mlir(mlir, flags, what=f"{e.name} ({oc.describe()})")
        dt = time.perf_counter() - t0
        fn = function_signature(oc)
        _check_module(data, fn, f"{e.name}.{t}.vmfb (just compiled)")
        if progress:
            progress(e, t, dt)
        return e, t, oc, mlir, flags, data, dt, was_cached

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, jobs_list))

    artifacts, per_target = [], collections.OrderedDict((t, 0.0) for t in tlist)
    compiled = cached = 0
    for e, t, oc, mlir, flags, data, dt, was_cached in results:
        fname = f"{e.name}.{t}.vmfb"
        _atomic_write(out / fname, data)
        per_target[t] = per_target.get(t, 0.0) + dt
        cached += was_cached
        compiled += not was_cached
        tgt = T.get(t)
        art = {
            "name": e.name, "op": e.op, "attrs": dict(oc.attrs), "dtype": e.dtype,
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
        "iree_compiler_version": version, "iree_compiler_revision": revision,
        "build_time": stamp, "targets": tinfo, "artifacts": artifacts,
    }
    text = json.dumps(manifest, indent=1, ensure_ascii=True) + "\n"
    _atomic_write(out / MANIFEST, text.encode())
    # Files of a previous bundle in this directory that this one does not list.
    keep = {a["file"] for a in artifacts}
    for f in old - keep:
        try:
            (out / f).unlink()
        except OSError:
            pass
    return BuildResult(out, manifest, time.perf_counter() - t_start, dict(per_target), compiled, cached)


def _prepare_out(out: Path) -> set[str]:
    """Create ``out``; an existing directory must be empty or hold a bundle (whose files are returned)."""
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
    try:
        out.mkdir(parents=True)
    except OSError as e:
        raise QDQError(f"--out {out}: cannot create it: {e.strerror}", arg="out") from None
    return set()


# ----------------------------------------------------------------------------------------------
# Loading


def _runtime_version() -> str:
    try:
        from iree._runtime_libs import version as v
        return v.VERSION
    except ImportError:  # pragma: no cover
        from importlib.metadata import version
        return version("iree-base-runtime")


def _major_minor(v: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)", v or "")
    return (int(m.group(1)), int(m.group(2))) if m else ()


class BundleEntry:
    """One artifact of a loaded bundle, called like the raw op: ``entry(inputs=x, min=lo, max=hi)``.

    Attributes are baked into the artifact (``entry.attrs``); passing one is allowed only with the
    baked value. Inputs are validated as ``qdq_compiler.raw_ops`` validates them (QDQError), then
    checked against the artifact's dtype and static dims. Multi-output ops return a namedtuple.
    """

    def __init__(self, bundle: "Bundle", record: dict, data: bytes):
        self._bundle, self.record, self._data = bundle, record, data
        self.name: str = record["name"]
        self.op: str = record["op"]
        self.attrs: dict = dict(record["attrs"])
        self.dtype: str = record["dtype"]
        self.target: str = record["target"]
        self.function: dict = record["function"]
        self.file: Path = bundle.path / record["file"]
        self.sha256: str = record["sha256"]
        self.bit_exact: bool = bool(record.get("bit_exact", True))
        self._fn = None
        spec = R.get(self.op)
        kw = inspect.Parameter.KEYWORD_ONLY
        params = [inspect.Parameter(i.name, kw) for i in spec.inputs]
        params += [inspect.Parameter(a.name, kw, default=self.attrs[a.name]) for a in spec.attrs]
        self.__signature__ = inspect.Signature(params + [inspect.Parameter("name", kw, default=None)])
        ins = ", ".join(f"{i['name']}: {i['type']}" for i in self.function["inputs"])
        outs = ", ".join(f"{o['name']}: {o['type']}" for o in self.function["outputs"])
        baked = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        self.__doc__ = f"{self.op} [{baked}] on {self.target}: ({ins}) -> ({outs})"

    def __repr__(self):
        ins = ", ".join(f"{i['name']}: {i['type']}" for i in self.function["inputs"])
        return f"<BundleEntry {self.name}: {self.op}({ins}) @{self.target}>"

    def _loaded(self):
        if self._fn is None:
            from . import runtime
            self._fn = runtime.load(self._bundle.driver, "bundle:" + self.sha256, self._data, self.function["name"])
        return self._fn

    def __call__(self, **kwargs):
        from .opfuncs import pack
        from .validation import bind
        spec = R.get(self.op)
        kwargs.pop("name", None)
        for a in spec.attrs:
            if a.name in kwargs:
                v = kwargs.pop(a.name)
                baked = self.attrs[a.name]
                same = (v == baked) if not isinstance(baked, float) else \
                    (isinstance(v, (int, float, np.floating)) and not isinstance(v, bool) and float(np.float32(v)) == baked)
                if not same:
                    raise QDQError(f"attribute {a.name}={v!r} differs from the value baked into bundle entry "
                                   f"{self.name!r} ({a.name}={baked!r}); attributes cannot change at run time",
                                   op=self.op, arg=a.name)
        dtype = np.dtype(self.dtype)
        for inp in spec.inputs:  # plain Python numbers/lists take the entry's dtype, as a TF tensor would
            v = kwargs.get(inp.name)
            if inp.dtype == "T" and v is not None and not isinstance(v, (np.ndarray, np.generic, str, bytes, bool)):
                try:
                    arr = np.asarray(v)
                except (ValueError, TypeError):
                    continue
                if arr.dtype.kind in "fiu":
                    kwargs[inp.name] = arr.astype(dtype)
        call = bind(self.op, {**kwargs, **self.attrs})
        if call.dtype != dtype:
            raise QDQTypeError(f"bundle entry {self.name!r} is compiled for {self.dtype}; got {call.dtype.name} inputs",
                               op=self.op, arg=spec.inputs[0].name)
        for desc in self.function["inputs"]:
            arr = call.arrays[desc["name"]]
            want = desc["shape"]
            if arr.ndim != len(want) or any(w is not None and w != d for w, d in zip(want, arr.shape)):
                from .config import format_shape
                raise QDQError(f"input {desc['name']} has shape {list(arr.shape)}; bundle entry {self.name!r} takes "
                               f"{format_shape(want)} ('?' = any size)", op=self.op, arg=desc["name"])
        from . import targets as T
        if call.data.size == 0 and not T.get(self.target).limits.get("empty_buffers", True):
            from .oracle import compute  # no element to compute; the target rejects empty buffers
            return pack(self.op, compute(call))
        outs = self._loaded()([call.arrays[d["name"]] for d in self.function["inputs"]])
        return pack(self.op, outs)


class Bundle:
    """A verified bundle for one target: its entries by name (``bundle["act_fq"]`` or ``bundle.act_fq``)."""

    def __init__(self, path: Path, manifest: dict, target: str, entries: dict[str, BundleEntry]):
        self.path, self.manifest, self.target = path, manifest, target
        self.driver = manifest["targets"][target]["driver"] if target in manifest.get("targets", {}) else \
            next(a["driver"] for a in manifest["artifacts"] if a["target"] == target)
        self.entries = entries

    @property
    def targets(self) -> list[str]:
        return list(self.manifest["targets"])

    @property
    def bit_exact(self) -> bool:
        return all(e.bit_exact for e in self.entries.values())

    def names(self) -> list[str]:
        return list(self.entries)

    def __getitem__(self, name: str) -> BundleEntry:
        try:
            return self.entries[name]
        except KeyError:
            raise KeyError(f"bundle {self.path} has no entry {name!r} for target {self.target!r}; "
                           f"entries: {', '.join(self.entries)}") from None

    def __getattr__(self, name: str) -> BundleEntry:
        entries = self.__dict__.get("entries") or {}
        if name in entries:
            return entries[name]
        raise AttributeError(name)

    def __contains__(self, name) -> bool:
        return name in self.entries

    def __iter__(self):
        return iter(self.entries.values())

    def __len__(self):
        return len(self.entries)

    def __repr__(self):
        return f"<Bundle {self.path} target={self.target!r}: {', '.join(self.entries)}>"


_REQUIRED_ARTIFACT_KEYS = ("name", "op", "attrs", "dtype", "shape", "function", "target", "driver", "file",
                           "size", "sha256", "compiler_flags", "iree_compiler_version")


def _read_manifest(path: Path) -> tuple[Path, dict]:
    path = Path(path)
    mpath = path / MANIFEST if path.is_dir() else path
    root = mpath.parent
    if not mpath.is_file():
        what = f"no {MANIFEST} in {path}" if path.is_dir() else f"{path} does not exist"
        raise BundleError(f"not a bundle: {what}", arg="bundle")
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BundleError(f"{mpath}: not a readable JSON manifest ({e})", arg="bundle") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise BundleError(f"{mpath}: not a qdq_compiler bundle manifest (schema {manifest.get('schema') if isinstance(manifest, dict) else None!r}, "
                          f"expected {SCHEMA!r})", arg="bundle")
    sv = manifest.get("schema_version")
    if sv != SCHEMA_VERSION:
        raise BundleError(f"{mpath}: manifest schema_version {sv!r}; this qdq_compiler reads version {SCHEMA_VERSION}"
                          + (" (built by a newer qdq_compiler)" if isinstance(sv, int) and sv > SCHEMA_VERSION else ""),
                          arg="bundle")
    arts = manifest.get("artifacts")
    if not isinstance(arts, list) or not arts:
        raise BundleError(f"{mpath}: the manifest lists no artifacts", arg="bundle")
    seen = set()
    for i, a in enumerate(arts):
        if not isinstance(a, dict) or any(k not in a for k in _REQUIRED_ARTIFACT_KEYS):
            missing = [k for k in _REQUIRED_ARTIFACT_KEYS if not isinstance(a, dict) or k not in a]
            raise BundleError(f"{mpath}: artifacts[{i}] lacks {', '.join(missing)}", arg="bundle")
        f = a["file"]
        if not isinstance(f, str) or not _NAME_RE.match(f) or f == MANIFEST:
            raise BundleError(f"{mpath}: artifacts[{i}] names file {f!r}; bundle files must be plain names in the "
                              f"bundle directory", arg="bundle")
        if (a["name"], a["target"]) in seen:
            raise BundleError(f"{mpath}: {a['name']} for {a['target']} is listed twice", arg="bundle")
        seen.add((a["name"], a["target"]))
        if a["op"] not in R.OPS:
            raise BundleError(f"{mpath}: {f}: unknown op {a['op']!r} (built by another qdq_compiler?)", arg="bundle")
        fn = a["function"]
        ok = (isinstance(a["attrs"], dict) and isinstance(a["size"], int) and isinstance(a["sha256"], str)
              and isinstance(a["shape"], list) and isinstance(fn, dict) and isinstance(fn.get("name"), str)
              and all(isinstance(fn.get(k), list) and all(isinstance(d, dict) and isinstance(d.get("name"), str)
                                                          and isinstance(d.get("type"), str)
                                                          and isinstance(d.get("shape"), list) for d in fn[k])
                      for k in ("inputs", "outputs")))
        if not ok:
            raise BundleError(f"{mpath}: the record of {f} is malformed", arg="bundle")
        from .config import OpConfig
        try:
            OpConfig.make(a["op"], a["attrs"], a["dtype"], a["shape"], a["target"], "baked")
        except QDQError as e:
            raise BundleError(f"{mpath}: the record of {f} is not a valid configuration: {e}", arg="bundle") from None
    manifest.setdefault("targets", {})
    if not isinstance(manifest["targets"], dict) or not all(isinstance(v, dict) for v in manifest["targets"].values()):
        raise BundleError(f"{mpath}: 'targets' must map target names to records", arg="bundle")
    for a in arts:
        manifest["targets"].setdefault(a["target"], {"driver": a["driver"]})
    return root, manifest


def _verify_files(root: Path, manifest: dict) -> dict[str, bytes]:
    """Every listed file: present, of the recorded size and SHA-256. Returns their bytes by file name."""
    datas, problems = {}, []
    for a in manifest["artifacts"]:
        p = root / a["file"]
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            problems.append(f"{a['file']} is missing")
            continue
        except OSError as e:
            problems.append(f"{a['file']} cannot be read ({e.strerror})")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != a["size"] or digest != a["sha256"]:
            problems.append(f"{a['file']} does not match the manifest (tampered or corrupted): size {len(data)} "
                            f"(manifest {a['size']}), sha256 {digest[:16]}... (manifest {str(a['sha256'])[:16]}...)")
            continue
        datas[a["file"]] = data
    if problems:
        raise BundleError(f"bundle {root} failed verification: " + "; ".join(problems), arg="bundle")
    return datas


def compatibility(manifest: dict, target: str, host_cpu_features=None) -> str:
    """'' when this runtime and machine can run ``target``'s artifacts of ``manifest``, else the reason."""
    from . import targets as T
    arts = [a for a in manifest["artifacts"] if a["target"] == target]
    if not arts:
        return f"the bundle has no {target!r} artifacts"
    rt_v = _runtime_version()
    for a in arts:
        cv = a.get("iree_compiler_version", "")
        if _major_minor(cv) != _major_minor(rt_v):
            return (f"{a['file']} was compiled by IREE {cv}; this IREE runtime is {rt_v} (bytecode is compatible only "
                    f"within one IREE release: install iree-base-runtime=={'.'.join(map(str, _major_minor(cv)))}.* "
                    f"or rebuild the bundle)")
    try:
        tgt = T.get(target)
    except QDQError:
        return f"unknown target {target!r} (built by another qdq_compiler?)"
    driver = manifest["targets"].get(target, {}).get("driver") or arts[0]["driver"]
    if driver != tgt.driver:
        return f"its artifacts need the {driver!r} driver; this qdq_compiler runs {target!r} on {tgt.driver!r}"
    ok, why = tgt.availability()  # compile-only, or no driver/device here
    if not ok:
        return why
    if tgt.backend == "llvm-cpu":
        if not _is_x86_64():
            return f"its artifacts are x86-64 code; this machine is {platform.machine()}"
        if host_cpu_features is not None:
            have, known = frozenset(host_cpu_features), None
        else:
            have, known = detect_host_cpu_features()
        for a in arts:
            req = (a.get("cpu") or {}).get("required_features")
            if req is None:
                continue
            checkable = [f for f in req if known is None or f in known]
            missing = sorted(f for f in checkable if f not in have)
            if missing:
                cpu = a.get("cpu", {})
                return (f"{a['file']} is compiled for CPU {cpu.get('name', '?')!r} (requested "
                        f"{cpu.get('requested', '?')!r}) and needs {', '.join(missing)}, which this CPU lacks; "
                        f"rebuild with the default portable CPU (x86-64-v2) or --target-cpu host on the target machine")
    return ""


def load_bundle(path, target: str | None = None, *, host_cpu_features=None) -> Bundle:
    """Load the bundle at ``path`` (its directory or its manifest.json) for ``target``.

    Every listed file is checked (present, size, SHA-256) whatever the target; then the target's
    compatibility with this runtime (IREE release, driver and device, CPU architecture and features);
    then each of its artifacts is parsed by the IREE runtime and its function checked against the
    manifest. ``target=None`` picks the first of the bundle's targets that can run here.
    ``host_cpu_features`` (LLVM names) replaces this machine's CPU features (to check a bundle for
    another machine). Anything wrong is a BundleError.
    """
    root, manifest = _read_manifest(Path(path))
    datas = _verify_files(root, manifest)
    targets_in = list(manifest["targets"])
    if target is not None:
        if target not in targets_in:
            raise BundleError(f"bundle {root} has no {target!r} artifacts; its targets: {', '.join(targets_in)}",
                              arg="target")
        why = compatibility(manifest, target, host_cpu_features)
        if why:
            raise BundleError(f"bundle {root}: cannot run its {target!r} artifacts here: {why}", arg="target")
        chosen = target
    else:
        reasons = {}
        for t in targets_in:
            reasons[t] = compatibility(manifest, t, host_cpu_features)
            if not reasons[t]:
                chosen = t
                break
        else:
            raise BundleError(f"bundle {root}: none of its targets can run here: "
                              + "; ".join(f"{t}: {w}" for t, w in reasons.items()), arg="target")
    import iree.runtime as rt
    instance = rt.VmInstance()
    entries = {}
    bundle = Bundle(root, manifest, chosen, entries)
    for a in manifest["artifacts"]:
        if a["target"] != chosen:
            continue
        data = datas[a["file"]]
        _check_module(data, a["function"], f"bundle {root}: {a['file']}", instance)
        try:
            entries[a["name"]] = BundleEntry(bundle, a, data)
        except (KeyError, TypeError, QDQError) as e:
            raise BundleError(f"bundle {root}: {a['file']}: inconsistent manifest record ({e})", arg="bundle") from None
    return bundle


def verify_bundle(path, host_cpu_features=None) -> dict[str, str]:
    """Check every file and, per target, whether it can run here: {target: '' or the reason}."""
    root, manifest = _read_manifest(Path(path))
    _verify_files(root, manifest)
    return {t: compatibility(manifest, t, host_cpu_features) for t in manifest["targets"]}


# ----------------------------------------------------------------------------------------------
# The command line (``qdqc build``)


def main(args) -> int:
    """``qdqc build --config C --out DIR [--targets a,b] [--target-cpu host]``."""
    def progress(e, t, dt):
        print(f"  {e.name}.{t}.vmfb  ({dt:.2f} s)", file=sys.stderr)
    res = build_bundle(args.config, args.out, targets=getattr(args, "targets", None),
                       target_cpu=getattr(args, "target_cpu", None), progress=progress)
    m = res.manifest
    per = ", ".join(f"{t} {s:.1f} s" for t, s in res.seconds_per_target.items())
    total = sum(a["size"] for a in m["artifacts"])
    print(f"wrote {res.out}/{MANIFEST}: {len(m['artifacts'])} artifacts ({total} bytes) for "
          f"{', '.join(m['targets'])}; {res.compiled} compiled, {res.cached} from the cache; "
          f"{res.seconds:.1f} s wall (compile time per target: {per})", file=sys.stderr)
    if "cpu" in m["targets"]:
        c = m["targets"]["cpu"]["cpu"]
        exact = "bit-exact" if m["targets"]["cpu"]["bit_exact"] else "NOT bit-exact (FMA contraction)"
        print(f"cpu artifacts: CPU {c['name']} ({'tuned' if c['tuned'] else 'portable'}, {exact})", file=sys.stderr)
    return 0
