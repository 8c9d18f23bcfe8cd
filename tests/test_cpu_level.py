"""The cpu target's x86-64 level (targets/cpu.py host_level): x86-64-v3 without FMA where the host has AVX2, its
bindings declared 16-byte aligned so that NumPy's arrays are read in place; bundles stay portable."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from qdq_compiler import onnx_ops, runtime, targets
from qdq_compiler.host_memory import RESOURCE_ALIGNMENT_16
from qdq_compiler.oracle import onnx_ops as onnx_oracle
from qdq_compiler.targets import cpu as cpu_level

from targets_util import require


def _level_of(flags) -> str:
    return [f.split("=", 1)[1] for f in flags if f.startswith("--iree-llvmcpu-target-cpu=")][-1]


def test_the_cpu_target_compiles_for_the_host_level_without_fma():
    flags = targets.get("cpu").flags
    level = cpu_level.host_level()
    assert _level_of(flags) == level
    features = [f for f in flags if f.startswith("--iree-llvmcpu-target-cpu-features=")]
    if level == cpu_level.WIDE_CPU:
        # FMA switched off by the last word of the features (LLVM's last word wins), 16-byte bindings
        assert features and features[-1].endswith(",".join(cpu_level.NO_FMA)), flags
        assert RESOURCE_ALIGNMENT_16 in flags
    else:
        assert not features and RESOURCE_ALIGNMENT_16 not in flags
    assert runtime.import_alignment("llvm-cpu", targets.get("cpu").compile_flags) == 16


def test_a_bundle_is_portable_unless_asked():
    base = targets.get("cpu").compile_flags
    portable = cpu_level.resolve_cpu(None, base)
    assert _level_of(portable.flags) == cpu_level.PORTABLE_CPU
    assert RESOURCE_ALIGNMENT_16 not in portable.flags
    assert not [f for f in portable.flags if f.startswith("--iree-llvmcpu-target-cpu-features=")]
    assert portable.bit_exact and not portable.tuned
    tuned = cpu_level.resolve_cpu("x86-64-v3", base)
    assert RESOURCE_ALIGNMENT_16 in tuned.flags and tuned.bit_exact and "fma" not in tuned.required


@pytest.mark.parametrize("offset", [16, 48])
def test_arrays_16_bytes_off_a_64_byte_line_are_read_in_place(offset):
    """AVX code loading with vmovaps faults on such an array (IREE's default contract is 64 bytes); with the
    16-byte flag it reads it where it is, and gives the oracle's bits."""
    require("cpu")
    n = 1 << 16
    raw = runtime.empty_aligned((n + 64,), np.float32, 64)
    x = raw[offset // 4: offset // 4 + n]
    assert x.ctypes.data % 64 == offset and x.ctypes.data % 16 == 0
    x[:] = np.random.default_rng(offset).standard_normal(n).astype(np.float32) * 40
    scale, zp = np.float32(0.25), np.int8(-3)
    got = onnx_ops.QuantizeLinear(x, scale, zp, target="cpu")
    want = onnx_oracle.QuantizeLinear(x, scale, zp)
    assert np.array_equal(np.asarray(got).view(np.int8), np.asarray(want).view(np.int8))


def _import_with(level: str) -> subprocess.CompletedProcess:
    code = "from qdq_compiler import targets; print(' '.join(targets.get('cpu').flags))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, QDQ_CPU_LEVEL=level))


def test_qdq_cpu_level_forces_a_level_and_refuses_others():
    portable = _import_with("x86-64-v2")
    assert portable.returncode == 0, portable.stderr
    assert "--iree-llvmcpu-target-cpu=x86-64-v2" in portable.stdout.split()
    assert RESOURCE_ALIGNMENT_16 not in portable.stdout
    bad = _import_with("x86-64-v4")
    assert bad.returncode != 0
    assert "QDQ_CPU_LEVEL='x86-64-v4': allowed values are x86-64-v2 and x86-64-v3" in bad.stderr
