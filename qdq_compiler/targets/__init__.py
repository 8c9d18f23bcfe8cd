"""Targets: one object each, holding compile flags, the runtime driver, availability and known limits.

Why the CPU flags look like this: IREE's llvm-cpu backend marks every float op ``contract``
(AddFastMathFlags, no flag turns it off), so on a CPU with FMA a multiply followed by an add becomes
one fused op with one rounding, and TF's three separately rounded steps are lost (HALF_UP's
floor(v*s + 0.5), FakeQuant's s*inv - qzero). The default ``cpu`` target therefore compiles for a
portable x86-64 level without FMA: SSE4.1 keeps floor/roundeven as single instructions, and the
vector width costs nothing on a memory-bound op. ``cpu-host`` tunes for this machine (``host``) and
is documented as not bit-exact wherever contraction applies.

What differs between targets is data here, never a branch elsewhere: typed ``Quirks`` (each one has
exactly one workaround macro in the topic files of templates/ (macros.mlir.j2 lists them) or reductions.mlir.j2,
which the template reads as
``k.quirks.<name>``; a misspelt name is an error, at import or at render time) and typed ``Limits``.
"oracle" (the NumPy reference) is not a compile target: ``get(name, reference_ok=True)`` is the one
place that lets it through, as ``REFERENCE``.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, fields

import numpy as _np

from .. import dtypes as _dtypes
from ..errors import QDQError, TargetUnavailableError
from . import conflicts
from .cpu import LEVEL_FLAG_PREFIXES, contraction_free_level, host_level, level_flags

COMMON_FLAGS = ("--iree-input-type=stablehlo", "--iree-input-demote-f64-to-f32=false")


# IREE 3.13's dispatch creation puts data-shaped results of different element widths (a float output and its bool
# mask) in separate dispatches: the first writes the quantised level as well, the second reads it back to write
# the mask (the cachemask ops: 4.1x a copy on cpu, twice the single-result op on CUDA). Its aggressive fusion keeps
# them in one dispatch (measured on the per-tensor cachemask, llvm-cpu: 4 dispatches -> 3, the level no longer
# materialised). Only such programs take the flag: the others' artifacts (and their measured speed) stay as they are.
MIXED_WIDTH_FUSION = ("--iree-dispatch-creation-enable-aggressive-fusion",)


def fusion_flags(spec, dtype: str) -> tuple[str, ...]:
    """MIXED_WIDTH_FUSION for an op whose data-shaped results (spec.Output, layout "data") differ in element width
    in a ``dtype`` program, or that returns a per-block result beside a data-shaped one (MX's quantize: the element
    codes and the scales; without it the block amax is written, x read twice, 8.1 -> 6.1 ms at 2^24); else none."""
    data_results = [r for r in spec.results if r.layout == "data"]
    if data_results and any(r.layout == "blocks" for r in spec.results):
        return MIXED_WIDTH_FUSION
    if len(data_results) < 2:
        return ()
    widths = {_dtypes.get(dtype).np.itemsize if r.dtype == "T" else _np.dtype(r.dtype).itemsize for r in data_results}
    return MIXED_WIDTH_FUSION if len(widths) > 1 else ()


def merge_flags(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """The flags of ``groups`` in order, a later ``--name=value`` replacing an earlier one of the same name (as
    iree-compile reads them): one spelling of each artifact's flags, for its cache key."""
    out: dict[str, str] = {}
    for flag in (f for g in groups for f in g):
        name = flag.split("=", 1)[0]
        out.pop(name, None)
        out[name] = flag
    return tuple(out.values())


