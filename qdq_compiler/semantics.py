"""TF 2.21's two answers for the same op, as named semantics: its CPU kernels and its XLA lowering.

The same raw op run eagerly (the CPU kernels) and inside ``tf.function(jit_compile=True)`` (XLA) gives
different bits: XLA orders the arithmetic differently (FakeQuant's ``level * scale + nudged_min``,
Vars multiplying by ``1 / scale``), and XLA:CPU fuses multiply-adds into FMAs with one rounding on a host
that has them (x86-64 with FMA, as here). Each semantics is a reference (an oracle and goldens) that the
compiled programs reproduce bit for bit; the families own the arithmetic (one ``Rules`` block per
semantics, ``ops/rules.py``), this module only names them.

A semantics belongs to an op namespace (``tf``: TF's raw ops; ``aten``: PyTorch's; ONNX's ops next): its
ops' names and arguments are the namespace's, and ``qdqc diverge`` compares two semantics of one namespace.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import QDQError


@dataclass(frozen=True)
class Semantics:
    name: str
    namespace: str        # the op namespace whose ops it answers ("tf": TF's raw ops)
    reference: str        # what it reproduces, in the words reports use
    golden_subdir: str    # where its goldens live under qdq_compiler/goldens/ ("" = the top level)
    doc: str
    framework_mode: str = "eager"   # how the reference framework runs an op to give this answer ("xla": in
    #   tf.function(jit_compile=True)); qdqc bench times the framework that way, in its own process


TF_CPU = Semantics(
    "tf-cpu", "tf", "TF 2.21 CPU kernels (eager)", "",
    "TensorFlow 2.21's CPU kernels, as eager execution runs them: FTZ/DAZ, no FMA, every step rounded.")
TF_XLA = Semantics(
    "tf-xla", "tf", "TF 2.21 XLA:CPU (jit_compile=True, x86-64 with FMA)", "xla",
    "TensorFlow 2.21's XLA lowering as tf.function(jit_compile=True) runs it on an x86-64 CPU with FMA: "
    "XLA's order of operations, multiply-adds fused with one rounding; float16/bfloat16 computed in "
    "float32 and rounded back after each operation.", framework_mode="xla")

TORCH_CPU = Semantics(
    "torch-cpu", "aten", "PyTorch 2.13 CPU kernels (eager, x86-64 AVX2 with FMA)", "aten",
    "PyTorch 2.13's CPU kernels for the aten fake-quant ops, as eager mode runs them on an x86-64 CPU with "
    "AVX2 and FMA: a float32 reciprocal of the scale, nearbyint (ties to even), the float zero point's "
    "multiply-add fused where GCC contracts it; float16/bfloat16 computed in float32 and rounded once.")

ONNX_REFERENCE = Semantics(
    "onnx", "onnx", "onnx 1.23.2 reference implementation (opset 28)", "onnx",
    "The onnx package's reference implementation (onnx.reference.ReferenceEvaluator) of ONNX's QuantizeLinear "
    "and DequantizeLinear at opset 28: NumPy arithmetic in the inputs' types, ml_dtypes' conversions to the "
    "float8/float6/float4 types; where it departs from the operator text (an infinite quotient into an integer "
    "type), its answer.")

ORT_CPU = Semantics(
    "ort-cpu", "onnx", "onnxruntime 1.32 CPU kernels (opset 25)", "onnx/ort",
    "onnxruntime 1.32's CPU kernels for QuantizeLinear and DequantizeLinear (its newest opset for them, 25): the "
    "onnx reference's arithmetic, but an integer result clipped in float (an infinite or huge quotient saturates, "
    "NaN gives the type's minimum) and a float8 conversion without saturation that departs from round-to-nearest "
    "in one window (e4m3fn [480, 496): 448; e5m2 [61440, 65536): NaN); float32 and float16 only, no float4/float6.")

TORCHAO = Semantics(
    "torchao", "mx", "torchao 0.18.0 MX reference (PyTorch 2.13 CPU, eager)", "mx",
    "torchao 0.18.0's MX formats as its eager PyTorch code computes them on the CPU (to_mx, then to_dtype): the "
    "E8M0 scale from the bits of the block's float32 amax (floor, ceil, even) or from float32 log2(amax / max) "
    "(rceil), byte 0 divided as 2^-126 (rceil: multiplied by 1) but dequantized as 2^-127, an infinity's block "
    "scaled finite; float32 arithmetic, subnormals kept (ops/mx_numerics.py lists where it departs from OCP v1.0).")

OCP_MX = Semantics(
    "ocp", "mx", "OCP Microscaling Formats (MX) v1.0, the specification (NVFP4: NVIDIA's recipe)", "mx/ocp",
    "The formats' own texts. OCP MX v1.0's conversion (section 6.3) as exact arithmetic: the E8M0 scale 2^s, byte 0 "
    "2^-127 both ways, elements rounded to nearest even and clamped to the largest normal, a block with a NaN or "
    "an infinity NaN; where the text is silent (the ceil, even and rceil rules, which NaN) the choice is stated in "
    "ops/mx_ocp.py. NVFP4 (not an OCP format) as NVIDIA's recipe computes it, each step a float32 operation "
    "(ops/nvfp4_spec.py).")

SEMANTICS: dict[str, Semantics] = {s.name: s for s in (TF_CPU, TF_XLA, TORCH_CPU, ONNX_REFERENCE, ORT_CPU, OCP_MX,
                                                       TORCHAO)}
DEFAULT = TF_CPU.name

# Each op namespace: the framework whose words errors quote, and the semantics a call gets unless told.
FRAMEWORKS = {"tf": "TensorFlow", "aten": "PyTorch", "onnx": "ONNX", "mx": "OCP MX"}
NAMESPACE_DEFAULTS = {"tf": TF_CPU.name, "aten": TORCH_CPU.name, "onnx": ONNX_REFERENCE.name, "mx": OCP_MX.name}


def framework(namespace: str) -> str:
    """The reference framework of an op namespace, as error messages name it."""
    return FRAMEWORKS[namespace]


def default_for(namespace: str) -> str:
    """The semantics an op of ``namespace`` gets unless one is named."""
    return NAMESPACE_DEFAULTS[namespace]


def get(name) -> Semantics:
    """The semantics called ``name``; a QDQError naming the argument and the allowed values otherwise."""
    if isinstance(name, Semantics):
        return name
    try:
        return SEMANTICS[name]
    except (KeyError, TypeError):
        raise QDQError(f"semantics={name!r} is not known; allowed: {', '.join(repr(n) for n in SEMANTICS)}",
                       arg="semantics") from None


def names(namespace: str | None = None) -> tuple[str, ...]:
    """Every semantics' name, or those of one op namespace."""
    return tuple(n for n, s in SEMANTICS.items() if namespace is None or s.namespace == namespace)


