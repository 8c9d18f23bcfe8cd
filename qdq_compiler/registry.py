"""The op registry: one declarative ``OpSpec`` per TensorFlow raw op.

Everything else (validation, the oracle, the templates, the CLI, the tests) reads these records;
nothing else in the package lists op names. Names, defaults and allowed values follow the TF 2.21
op definitions (spec section 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Families: which oracle module, template and validation rules an op uses.
QDQ = "qdq"                      # QuantizeAndDequantize V1..V4 forward
QDQ_GRAD = "qdq_grad"            # QuantizeAndDequantizeV4Grad
FAKE_QUANT = "fake_quant"        # FakeQuantWithMinMax{Args,Vars,VarsPerChannel}
FAKE_QUANT_GRAD = "fake_quant_grad"

ROUND_MODES = ("HALF_TO_EVEN", "HALF_UP")
QDQ_DTYPES = ("float32", "float64")
FQ_DTYPES = ("float32",)


@dataclass(frozen=True)
class Attr:
    name: str
    kind: type                    # bool, int, float or str
    default: Any
    choices: tuple = ()           # allowed values for str attrs
    doc: str = ""


@dataclass(frozen=True)
class Input:
    name: str
    role: str                     # data | grad | min | max | num_bits
    dtype: str = "T"              # "T" (the op's element type) or a fixed dtype ("int32")


@dataclass(frozen=True)
class OpSpec:
    name: str
    family: str
    inputs: tuple[Input, ...]
    attrs: tuple[Attr, ...]
    outputs: tuple[str, ...]
    dtypes: tuple[str, ...]
    doc: str
    # Declarative behaviour switches (read by validation, oracle and templates):
    range_from: str = "tensor"    # qdq: "attr" (V1) | "tensor"; fake quant: "attr" | "scalar" | "channel"
    round_mode_attr: bool = False  # has a round_mode attr (else HALF_TO_EVEN, or floor(x+0.5) for FakeQuant)
    num_bits_input: bool = False  # V3: num_bits is an int32 tensor input
    divides: bool = False         # FakeQuantWithMinMaxVars divides by scale instead of multiplying by inv
    sum_outputs: tuple[str, ...] = ()  # outputs that are float reductions (summation order is free, policy 6)
    gradient_of: str | None = None
    tf_wrappers: tuple[str, ...] = field(default=())

    @property
    def attr_map(self) -> dict[str, Attr]:
        return {a.name: a for a in self.attrs}

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    def input(self, role: str) -> Input | None:
        return next((i for i in self.inputs if i.role == role), None)

    @property
    def has_axis(self) -> bool:
        return "axis" in self.attr_map

    @property
    def per_channel_last(self) -> bool:
        return self.range_from == "channel"


def _a(name, kind, default, choices=(), doc=""):
    return Attr(name, kind, default, tuple(choices), doc)


SIGNED = _a("signed_input", bool, True, doc="signed integer range [-2^(b-1), 2^(b-1)-1], else [0, 2^b-1]")
NUM_BITS_QDQ = _a("num_bits", int, 8, doc="1..61 when signed, 1..62 when unsigned")
NARROW = _a("narrow_range", bool, False, doc="drop the lowest quantisation level")
AXIS = _a("axis", int, -1, doc="-1 = per-tensor, k >= 0 = per-channel along dimension k")
ROUND = _a("round_mode", str, "HALF_TO_EVEN", ROUND_MODES, "rounding of the scaled value")
NUM_BITS_FQ = _a("num_bits", int, 8, doc="2..16")


def _range_given(default):
    return _a("range_given", bool, default, doc="take the range from input_min/input_max, else from the data")


_QDQ_TENSOR_INPUTS = (Input("input", "data"), Input("input_min", "min"), Input("input_max", "max"))
_QDQ_V2_ATTRS = (SIGNED, NUM_BITS_QDQ, _range_given(False), ROUND, NARROW, AXIS)

OPS: dict[str, OpSpec] = {}


def _register(spec: OpSpec) -> OpSpec:
    if spec.name in OPS:
        raise AssertionError(f"duplicate op {spec.name}")
    OPS[spec.name] = spec
    return spec


_register(OpSpec(
    "QuantizeAndDequantize", QDQ, (Input("input", "data"),),
    (SIGNED, NUM_BITS_QDQ, _range_given(False),
     _a("input_min", float, 0.0, doc="range minimum (float attr)"),
     _a("input_max", float, 0.0, doc="range maximum (float attr)")),
    ("output",), QDQ_DTYPES,
    "V1: range from float attrs, HALF_TO_EVEN, per-tensor (removed from TF graphs at GraphDef 22).",
    range_from="attr"))
_register(OpSpec(
    "QuantizeAndDequantizeV2", QDQ, _QDQ_TENSOR_INPUTS, _QDQ_V2_ATTRS, ("output",), QDQ_DTYPES,
    "V2: range from tensors or data, round_mode attr, optional per-channel axis.",
    round_mode_attr=True, tf_wrappers=("quantize_and_dequantize",)))
_register(OpSpec(
    "QuantizeAndDequantizeV3", QDQ, _QDQ_TENSOR_INPUTS + (Input("num_bits", "num_bits", "int32"),),
    (SIGNED, _range_given(True), NARROW, AXIS), ("output",), QDQ_DTYPES,
    "V3: num_bits as an int32 scalar tensor, always HALF_TO_EVEN.",
    num_bits_input=True))
_register(OpSpec(
    "QuantizeAndDequantizeV4", QDQ, _QDQ_TENSOR_INPUTS, _QDQ_V2_ATTRS, ("output",), QDQ_DTYPES,
    "V4: the V2 kernel; differs only in its registered (masked) gradient.",
    round_mode_attr=True, tf_wrappers=("quantize_and_dequantize_v2",)))
_register(OpSpec(
    "QuantizeAndDequantizeV4Grad", QDQ_GRAD,
    (Input("gradients", "grad"),) + _QDQ_TENSOR_INPUTS, (AXIS,),
    ("input_backprop", "input_min_backprop", "input_max_backprop"), QDQ_DTYPES,
    "Gradient of V4: gradients masked by input_min <= input <= input_max (raw range, inclusive).",
    gradient_of="QuantizeAndDequantizeV4"))

_ARGS_ATTRS = (_a("min", float, -6.0, doc="range minimum (float32 attr)"),
               _a("max", float, 6.0, doc="range maximum (float32 attr)"), NUM_BITS_FQ, NARROW)
_FQ_ATTRS = (NUM_BITS_FQ, NARROW)
_VARS_INPUTS = (Input("inputs", "data"), Input("min", "min"), Input("max", "max"))

_register(OpSpec(
    "FakeQuantWithMinMaxArgs", FAKE_QUANT, (Input("inputs", "data"),), _ARGS_ATTRS, ("outputs",), FQ_DTYPES,
    "Fake-quantise with a nudged range from float attrs; multiplies by the inverse scale.",
    range_from="attr", tf_wrappers=("fake_quant_with_min_max_args",)))
_register(OpSpec(
    "FakeQuantWithMinMaxArgsGradient", FAKE_QUANT_GRAD, (Input("gradients", "grad"), Input("inputs", "data")),
    _ARGS_ATTRS, ("backprops",), FQ_DTYPES,
    "Gradients masked by the nudged range (inclusive).",
    range_from="attr", gradient_of="FakeQuantWithMinMaxArgs",
    tf_wrappers=("fake_quant_with_min_max_args_gradient",)))
_register(OpSpec(
    "FakeQuantWithMinMaxVars", FAKE_QUANT, _VARS_INPUTS, _FQ_ATTRS, ("outputs",), FQ_DTYPES,
    "Fake-quantise with scalar min/max tensors; divides by the scale (unlike Args/PerChannel).",
    range_from="scalar", divides=True, tf_wrappers=("fake_quant_with_min_max_vars",)))
_register(OpSpec(
    "FakeQuantWithMinMaxVarsGradient", FAKE_QUANT_GRAD, (Input("gradients", "grad"),) + _VARS_INPUTS,
    _FQ_ATTRS, ("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"), FQ_DTYPES,
    "Masked input gradient plus the sums of gradients below/above the nudged range.",
    range_from="scalar", sum_outputs=("backprop_wrt_min", "backprop_wrt_max"),
    gradient_of="FakeQuantWithMinMaxVars", tf_wrappers=("fake_quant_with_min_max_vars_gradient",)))
_register(OpSpec(
    "FakeQuantWithMinMaxVarsPerChannel", FAKE_QUANT, _VARS_INPUTS, _FQ_ATTRS, ("outputs",), FQ_DTYPES,
    "Per-channel fake-quant along the LAST dimension; min/max of shape [d].",
    range_from="channel", tf_wrappers=("fake_quant_with_min_max_vars_per_channel",)))
_register(OpSpec(
    "FakeQuantWithMinMaxVarsPerChannelGradient", FAKE_QUANT_GRAD, (Input("gradients", "grad"),) + _VARS_INPUTS,
    _FQ_ATTRS, ("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"), FQ_DTYPES,
    "Per-channel gradient; min/max sums over every dimension but the last.",
    range_from="channel", sum_outputs=("backprop_wrt_min", "backprop_wrt_max"),
    gradient_of="FakeQuantWithMinMaxVarsPerChannel",
    tf_wrappers=("fake_quant_with_min_max_vars_per_channel_gradient",)))


def get(name: str) -> OpSpec:
    """The spec of ``name``; an unknown name is a QDQError listing the known ops."""
    try:
        return OPS[name]
    except (KeyError, TypeError):
        from .errors import QDQError
        raise QDQError(f"unknown op {name!r}; known ops: {', '.join(OPS)}", arg="op") from None