@dataclass(frozen=True)
class Quirks:
    """Lowering behaviours of a target that TF's CPU kernels do not have, each with one workaround."""
    keeps_denormals: bool = False            # no FTZ/DAZ: the program flushes subnormals itself (macro ftz)
    folds_mul_by_zero: bool = False          # folds x * 0.0 to +0, losing TF's -0 (V3's unsigned qmin)
    minmax_ignores_nan: bool = False         # min/max reductions skip NaN (macro reduce_range_nan)
    roundeven_drops_zero_sign: bool = False  # roundeven(-0.5) is +0 (macro round_half_even)
    roundeven_is_slow: bool = False          # roundeven lowers to ~60 integer ops per vector (llvm-cpu on
    #   x86-64-v2): macro round_half_even adds and subtracts 2^p instead (exact; QDQ 4.6x -> 1.2x a copy)
    ordered_ge_true_for_nan: bool = False    # an ordered GE lowers as "not LT", true for a NaN operand (vmvx):
    #   macro ge writes a >= b as b <= a there
    unfused_middle_reductions: bool = False  # a reduction over a middle dimension (MX's [outer, blocks, 32, inner])
    #   in one dispatch with its element-wise consumers gives wrong elements (IREE 3.13 vulkan-spirv on lavapipe,
    #   block sizes 16, 32, 64: only each block's first 4 rows right): the reduction's result goes behind a barrier
    no_index_workgroup_memory: bool = False  # a reduction fused with consumers of an iota (MX's stochastic rounding
    #   counts elements) stages the iota's index values in workgroup memory, which SPIR-V cannot type (IREE 3.13
    #   vulkan-spirv: "failed to legalize operation 'memref.alloc' ... memref<32xindex, Workgroup>"): the
    #   reduction's result goes behind a barrier
    single_chain_reductions: bool = False    # a 1-D reduction runs one 4-lane accumulator chain and a
    #   column reduction walks each channel alone (llvm-cpu; a data range took 3.3x a copy, per-axis 8x):
    #   reductions.mlir.j2 writes them as linalg.generic lane forms (IREE's compilation_info)

    def __post_init__(self):
        for f in fields(self):
            if not isinstance(getattr(self, f.name), bool):
                raise TypeError(f"Quirks.{f.name} must be a bool")


# Elements one stage of a bounded reduction reads in one loop (macro reduce_in_blocks): the data is reduced
# in blocks of this many, then the partials, so a loop-limited target reduces at most
# REDUCTION_BLOCK * max_loop_iterations elements per channel (Limits.max_reduced_elements).
REDUCTION_BLOCK = 4096


@dataclass(frozen=True)
class Limits:
    """What a target cannot do, as numbers the generic code acts on."""
    max_loop_iterations: int | None = None   # a loop stops after this many iterations (lavapipe: 65535):
    #   reductions run in blocks of REDUCTION_BLOCK, then over the blocks, behind a barrier (macro
    #   reduce_in_blocks), for static and dynamic shapes alike
    empty_buffers: bool = True               # can bind zero-sized buffers (Vulkan cannot: the host answers)
    narrow_reductions: bool = True           # can reduce over 16-bit data (vmvx cannot: IREE 3.13 puts the i16
    #   widening and the reduction in one dispatch without fusing them and fails at run time, RESOURCE_EXHAUSTED;
    #   a dynamic-shape optimization_barrier does not compile): such programs take their 16-bit inputs as
    #   float32, widened on the host (exact), and still return 16-bit results (Target.widens_on_host)
    outer_reductions: bool = True            # compiles reductions over the outer dim of [?, ?] data (IREE 3.13's
    #   vulkan-spirv fails on tf-xla's NaN-skipping per-channel range there: "failed to legalize unresolved
    #   source materialization"): without, per-axis data that reduces stays [outer, C, 1] (canonical_view)
    paired_reductions: bool = True            # one reduction with two results is fast here (macro reduce_pair;
    #   IREE 3.13's cuda, measured on an H200: the LSQ per-channel sums "failed to bufferize op", the per-tensor ones
    #   ran 190x slower, 124.9 against 0.65 ms at 2^20): without, two reductions
    max_dispatch_bindings: int | None = None  # buffers one dispatch may bind (IREE's CUDA HAL: 16,
    #   IREE_HAL_CUDA_MAX_DISPATCH_BINDING_COUNT; measured on an H200: a module with a 23-binding dispatch fails to
    #   load, "binding_flags count 23 exceeds maximum of 16"): each runtime parameter a dispatch reads is one, so a
    #   template derives its constants in the program (tests/test_aten_observer.py counts them)
    idle_device_s: float | None = None       # close the runtime device after this many idle seconds (None:
    #   keep it for the process): IREE's Vulkan device on lavapipe spins two threads while it exists
    #   (device_sessions.py)

    @property
    def max_reduced_elements(self) -> int | None:
        """The most elements a program may reduce per channel on this target (None: no bound)."""
        return None if self.max_loop_iterations is None else self.max_loop_iterations * REDUCTION_BLOCK

    def __post_init__(self):
        if self.max_loop_iterations is not None and (not isinstance(self.max_loop_iterations, int)
                                                     or self.max_loop_iterations < REDUCTION_BLOCK):
            raise ValueError(f"Limits.max_loop_iterations must be an int >= {REDUCTION_BLOCK} (the bounded "
                             "reduction's block) or None")
        if not isinstance(self.outer_reductions, bool):
            raise TypeError("Limits.outer_reductions must be a bool")
        if not isinstance(self.empty_buffers, bool):
            raise TypeError("Limits.empty_buffers must be a bool")
        if self.idle_device_s is not None and (isinstance(self.idle_device_s, bool)
                                               or not isinstance(self.idle_device_s, (int, float))
                                               or self.idle_device_s < 0):
            raise ValueError("Limits.idle_device_s must be a number of seconds >= 0 or None")


