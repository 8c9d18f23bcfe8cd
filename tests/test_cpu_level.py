"""The cpu target's x86-64 level (targets/cpu.py host_level): x86-64-v3 without FMA where the host has AVX2, its
bindings declared 16-byte aligned so that NumPy's arrays are read in place; bundles stay portable.

A program with no multiply-add to contract (Rules.contraction_free: the MX family) compiles at the host's widest
level, x86-64-v4 (AVX-512, whose FMA LLVM cannot switch off), where the host has it. The declaration is checked
here on the compiled code, whatever this host has: each MX kind compiled for x86-64-v4 holds no fused multiply-add
in its dispatches (the linked runtime library's exp and fma have some; they are not the program's). The bits are
the validation matrix's to check (`qdqc validate` runs the MX configurations on cpu at the level this host takes)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from qdq_compiler import emit, onnx_ops, runtime, targets
from qdq_compiler.config import OpConfig
from qdq_compiler.host_memory import RESOURCE_ALIGNMENT_16
from qdq_compiler.iree_tools import iree_compile_path
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

FMA = re.compile(r"^\s+v?f(n)?m(add|sub)\w*\s", re.M)
CASES = [   # (op, attrs, semantics): each template path once
    ("MXFakeQuantize", {"elem": "mxfp8_e4m3", "scale_rule": "floor"}, "ocp"),
    ("MXFakeQuantize", {"elem": "mxfp4_e2m1", "scale_rule": "rceil"}, "torchao"),
    ("MXFakeQuantize", {"elem": "mxint8", "scale_rule": "even", "rounding": "stochastic"}, "ocp"),
    ("MXFakeQuantize", {"elem": "nvfp4", "block_size": 16}, "ocp"),
    ("MXFakeQuantize", {"elem": "nvfp4", "block_size": 16}, "torchao"),
    ("MXQuantize", {"elem": "mxfp6_e3m2", "elem_type": "float6_e3m2fn", "scale_rule": "ceil"}, "ocp"),
    ("MXDequantize", {"elem": "mxfp8_e5m2", "elem_type": "float8_e5m2"}, "ocp"),
    ("MXFakeQuantizeGradient", {"elem": "mxfp4_e2m1"}, "ocp"),
    ("NVFP4Quantize", {}, "ocp"),
    ("NVFP4Dequantize", {}, "ocp"),
]


def _dispatch_asm(text: str) -> str:
    """The assembly of the program's dispatch functions (labels naming a dispatch, up to the next function)."""
    out, keep = [], False
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_.$][\w.$]*):", line)
        if m and not m.group(1).startswith("."):
            keep = "_dispatch_" in m.group(1)
        if keep:
            out.append(line)
    return "\n".join(out)


def _avx512_dispatches(cfg, tmp_path) -> list[str]:
    """The assembly of ``cfg``'s dispatch functions compiled for x86-64-v4 (its other flags the cpu target's)."""
    t = targets.get("cpu")
    flags = [f for f in t.compile_flags if not f.startswith(cpu_level.LEVEL_FLAG_PREFIXES)]
    flags += [f"--iree-llvmcpu-target-cpu={cpu_level.WIDEST_CPU}", *t.program_flags(cfg)]
    src, dump = tmp_path / "m.mlir", tmp_path / "dump"
    src.write_text(emit.render(cfg))
    subprocess.run([iree_compile_path(), str(src), "-o", str(tmp_path / "m.vmfb"), *flags,
                    f"--iree-hal-dump-executable-intermediates-to={dump}"], check=True, capture_output=True)
    return [_dispatch_asm(f.read_text()) for f in sorted(dump.glob("*.s"))]


@pytest.mark.parametrize("op,attrs,semantics", CASES, ids=[f"{o}-{s}-{i}" for i, (o, _, s) in enumerate(CASES)])
def test_contraction_free_programs_hold_no_fma_at_avx512(op, attrs, semantics, tmp_path):
    cfg = OpConfig.make(op, {"axis": 1, **attrs}, "float32", "?x?", "cpu", "runtime", semantics)
    assert cfg.spec.family.rules(cfg.semantics).contraction_free
    asm = _avx512_dispatches(cfg, tmp_path)
    assert asm and all(a for a in asm), "no dispatch function found in the assembly"
    assert all("zmm" in a for a in asm), "not compiled for AVX-512"
    for a in asm:
        assert not FMA.search(a), FMA.search(a).group(0)


def test_the_scan_finds_a_contracted_program(tmp_path):
    """The scan above can fail: TF's FakeQuantWithMinMaxArgs (x * inv - qmin's multiply-add) compiled for x86-64-v4
    holds fused multiply-adds in its dispatch, which is why the cpu target keeps TF's ops at x86-64-v3 without FMA."""
    cfg = OpConfig.make("FakeQuantWithMinMaxArgs", {}, "float32", "?", "cpu", "runtime", None)
    assert not cfg.spec.family.rules(cfg.semantics).contraction_free
    assert any(FMA.search(a) for a in _avx512_dispatches(cfg, tmp_path))


def test_only_contraction_free_programs_change_level():
    t = targets.get("cpu")
    mx = OpConfig.make("MXFakeQuantize", {"elem": "mxfp4_e2m1", "axis": 1}, "float32", "?x?", "cpu", "runtime", "ocp")
    tf = OpConfig.make("FakeQuantWithMinMaxArgs", {}, "float32", "?", "cpu", "runtime", None)
    assert t.level_for(tf) == t.compile_flags
    if t.contraction_free_level:   # this host has AVX-512 (and the level is not forced)
        flags = t.level_for(mx)
        assert f"--iree-llvmcpu-target-cpu={cpu_level.WIDEST_CPU}" in flags
        assert not any("-fma" in f for f in flags) and sum(f.startswith("--iree-llvmcpu-target-cpu=") for f in flags) == 1
    else:
        assert t.level_for(mx) == t.compile_flags
    assert targets.get("vmvx").level_for(mx) == targets.get("vmvx").compile_flags


def test_short_block_programs_take_wider_distribution_tiles():
    """MX's programs (Rules.short_block_reductions) take the cpu target's short_block_flags, after any tuning's
    (the last of one name wins, once in the flags: long-rows' 16,384-element tiles gave one workgroup the whole
    tensor); other families and targets do not."""
    t = targets.get("cpu")
    mx = OpConfig.make("MXFakeQuantize", {"axis": 1}, "float32", "?x?x?", "cpu", "runtime", "ocp", tuning="long-rows")
    flags = t.program_flags(mx)
    sizes = [f for f in flags if f.startswith("--iree-llvmcpu-distribution-size=")]
    assert sizes == list(t.short_block_flags[:1]) and len(set(flags)) == len(flags)
    tf = OpConfig.make("FakeQuantWithMinMaxArgs", {}, "float32", "?", "cpu", "runtime", None)
    assert not set(t.short_block_flags) & set(t.program_flags(tf))
    vmvx = OpConfig.make("MXFakeQuantize", {}, "float32", "?x?", "vmvx", "runtime", "ocp")
    assert targets.get("vmvx").program_flags(vmvx) == ()
    assert targets.merge_flags(("--a=1", "--b"), ("--a=2",)) == ("--b", "--a=2")