DEFAULT_PAIR = (TF_CPU.name, TF_XLA.name)   # what `qdqc diverge` compares unless told: TF's two answers


def pair(names_: tuple[str, ...] | None = None) -> tuple[str, str]:
    """Two semantics of one namespace to compare (``qdqc diverge``): ``names_`` checked, or DEFAULT_PAIR."""
    got = tuple(get(n).name for n in (DEFAULT_PAIR if names_ is None else names_))
    if len(got) != 2 or got[0] == got[1]:
        raise QDQError(f"semantics={','.join(got)!r}: name two different semantics to compare; allowed: "
                       f"{', '.join(SEMANTICS)}", arg="semantics")
    a, b = (get(n) for n in got)
    if a.namespace != b.namespace:
        raise QDQError(f"semantics {a.name!r} ({a.namespace} ops) and {b.name!r} ({b.namespace} ops) answer different "
                       f"ops; compare two of one namespace: {', '.join(names(a.namespace))}", arg="semantics")
    return got


def parse_list(text: str | None) -> tuple[str, ...]:
    """'tf-cpu,tf-xla' (the CLI's spelling) as validated names, in the order given, without repeats; None: each
    op namespace's default (tf-cpu, torch-cpu)."""
    if text is None:
        return tuple(NAMESPACE_DEFAULTS.values())
    out = []
    for part in str(text).split(","):
        name = get(part.strip()).name
        if name not in out:
            out.append(name)
    if not out:
        raise QDQError(f"--semantics {text!r}: name at least one of {', '.join(SEMANTICS)}", arg="semantics")
    return tuple(out)