FMA_UNITS = ("emulated", "hardware", "host")
HOST_CPU_DRIVERS = ("local-sync", "local-task")   # IREE's drivers that run on the host's own cores


@dataclass(frozen=True)
class MultiplyAdd:
    """How a target computes a multiply-add rounded once (semantics tf-xla: XLA:CPU's FMAs).

    "emulated": the templates' exact integer emulation (macros fma_func, fma64_func), right on any target,
    about 40 operations; "hardware": the target's fused instruction (math.fma) rounds once (CUDA's fma.rn);
    "host": the CPU's unit where this machine has one (``flags`` switch it on for the programs that use it),
    else the emulation. A target whose fused instruction is not guaranteed (vmvx, lavapipe's SPIR-V) emulates."""
    unit: str = "emulated"
    flags: tuple[str, ...] = ()   # compile flags a program using the unit needs (llvm-cpu: +fma)
    vectors_16_bytes: bool = False  # the unit's programs keep 16-byte vectors (NumPy's alignment, see
    #   runtime.import_alignment), so they take no lane-form reductions (reductions.mlir.j2: wider vectors)
    narrow_reductions: bool = True  # the unit's programs may reduce over 16-bit data (llvm-cpu +fma cannot:
    #   IREE 3.13's code for a bfloat16 reduction beside math.fma jumps to a bad address at run time, for some
    #   sizes from 56 elements on (aten's learnable gradients); such programs take the emulation instead)

    def __post_init__(self):
        if self.unit not in FMA_UNITS:
            raise ValueError(f"MultiplyAdd.unit must be one of {', '.join(FMA_UNITS)}")


