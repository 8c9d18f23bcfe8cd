"""Programs write their results straight into the caller's buffer (``iree.abi.output``), with no copy between it
and a temporary: IREE 3.13 adds one whenever it cannot prove the result's size equal to the buffer's. That happened to
every dynamic MX program (their shapes went index -> i32 -> index through stablehlo.get_dimension_size, or took
their dims from another operand): a full extra read and write of the data, 9.2 -> 5.0-6.0 ms for MXFP8
fake_quantize at 2^24 on cpu. templates/shapes.mlir.j2 (index_shape) and mx_fake_quant.mlir.j2 (tied) fix it.

Compiled to IREE's stream level only (any machine, no device), for the targets whose programs take the caller's
buffer (Target.caller_storage: cpu and cpu-host; the others return their results): one program per MX op,
element type and layout that had the copy, and 16-bit programs of other families (their conversions build shapes
too). Every dynamic matrix program at once: ``python tools/caller_storage_scan.py`` (649; 58 copied before,
none now).
"""
from __future__ import annotations

import re
import subprocess

import pytest

from qdq_compiler import emit, execute, targets
from qdq_compiler.iree_tools import iree_compile_path
from qdq_compiler.jobs.validate.matrix import build_matrix

CASES = [
    ("MXFakeQuantize", "f32", "ocp", {"elem": "mxfp8_e4m3", "scale_rule": "floor", "ragged": False}),
    ("MXFakeQuantize", "f32", "torchao", {"elem": "mxfp4_e2m1", "scale_rule": "floor", "ragged": False}),
    ("MXFakeQuantize", "bf16", "ocp", {"elem": "mxfp8_e4m3", "scale_rule": "floor", "ragged": False}),
    ("MXFakeQuantize", "f32", "ocp", {"elem": "nvfp4", "ragged": False}),
    ("MXFakeQuantize", "f32", "ocp", {"rounding": "stochastic", "ragged": False}),
    ("MXDequantize", "f32", "ocp", {"elem": "mxfp4_e2m1", "ragged": False}),
    ("MXFakeQuantizeGradient", "f32", "ocp", {"elem": "mxfp4_e2m1", "ragged": False}),
    ("MXFakeQuantizeGradient", "f16", "ocp", {"ragged": True}),
    ("NVFP4Quantize", "bf16", "ocp", {}),
    ("NVFP4Dequantize", "f32", "ocp", {}),
    ("FakeQuantWithMinMaxVarsPerChannel", "bf16", "tf-cpu", {}),
    ("QuantizeLinear", "f16", "onnx", {}),
]


def _entry(op, short, sem, attrs):
    """The first dynamic matrix entry of ``op`` with element type ``short`` under ``sem`` whose attributes
    include ``attrs``."""
    for e in build_matrix(ops=[op], semantics=(sem,)):
        a = dict(e.attrs)
        if not e.static and e.name.split(":")[1] == short and all(a.get(k) == v for k, v in attrs.items()):
            return e
    raise AssertionError(f"no dynamic matrix entry {op} {short} {sem} {attrs}")


def data_copies(stream_ir: str) -> list[str]:
    """The stream-level copies from or to the caller's buffer (the resource imported with ``consume``), as
    ``source -> target`` inside their stream.cmd.execute (whose block names its resources afresh)."""
    consumed = set(re.findall(r"(%[\w#]+) = stream\.tensor\.import[^\n]* consume ", stream_ir))
    found = []
    for region in stream_ir.split("stream.cmd.execute")[1:]:
        names = {inner for outer, inner in re.findall(r"(%[\w#]+) as (%[\w#]+):", region.split("\n", 1)[0])
                 if outer in consumed}
        for src, dst in re.findall(r"stream\.cmd\.copy (%[\w#]+)\[[^\]]*\], (%[\w#]+)\[", region):
            if src in names or dst in names:
                found.append(f"{src} -> {dst}")
    return found


@pytest.mark.parametrize("target", ["cpu", "cpu-host"])
@pytest.mark.parametrize("op, short, sem, attrs", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_results_are_written_in_place(op, short, sem, attrs, target):
    cfg = execute.config_for_entry(_entry(op, short, sem, attrs), target)
    t = targets.get(target)
    out = subprocess.run([iree_compile_path(), "-", "-o", "-", "--compile-to=stream", *t.level_for(cfg),
                          *t.program_flags(cfg)], input=emit.render(cfg), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "stream.cmd.dispatch" in out.stdout
    assert re.search(r"stream\.tensor\.import[^\n]* consume ", out.stdout), "no caller's buffer: nothing to check"
    assert data_copies(out.stdout) == [], cfg.describe()


def test_the_copy_detector_sees_a_copy():
    """data_copies on the IR the old MXFP8 program compiled to: the dispatch wrote the caller's buffer (%17, as
    %arg3), then IREE copied it into a fresh result; a copy between two temporaries (a padded block amax) is not
    one."""
    ir = ("%17 = stream.tensor.import on(#hal.device.affinity<@__device_0>) consume %arg1 : !hal.buffer -> t\n"
          "%26 = stream.cmd.execute on(#d) await(%t) => with(%4 as %arg2: !r{%3}, %17 as %arg3: !r{%16}, "
          "%result as %arg4: !r{%14}) {\n"
          "  stream.cmd.copy %arg3[%c0], %arg4[%c0], %14 : !r{%16} -> !r{%14}\n"
          "  stream.cmd.copy %arg2[%c0], %arg4[%c0], %15 : !r{%3} -> !r{%14}\n"
          "} => !stream.timepoint\n")
    assert data_copies(ir) == ["%arg3 -> %arg4"]
