"""Targets: one object each, holding compile flags, the runtime driver, availability and known limits.

Why the CPU flags look like this: IREE's llvm-cpu backend marks every float op ``contract``
(AddFastMathFlags, no flag turns it off), so on a CPU with FMA a multiply followed by an add becomes
one fused op with one rounding, and TF's three separately rounded steps are lost (HALF_UP's
floor(v*s + 0.5), FakeQuant's s*inv - qzero). The default ``cpu`` target therefore compiles for a
portable x86-64 level without FMA: SSE4.1 keeps floor/roundeven as single instructions, and the
vector width costs nothing on a memory-bound op. ``cpu-host`` tunes for this machine (``host``) and
is documented as not bit-exact wherever contraction applies.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .errors import QDQError, TargetUnavailableError

COMMON_FLAGS = ("--iree-input-type=stablehlo", "--iree-input-demote-f64-to-f32=false")


@dataclass(frozen=True)
class Target:
    name: str
    backend: str                  # iree-compile --iree-hal-target-backends
    driver: str                   # iree runtime driver
    flags: tuple[str, ...]
    description: str
    bit_exact: bool = True        # documented expectation; deviations carry a note
    deviation: str = ""
    dtypes: tuple[str, ...] = ("float32", "float64")
    dynamic_per_channel_reduce: bool = True   # reduction + per-channel broadcast with dynamic dims
    compile_only: bool = False
    limits: dict = field(default_factory=dict)
    quirks: tuple[str, ...] = ()  # lowering workarounds the templates render for this target only

    @property
    def compile_flags(self) -> tuple[str, ...]:
        return (f"--iree-hal-target-backends={self.backend}",) + COMMON_FLAGS + self.flags

    def availability(self) -> tuple[bool, str]:
        """(True, '') when this machine can run artifacts of this target, else (False, the reason)."""
        if self.compile_only:
            return False, f"{self.name} is compile-only in qdq_compiler"
        return _driver_available(self.driver)

    def require_available(self):
        ok, why = self.availability()
        if not ok:
            raise TargetUnavailableError(f"target {self.name!r} cannot run here: {why}", arg="target")


@functools.lru_cache(maxsize=None)
def _driver_available(driver: str) -> tuple[bool, str]:
    import iree.runtime as rt
    if driver not in rt.query_available_drivers():
        return False, f"the IREE runtime has no {driver!r} driver"
    try:
        rt.get_device(driver)
    except Exception as e:  # no device behind the driver (no GPU, no Vulkan ICD)
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return False, f"no {driver} device: {msg}"
    return True, ""


_CPU_TRIPLE = "--iree-llvmcpu-target-triple=x86_64-unknown-linux-gnu"

TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("cpu", "llvm-cpu", "local-sync",
           (_CPU_TRIPLE, "--iree-llvmcpu-target-cpu=x86-64-v2",
            # Peel the vector remainder: with dynamic shapes the default masks every load and store
            # into scalar inserts (FakeQuantArgs at 2^24: 2.2x a copy -> about 1.2x).
            "--iree-llvmcpu-vector-pproc-strategy=peel"),
           "llvm-cpu for portable x86-64-v2 (SSE4.2, no FMA): bit-exact"),
    Target("cpu-host", "llvm-cpu", "local-sync",
           ("--iree-llvmcpu-target-cpu=host",),
           "llvm-cpu tuned for this machine's CPU; FMA contraction may change the last bit",
           bit_exact=False,
           deviation="IREE marks float ops 'contract': with FMA, a*b+c is rounded once (HALF_UP, FakeQuant)"),
    Target("vmvx", "vmvx", "local-sync", (), "IREE's portable VM-based CPU backend (reference)",
           dtypes=("float32", "float64"), quirks=("roundeven_drops_zero_sign", "folds_mul_by_zero")),
    Target("vulkan", "vulkan-spirv", "vulkan",
           ("--iree-vulkan-target=llvmpipe", "--iree-hal-external-resources-mappable"),
           "Vulkan SPIR-V for Mesa's lavapipe (llvmpipe); other GPUs via --iree-vulkan-target",
           dynamic_per_channel_reduce=False, limits={"loop_iterations": 65535, "empty_buffers": False, "dynamic_reduce_max": 65535},
           quirks=("keeps_denormals", "folds_mul_by_zero", "minmax_ignores_nan", "loop_cap")),
    Target("cuda", "cuda", "cuda", ("--iree-cuda-target=sm_80",),
           "CUDA PTX for sm_80 (runs on Ampere and, JIT-compiled by the driver, on Hopper)",
           quirks=("keeps_denormals", "folds_mul_by_zero", "minmax_ignores_nan")),
]}


def get(name: str) -> Target:
    try:
        return TARGETS[name]
    except (KeyError, TypeError):
        raise QDQError(f"unknown target {name!r}; allowed: {', '.join(TARGETS)} (or 'oracle' for the NumPy "
                       f"reference)", arg="target") from None


def available_targets() -> list[str]:
    return [n for n, t in TARGETS.items() if t.availability()[0]]