@dataclass(frozen=True)
class Target:
    name: str
    backend: str                  # iree-compile --iree-hal-target-backends
    driver: str                   # iree runtime driver
    flags: tuple[str, ...]
    description: str
    bit_exact: bool = True        # documented expectation; deviations carry a note
    deviation: str = ""
    dtypes: tuple[str, ...] = tuple(_dtypes.FLOATS)   # every row of the dtype table unless a target lacks one
    dtype_gaps: tuple[tuple[str, str], ...] = ()   # (dtype, why this target cannot run it), for the error
    compile_only: bool = False
    limits: Limits = field(default_factory=Limits)
    quirks: Quirks = field(default_factory=Quirks)
    # (name, extra compile flags): code generation tuned for a kind of data, asked for by the runtime's
    # view of a call (config.canonical_view); a target without the tuning compiles the plain program
    tunings: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The Python path's programs (params="runtime") write their data-shaped result into a buffer the caller
    # passes (an iree.abi.output argument): the runtime hands them memory from a pool that stays paged in, so
    # a large call runs on local-task's workers without faulting in a fresh result (runtime.py)
    caller_storage: bool = False
    multiply_add: MultiplyAdd = field(default_factory=MultiplyAdd)
    # the level flags (replacing the target's) of a program with no multiply-add to contract (Rules.contraction_free):
    # the cpu target's AVX-512 where this host has it; in-process artifacts only (a bundle's cpu level is its own)
    contraction_free_level: tuple[str, ...] = ()
    # the extra flags of a program that reduces many short blocks (Rules.short_block_reductions, MX): llvm-cpu's
    # default distribution gives a workgroup 32 blocks (1,024 elements), and 16,384 workgroups cost more than
    # the work at 2^24
    short_block_flags: tuple[str, ...] = ()
    is_reference = False

    def __post_init__(self):
        if not isinstance(self.limits, Limits) or not isinstance(self.quirks, Quirks) or \
                not isinstance(self.multiply_add, MultiplyAdd):
            raise TypeError(f"target {self.name}: limits, quirks and multiply_add must be Limits, Quirks and "
                            "MultiplyAdd records")

    @property
    def runs_on_host_cpu(self) -> bool:
        """Whether its programs run on the host's cores (as many processes as like), not on one device."""
        return self.driver in HOST_CPU_DRIVERS

    def fma_units(self) -> tuple[str, ...]:
        """The ways this target can compute a fused multiply-add on this machine, the fastest first."""
        unit = self.multiply_add.unit
        if unit == "hardware" or (unit == "host" and _host_has_fma()):
            return ("hardware", "emulated")
        return ("emulated",)

    def fma_flags(self, fma: str) -> tuple[str, ...]:
        """The extra compile flags of a program that computes its multiply-adds ``fma`` ("" none)."""
        return self.multiply_add.flags if fma == "hardware" else ()

    def level_for(self, cfg) -> tuple[str, ...]:
        """compile_flags for ``cfg``'s program in this process: at ``contraction_free_level`` where the program has
        nothing to contract."""
        if not self.contraction_free_level or not cfg.spec.family.rules(cfg.semantics).contraction_free:
            return self.compile_flags
        return tuple(f for f in self.compile_flags if not f.startswith(LEVEL_FLAG_PREFIXES)) + \
            self.contraction_free_level

    def program_flags(self, cfg) -> tuple[str, ...]:
        """The flags of ``cfg``'s program beyond the target's own: its tuning, how it multiply-adds, the fusion its
        results need (``fusion_flags``) and the code generation of short blocks (the last of one name wins)."""
        blocks = self.short_block_flags if cfg.spec.family.rules(cfg.semantics).short_block_reductions else ()
        return merge_flags(self.tuning_flags(cfg.tuning), self.fma_flags(cfg.fma), fusion_flags(cfg.spec, cfg.dtype),
                           blocks)

    def dtype_gap(self, dtype: str) -> str:
        """Why this target cannot run ``dtype`` ('' when it can)."""
        if dtype not in self.dtypes:
            return dict(self.dtype_gaps).get(dtype, f"{self.name} has no {dtype}")
        return ""

    def widens_on_host(self, dtype: str, reduces: bool) -> bool:
        """Whether a program's narrow (16-bit) inputs cross the boundary as float32 (``Limits.narrow_reductions``)."""
        return reduces and _dtypes.get(dtype).narrow and not self.limits.narrow_reductions

    def require_dtype(self, dtype: str):
        why = self.dtype_gap(dtype)
        if why:
            raise QDQError(f"target {self.name!r} cannot run this {dtype} program: {why}; targets that can: "
                           f"{', '.join(n for n, t in TARGETS.items() if not t.dtype_gap(dtype))}",
                           arg="target")

    @property
    def compile_flags(self) -> tuple[str, ...]:
        return (f"--iree-hal-target-backends={self.backend}",) + COMMON_FLAGS + self.flags

    def tuning_flags(self, tuning: str) -> tuple[str, ...]:
        """The extra flags of ``tuning`` ('' none); one this target does not have is a QDQError."""
        if not tuning:
            return ()
        known = dict(self.tunings)
        if tuning not in known:
            raise QDQError(f"target {self.name!r} has no tuning {tuning!r}; its tunings: "
                           f"{', '.join(known) or 'none'}", arg="tuning")
        return known[tuning]

    def has_tuning(self, tuning: str) -> bool:
        return tuning in dict(self.tunings)

    def availability(self) -> tuple[bool, str]:
        """(True, '') when this machine can run artifacts of this target, else (False, the reason)."""
        if self.compile_only:
            return False, f"{self.name} is compile-only in qdq_compiler"
        why = conflicts.check(self.driver)  # before the driver loads: Vulkan beside TensorFlow's LLVM
        if why:
            return False, why
        return _driver_available(self.driver)

    def require_available(self):
        ok, why = self.availability()
        if not ok:
            raise TargetUnavailableError(f"target {self.name!r} cannot run here: {why}", arg="target")


@dataclass(frozen=True)
class Reference:
    """The NumPy oracle, accepted where a caller asks for a reference run instead of a compiled one."""
    name: str = "oracle"
    description: str = "the NumPy reference (each semantics' framework, bit for bit)"
    is_reference = True

    def availability(self) -> tuple[bool, str]:
        return True, ""

    def require_available(self):
        pass


REFERENCE = Reference()


@functools.lru_cache(maxsize=None)
def _driver_available(driver: str) -> tuple[bool, str]:
    import iree.runtime as rt
    if driver not in rt.query_available_drivers():
        return False, f"the IREE runtime has no {driver!r} driver"
    try:  # made and dropped: a device kept here would live (and, on lavapipe, spin) for the process
        device = rt.get_driver(driver).create_default_device()
    except Exception as e:  # no device behind the driver (no GPU, no Vulkan ICD)
        return False, f"no {driver} device: {readable_iree_error(e)}"
    del device
    return True, ""


