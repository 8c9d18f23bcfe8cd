"""What an x86-64 CPU is, as IREE/LLVM and this machine see it: resolving a ``cpu`` build's target CPU
and detecting the host's features, so that a tuned artifact is refused where it cannot run.

In this process the ``cpu`` target compiles for this host's level (``host_level``: x86-64-v3 without FMA where
the CPU has AVX2, else x86-64-v2; both bit-exact); a bundle's ``cpu`` artifacts are portable by default
(``x86-64-v2``, no FMA: bit-exact). ``target_cpu="host"`` or
an LLVM CPU name builds a tuned variant: the name is resolved to LLVM's (``host`` -> e.g. ``znver4``)
and FMA is switched off (``-fma,-fma4``) so it stays bit-exact. Note that in LLVM every AVX-512
feature depends on FMA, so such a build uses AVX2 at most (and is not always faster than the portable
one: IREE's masked AVX2 loads/stores are slow on AMD CPUs). ``"<cpu>,+fma"`` keeps FMA and AVX-512, the
fastest build, but IREE contracts ``a*b+c`` then, so it is recorded as not bit-exact.

Self-contained (stdlib, ``iree_tools`` for the iree-compile path, ``errors``, a flag of ``host_memory``): the
target table, the bundle builder and the loader use it, and it knows nothing of them.
"""
from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .. import iree_tools as C
from ..errors import QDQError
from ..host_memory import RESOURCE_ALIGNMENT_16

PORTABLE_CPU = "x86-64-v2"
WIDE_CPU = "x86-64-v3"
WIDEST_CPU = "x86-64-v4"   # AVX-512: LLVM cannot switch its FMA off (avx512f implies fma)
_V4_PROC_FLAGS = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
# Disabling FMA switches every contraction off: fma4 is AMD's older four-operand form.
NO_FMA = ("-fma", "-fma4")
# What x86-64-v3 adds to v2, in /proc/cpuinfo's names (its FMA is switched off here, so it is not required).
_V3_PROC_FLAGS = ("avx", "avx2", "bmi1", "bmi2", "f16c", "abm", "movbe")
LEVEL_ENV = "QDQ_CPU_LEVEL"
_LEVEL_FLAGS = ("--iree-llvmcpu-target-cpu=", "--iree-llvmcpu-target-cpu-features=", RESOURCE_ALIGNMENT_16)
LEVEL_FLAG_PREFIXES = _LEVEL_FLAGS   # a level's flags, as a replacement level strips them


def level_flags(level: str) -> tuple[str, ...]:
    """The compile flags of an x86-64 ``level``: x86-64-v2 as it is (SSE4.2 has no FMA); x86-64-v3 (AVX2) with
    FMA switched off, and bindings declared 16-byte aligned so that its 32-byte vectors read NumPy's arrays
    in place (without the flag IREE assumes 64 and the runtime would copy every input)."""
    if level == PORTABLE_CPU:
        return (f"--iree-llvmcpu-target-cpu={PORTABLE_CPU}",)
    return (f"--iree-llvmcpu-target-cpu={level}", "--iree-llvmcpu-target-cpu-features=" + ",".join(NO_FMA),
            RESOURCE_ALIGNMENT_16)


@functools.lru_cache(maxsize=1)
def host_level() -> str:
    """The x86-64 level the ``cpu`` target compiles for on this machine: x86-64-v3 (AVX2, no FMA: the same
    bits, 1.0-2.3x faster at 2^24 here) where the CPU has it, else the portable x86-64-v2. ``QDQ_CPU_LEVEL``
    (x86-64-v2 or x86-64-v3), read when qdq_compiler is imported, overrides it."""
    forced = os.environ.get(LEVEL_ENV, "").strip()
    if forced:
        if forced not in (PORTABLE_CPU, WIDE_CPU):
            raise QDQError(f"{LEVEL_ENV}={forced!r}: allowed values are {PORTABLE_CPU} and {WIDE_CPU}", arg=LEVEL_ENV)
        return forced
    if not is_x86_64():
        return PORTABLE_CPU
    have = _proc_cpuinfo_flags()
    return WIDE_CPU if all(f in have for f in _V3_PROC_FLAGS) else PORTABLE_CPU


