"""What ``qdqc bench`` measures: the benchmark cases, their inputs, and the sizes asked for."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from ... import ops as op_registry
from ... import semantics as SEM
from ...errors import QDQError

CHANNELS = 64
LATENCY_ELEMENTS = 16
VARIANTS = ("copy", "api", "device", "oracle", "tf", "tf-op", "torch", "torch-op")
FRAMEWORKS = ("tf", "torch")  # the variants timed only where that framework is installed
DEFAULT_SIZES = (10, 14, 18, 22, 24)  # log2 element counts


@dataclass(frozen=True)
class Case:
    """One benchmarked configuration: an op, its attributes and how its inputs are made."""
    name: str
    op: str
    attrs: dict = field(default_factory=dict)
    kind: str = "per-tensor"         # per-tensor | per-channel | gradient
    range_from: str = "given"        # given | data
    per_channel: bool = False
    compare_to: str | None = None    # the per-tensor case a per-channel case is held against
    tf: bool = True                  # TF can run it (per-channel given ranges of V4 its CPU kernel rejects)
    tf_xla: bool = True              # TF's XLA can run it (V4Grad has no XLA kernel)
    # PyTorch's nearest op, timed beside ours where installed: "per-tensor" (fake_quantize_per_tensor_affine)
    # or "per-channel" (fake_quantize_per_channel_affine, channels on axis 1), None where it has none. Its
    # arithmetic is not TF's (a throughput comparison, never a bit comparison).
    torch: str | None = None
    semantics: str = SEM.DEFAULT     # whose answer our variants compute (TF's own variant: its CPU kernels)

    @property
    def spec(self) -> op_registry.OpSpec:
        return op_registry.get(self.op)


CASES: tuple[Case, ...] = (
    Case("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgs", {"min": -1.5, "max": 2.0}, torch="per-tensor"),
    Case("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVars", torch="per-tensor"),
    Case("QuantizeAndDequantizeV4[range_given]", "QuantizeAndDequantizeV4", {"range_given": True},
         torch="per-tensor"),
    Case("QuantizeAndDequantizeV4[from data]", "QuantizeAndDequantizeV4", {"range_given": False}, range_from="data"),
    Case("FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannel", kind="per-channel",
         per_channel=True, compare_to="FakeQuantWithMinMaxVars", torch="per-channel"),
    Case("QuantizeAndDequantizeV4[range_given,axis]", "QuantizeAndDequantizeV4", {"range_given": True, "axis": 1},
         kind="per-channel", per_channel=True, compare_to="QuantizeAndDequantizeV4[range_given]", tf=False,
         torch="per-channel"),
    Case("QuantizeAndDequantizeV4[from data,axis]", "QuantizeAndDequantizeV4", {"range_given": False, "axis": 1},
         kind="per-channel", range_from="data", per_channel=True, compare_to="QuantizeAndDequantizeV4[from data]"),
    Case("FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxArgsGradient", {"min": -1.5, "max": 2.0},
         kind="gradient"),
    Case("FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsGradient", kind="gradient"),
    Case("FakeQuantWithMinMaxVarsPerChannelGradient", "FakeQuantWithMinMaxVarsPerChannelGradient", kind="gradient",
         per_channel=True),
    Case("QuantizeAndDequantizeV4Grad", "QuantizeAndDequantizeV4Grad", kind="gradient", tf_xla=False),
    # PyTorch's aten ops (semantics torch-cpu); PyTorch itself is timed in its own process by
    # benchmarks/torch_aten_bench.py (benchmarks/README.md), not here
    *(Case(name, op, attrs, kind=kind, per_channel=pc, tf=False, tf_xla=False, semantics="torch-cpu")
      for name, op, attrs, kind, pc in (
          ("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine", {}, "per-tensor", False),
          ("fake_quantize_per_tensor_affine_cachemask", "fake_quantize_per_tensor_affine_cachemask", {},
           "per-tensor", False),
          ("fake_quantize_per_channel_affine[axis=1]", "fake_quantize_per_channel_affine", {"axis": 1},
           "per-channel", True),
          ("fake_quantize_per_channel_affine[axis=0]", "fake_quantize_per_channel_affine", {"axis": 0},
           "per-channel", True),
          ("fake_quantize_per_tensor_affine_cachemask_backward", "fake_quantize_per_tensor_affine_cachemask_backward",
           {}, "gradient", False),
          ("_fake_quantize_learnable_per_tensor_affine_backward", "_fake_quantize_learnable_per_tensor_affine_backward",
           {}, "gradient", False),
          ("_fake_quantize_learnable_per_channel_affine_backward[axis=1]",
           "_fake_quantize_learnable_per_channel_affine_backward", {"axis": 1}, "gradient", True),
          ("fused_moving_avg_obs_fake_quant", "fused_moving_avg_obs_fake_quant", {}, "per-tensor", False),
          ("fused_moving_avg_obs_fake_quant[per_row]", "fused_moving_avg_obs_fake_quant",
           {"per_row_fake_quant": True}, "per-channel", True))),
    # ONNX's Q/DQ (semantics onnx); onnxruntime itself is timed in its own process by
    # benchmarks/onnxruntime_bench.py (benchmarks/README.md), not here
    *(Case(f"{op}[{st}{',axis=1' if pc else ''}]", op,
           {"output_dtype" if op != "DequantizeLinear" else "x_dtype": st,
            **({"granularity": "axis", "axis": 1} if pc else {})},
           kind="per-channel" if pc else "per-tensor", per_channel=pc, tf=False, tf_xla=False, semantics="onnx")
      for op in ("QuantizeLinear", "DequantizeLinear", "QuantizeDequantizeLinear")
      for st, pc in (("int8", False), ("float8_e4m3fn", False), ("int4", False), ("int8", True))),
    # the block-scaled formats (semantics torchao), blocks of 32 along the last axis of [n / C, C]
    *(Case(f"MXFakeQuantize[{elem},{rule}]", "MXFakeQuantize", {"elem": elem, "scale_rule": rule}, kind="per-channel",
           per_channel=True, tf=False, tf_xla=False, semantics="torchao")
      for elem, rule in (("mxfp8_e4m3", "floor"), ("mxfp4_e2m1", "rceil"))),
    # OCP's stored form and stochastic rounding (semantics ocp): MXFP4 codes and scales, back, and rounding by seed
    *(Case(f"{op}[mxfp4_e2m1{',' + extra if extra else ''}]", op, {"elem": "mxfp4_e2m1", "elem_type": "float4_e2m1fn",
                                                                  **({"rounding": "stochastic"} if extra else {})},
           kind="per-channel", per_channel=True, tf=False, tf_xla=False, semantics="ocp")
      for op, extra in (("MXQuantize", ""), ("MXDequantize", ""), ("MXFakeQuantize", "stochastic"))),
    # NVFP4 (semantics ocp: NVIDIA's recipe; its fake quantization under torchao too): blocks of 16, one tensor scale
    *(Case(name, op, {"elem": "nvfp4", "block_size": 16}, kind="per-channel", per_channel=True, tf=False,
           tf_xla=False, semantics="ocp")
      for name, op in (("MXFakeQuantize[nvfp4]", "MXFakeQuantize"), ("NVFP4Quantize", "NVFP4Quantize"),
                       ("NVFP4Dequantize", "NVFP4Dequantize"))),
)


def select_cases(ops: str | None, semantics=(SEM.DEFAULT,)) -> list[Case]:
    """The cases named (case names or op names, comma-separated), or every case, under each of ``semantics``
    (a case under another semantics than the default is named ``<case>@<semantics>``; TF is timed as that
    semantics runs it, XLA under tf-xla, and PyTorch beside the default's cases only)."""
    base = _named_cases(ops)
    out = []
    for sem in dict.fromkeys(SEM.get(s).name for s in semantics):
        for c in base:
            if not c.spec.family.answers(sem) or c.spec.family.rules(sem).unsupported(c.spec) or \
                    not c.spec.family.rules(sem).answers_variant(c.spec, c.attrs):
                continue   # (a variant this semantics has no answer for: MX's stochastic rounding under torchao)
            if c.semantics == sem:   # a case of its own namespace's semantics (aten's: torch-cpu)
                out.append(c)
                continue
            out.append(c if sem == SEM.DEFAULT else
                       replace(c, name=f"{c.name}@{sem}", semantics=sem, tf=c.tf_xla, torch=None,
                               compare_to=c.compare_to and f"{c.compare_to}@{sem}"))
    return out


def _named_cases(ops: str | None) -> list[Case]:
    if not ops:
        return list(CASES)
    out = []
    # commas inside brackets belong to a case's name: "QuantizeAndDequantizeV4[from data,axis]"
    for name in [s.strip() for s in re.split(r",(?![^\[]*\])", ops) if s.strip()]:
        hit = [c for c in CASES if c.name == name] or [c for c in CASES if c.op == name]
        if not hit:
            spec = op_registry.get(name)  # an unknown op raises QDQError naming the known ones
            hit = [Case(name, name, kind="gradient" if spec.gradient_of else "per-tensor",
                        per_channel=spec.family.layout(spec, {}) == op_registry.LAST,
                        tf=spec.namespace == "tf", tf_xla=spec.namespace == "tf",
                        semantics=SEM.default_for(spec.namespace))]
        out += [c for c in hit if c not in out]
    return out


def parse_sizes(text) -> list[int]:
    """'10,14,18' -> [10, 14, 18]: the log2 element counts to measure, sorted and deduplicated."""
    try:
        sizes = sorted({int(s) for s in str(text).split(",") if s.strip()})
    except ValueError:
        raise QDQError(f"--sizes {text!r}: expected comma-separated log2 element counts, e.g. 10,14,18,22,24",
                       arg="--sizes") from None
    if not sizes or sizes[0] < 0 or sizes[-1] > 30:
        raise QDQError(f"--sizes {text!r}: bench's sizes are log2 element counts (24 = 2^24 elements), each in "
                       f"0..30; the default measures 10,14,18,22,24", arg="--sizes")
    return sizes


def make_inputs(case: Case, n: int, seed: int = 0) -> dict:
    """Keyword arguments of ``case.op`` with ``n`` float32 elements of data (normal, scale 2)."""
    rng = np.random.default_rng(seed + n)
    c = min(CHANNELS, n) if case.per_channel else None
    shape = (n // c, c) if c else (n,)
    return case.spec.family.bench_kwargs(case.spec, case.attrs, shape, rng)


def data_inputs(case: Case) -> list[str]:
    """The names of the data-sized inputs (data and gradients)."""
    return list(case.spec.inputs_of(op_registry.DATA))


def io_bytes(case: Case, kw: dict) -> int:
    """Bytes of the data-sized arrays read plus the data-sized result written (in its own dtype: ONNX's
    QuantizeLinear writes one byte per float32 read)."""
    from ...validation import bind
    spec = case.spec
    arrays = [kw[n] for n in data_inputs(case)]
    out = bind(case.op, spec.family.public_arguments(spec, dict(kw)), semantics=case.semantics).result_dtype(0)
    return sum(a.nbytes for a in arrays) + arrays[-1].size * out.itemsize


def copy_bytes(case: Case, kw: dict) -> int:
    """Bytes read plus written by the copy of every data-sized input."""
    return 2 * sum(kw[n].nbytes for n in data_inputs(case))


def range_of(case: Case, kw: dict) -> tuple[np.ndarray, np.ndarray]:
    """The case's quantisation range as float32 arrays (0-d per-tensor, [C] per-channel), wherever the op
    takes it: the min/max attributes (Args), the min/max inputs (Vars) or input_min/input_max (QDQ)."""
    for lo, hi in (("min", "max"), ("input_min", "input_max")):
        if lo in kw:
            return np.asarray(kw[lo], np.float32), np.asarray(kw[hi], np.float32)
        if lo in case.attrs:
            return np.asarray(case.attrs[lo], np.float32), np.asarray(case.attrs[hi], np.float32)
    raise KeyError(f"{case.name} has no range")


def parse_frameworks(text) -> tuple[str, ...]:
    """'tf,torch' -> ('tf', 'torch'); 'none' -> (): the frameworks to time beside ours where installed."""
    names = [s.strip() for s in str(text).split(",") if s.strip()]
    if names == ["none"]:
        return ()
    bad = [n for n in names if n not in FRAMEWORKS]
    if bad or not names:
        raise QDQError(f"--frameworks {text!r}: allowed: {', '.join(FRAMEWORKS)} (comma-separated) or none",
                       arg="--frameworks")
    return tuple(dict.fromkeys(names))