@functools.lru_cache(maxsize=None)
def idle_device_seconds(driver: str) -> float | None:
    """The shortest ``Limits.idle_device_s`` among the targets that run on ``driver`` (None: keep the device)."""
    limits = [t.limits.idle_device_s for t in TARGETS.values()
              if t.driver == driver and t.limits.idle_device_s is not None]
    return min(limits) if limits else None


@functools.lru_cache(maxsize=1)
def _host_has_fma() -> bool:
    """Whether this machine's CPU has the FMA3 unit (what ``MultiplyAdd("host")`` switches on)."""
    from .cpu import detect_host_cpu_features, is_x86_64
    return is_x86_64() and "fma" in detect_host_cpu_features()[0]


def readable_iree_error(e: Exception) -> str:
    """IREE's status text as one readable line: its first line without the C source location, the
    status code and the boilerplate advice ("Error creating driver: c/runtime/src/.../x.c:66: UNAVAILABLE;
    CUDA driver library 'libcuda.so'/'nvcuda.dll' not available; please ensure ..." -> "CUDA driver library
    'libcuda.so'/'nvcuda.dll' not available")."""
    text = str(e).strip()
    if not text:
        return type(e).__name__
    line = text.splitlines()[0]
    line = re.sub(r"^Error creating (?:driver|device):\s*", "", line)
    line = re.sub(r"\S+\.(?:c|cc|cpp|h):\d+:\s*", "", line)
    line = re.sub(r"^[A-Z_]{4,};\s*", "", line)
    line = re.split(r";\s*please\b", line)[0].strip().rstrip(":;,").strip()  # a first line ending in ':' read "PATH):)"
    return line or type(e).__name__


_CPU_TRIPLE = "--iree-llvmcpu-target-triple=x86_64-unknown-linux-gnu"
_LLVM_CPU_QUIRKS = Quirks(roundeven_is_slow=True, single_chain_reductions=True)
# Per-axis data as [outer, C, inner] with long inner rows: for dynamic shapes IREE tiles [64, 64, 64], so a
# workgroup reads 64 short rows at a large stride (2-5x a copy); 16384-element distribution tiles and
# 64-byte vectors (four SSE registers) read long rows (about 1.1x). Short or odd rows get worse (2-7x), so
# the runtime asks for it by shape (config.canonical_view).
# IREE tiles a dynamic 2-D or 3-D element-wise pass [64, 64, ...]: 64 short strided row pieces per
# workgroup; long rows want whole rows per tile (split-rows' template also reduces its rows in two passes).
_LONG_ROW_FLAGS = ("--iree-llvmcpu-distribution-size=16384", "--iree-llvmcpu-target-vector-width-in-bytes=64")
# MX's blocks (Rules.short_block_reductions): 1,024-element distribution tiles (1,024 blocks of a last-axis
# [2^18, 64] per workgroup, 512 workgroups at 2^24 instead of 16,384); measured at 2^24 with iree-benchmark-module,
# fake_quantize MXFP8 12.5 -> 9.0 ms (last axis), 17.4 -> 12.1 ms (blocks along the middle of [1, 4096, 4096],
# where long-rows' 16,384 gave one workgroup the whole tensor); 256 and 4096 were slower or no faster
_SHORT_BLOCK_FLAGS = ("--iree-llvmcpu-distribution-size=1024",)
# split-columns changes the template only (its reductions' partials), not the code generation.
_LLVM_CPU_TUNINGS = (("long-rows", _LONG_ROW_FLAGS), ("split-rows", _LONG_ROW_FLAGS), ("split-columns", ()))
# (unfused_middle_reductions: measured on lavapipe; CUDA's code generation is not measured, so it keeps the barrier)
_GPU_QUIRKS = Quirks(keeps_denormals=True, folds_mul_by_zero=True, minmax_ignores_nan=True,
                     unfused_middle_reductions=True, no_index_workgroup_memory=True)