@functools.lru_cache(maxsize=1)
def contraction_free_level() -> tuple[str, ...]:
    """The level flags of a program with no multiply-add to contract (Rules.contraction_free): x86-64-v4 (AVX-512,
    its FMA on: nothing to fuse, the same bits; MX at 2^24 1.3-1.5x faster here) where the CPU has it and the cpu
    target compiles for x86-64-v3; none where QDQ_CPU_LEVEL chooses the level."""
    if os.environ.get(LEVEL_ENV, "").strip() or host_level() != WIDE_CPU:
        return ()
    if not all(f in _proc_cpuinfo_flags() for f in _V4_PROC_FLAGS):
        return ()
    return (f"--iree-llvmcpu-target-cpu={WIDEST_CPU}", RESOURCE_ALIGNMENT_16)


def _proc_cpuinfo_flags() -> set[str]:
    """The first CPU's flags in /proc/cpuinfo (an empty set where there is none)."""
    try:
        m = re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        m = None
    return set(m.group(1).split()) if m else set()


@dataclass(frozen=True)
class CpuChoice:
    """What a ``cpu`` artifact is compiled for, as recorded in a bundle's manifest."""
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


def resolve_cpu(target_cpu: str | None, base_flags: Sequence[str]) -> CpuChoice:
    """The ``cpu`` target's flags for ``target_cpu``, given the portable target's ``base_flags``.

    ``None``/``"portable"``/``"x86-64-v2"``: the portable default. Else ``"NAME[,+feat,-feat...]"``
    where NAME is ``host`` or an LLVM CPU name: FMA is disabled (bit-exact) unless ``+fma`` is given.
    """
    # the level the in-process cpu target compiles for is this host's; an artifact is portable unless asked
    stripped = tuple(f for f in base_flags if not f.startswith(_LEVEL_FLAGS))
    if target_cpu is None or target_cpu.strip() in ("", "portable", PORTABLE_CPU):
        base = stripped + level_flags(PORTABLE_CPU)
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
    name, host_feats = requested, ()
    if requested == "host":
        # IREE refuses 'host' with explicit features: resolve the name and pass the host's own feature
        # list. The name alone is not enough: a VM reports e.g. znver4 but masks gfni and AVX-512, which
        # the name's defaults would enable.
        name, host_feats = _probe_cpu(stripped + ("--iree-llvmcpu-target-cpu=host",))
    keep_fma = "+fma" in user_feats
    feats = host_feats + (() if keep_fma else NO_FMA) + user_feats
    flags = stripped + (f"--iree-llvmcpu-target-cpu={name}",)
    if feats:
        flags += ("--iree-llvmcpu-target-cpu-features=" + ",".join(feats),)
    flags += (RESOURCE_ALIGNMENT_16,)
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


def runtime_tool(name: str) -> str | None:
    """A native IREE runtime tool (iree-run-module, iree-cpuinfo, ...): from ``QDQ_IREE_TOOLS`` when that is
    set (a QDQError naming it if the tool is not there: never another IREE's), else the one shipped by
    iree-base-runtime (no Python wrapper), else one on PATH (None if none)."""
    if C.iree_tools_dir() is not None:
        return C.iree_tool(name)
    try:
        import iree._runtime_libs as libs  # lazy: the IREE runtime is slow to import
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
    tool = runtime_tool("iree-cpuinfo")
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
    flags = _proc_cpuinfo_flags()
    if flags:
        for llvm, proc in _PROC_FLAGS.items():
            if llvm in known:
                continue
            known.add(llvm)
            if proc in flags:
                have.add(llvm)
    return frozenset(have), frozenset(known)


def is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")