TARGETS: dict[str, Target] = {t.name: t for t in [
    # This host's level (targets/cpu.py host_level): x86-64-v3 (AVX2) without FMA where the CPU has it, else
    # x86-64-v2 (SSE4.2); the same bits. A bundle's cpu artifacts are portable x86-64-v2 unless asked.
    Target("cpu", "llvm-cpu", "local-sync",
           (_CPU_TRIPLE, *level_flags(host_level()),
            # Peel the vector remainder: with dynamic shapes the default masks every load and store
            # into scalar inserts (FakeQuantArgs at 2^24: 2.2x a copy -> about 1.2x).
            "--iree-llvmcpu-vector-pproc-strategy=peel"),
           f"llvm-cpu for this host's x86-64 level, {host_level()} (no FMA but where tf-xla fuses)"
           + (", x86-64-v4 for programs with nothing to contract (MX)" if contraction_free_level() else "")
           + ": bit-exact",
           quirks=_LLVM_CPU_QUIRKS,
           tunings=_LLVM_CPU_TUNINGS, caller_storage=True, contraction_free_level=contraction_free_level(),
           short_block_flags=_SHORT_BLOCK_FLAGS,
           # tf-xla's FMAs on the host's unit (IREE's CPU threads run with FTZ/DAZ, as XLA's): the same bits
           # as the emulation, several times faster. Only programs that round multiply-adds once get +fma:
           # IREE marks every float op 'contract', so the unit fuses any multiply-add of the program. +fma
           # implies AVX, whose 32-byte loads need 32-byte aligned buffers (NumPy's are 16: a copy of every
           # input, 10 ms at 2^24): 16-byte vectors keep the SSE alignment (runtime.import_alignment).
           multiply_add=MultiplyAdd("host", ("--iree-llvmcpu-target-cpu-features=+fma",
                                             "--iree-llvmcpu-target-vector-width-in-bytes=16"),
                                    vectors_16_bytes=True, narrow_reductions=False)),
    Target("cpu-host", "llvm-cpu", "local-sync",
           ("--iree-llvmcpu-target-cpu=host",),
           "llvm-cpu tuned for this machine's CPU; FMA contraction may change the last bit",
           bit_exact=False, quirks=_LLVM_CPU_QUIRKS, caller_storage=True, multiply_add=MultiplyAdd("host"),
           short_block_flags=_SHORT_BLOCK_FLAGS,
           deviation="IREE marks float ops 'contract': with FMA, a*b+c is rounded once (HALF_UP, FakeQuant)"),
    Target("vmvx", "vmvx", "local-sync", (), "IREE's portable VM-based CPU backend (reference)",
           limits=Limits(narrow_reductions=False),
           quirks=Quirks(roundeven_drops_zero_sign=True, folds_mul_by_zero=True, ordered_ge_true_for_nan=True)),
    Target("vulkan", "vulkan-spirv", "vulkan",
           ("--iree-vulkan-target=llvmpipe", "--iree-hal-external-resources-mappable"),
           "Vulkan SPIR-V for Mesa's lavapipe (llvmpipe); other GPUs via --iree-vulkan-target",
           limits=Limits(max_loop_iterations=65535, empty_buffers=False, idle_device_s=1.0, outer_reductions=False),
           quirks=_GPU_QUIRKS),
    Target("cuda", "cuda", "cuda", ("--iree-cuda-target=sm_80",),
           "CUDA PTX for sm_80 (runs on Ampere and, JIT-compiled by the driver, on Hopper)",
           # Measured on an H200 (driver 580): a zero-element call fails with CUDA_ERROR_INVALID_VALUE.
           # fma.rn.f32/f64 round once (sm_80 PTX; 4,000,000 triples per type exact on an H200); denormals
           # are kept, so the template flushes the fused result as x86's FTZ does (macro fma_hw_func)
           limits=Limits(empty_buffers=False, max_dispatch_bindings=16, paired_reductions=False),
           quirks=_GPU_QUIRKS,
           multiply_add=MultiplyAdd("hardware")),
]}


def get(name: str, *, reference_ok: bool = False):
    """The target called ``name``; with ``reference_ok``, "oracle" gives ``REFERENCE``.

    Anything else is a QDQError listing what is allowed in this place.
    """
    if reference_ok and name == REFERENCE.name:
        return REFERENCE
    try:
        return TARGETS[name]
    except (KeyError, TypeError):
        pass
    allowed = ", ".join(TARGETS) + (f", or {REFERENCE.name!r} ({REFERENCE.description})" if reference_ok else "")
    if name == REFERENCE.name:
        raise QDQError(f"'oracle' is the NumPy reference, not a compile target; compile targets: {allowed}",
                       arg="target") from None
    raise QDQError(f"unknown target {name!r}; allowed: {allowed}", arg="target") from None


def available_targets() -> list[str]:
    return [n for n, t in TARGETS.items() if t.availability()[0]]
