"""The declarative records of an op: ``OpSpec`` with its ``Input``s, ``Output``s and ``Attr``s.

A spec says what TF's op definition says (names, defaults, allowed values, dtypes, outputs) and which
``Family`` owns its behaviour. Family-specific switches (where the range comes from, whether num_bits is
a tensor, ...) live in ``variant``, a record defined and read only by the family module.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class Attr:
    name: str
    kind: type                    # bool, int, float or str
    default: Any
    choices: tuple = ()           # allowed values for str attrs
    doc: str = ""
    internal: bool = False        # set from the call's inputs (their shapes, types or values), never by a user:
    #   not the reference's attribute; never listed (qdqc ops), never named in an error; the CLI and bundles derive it
    #   (OpConfig.from_reference; one given by name still overrides it: the generated lit e2e files set some)


def attr(name, kind, default, choices=(), doc="", internal: bool = False) -> Attr:
    """An attribute; ``internal`` marks one derived from the inputs (its doc says what from), never a user's."""
    return Attr(name, kind, default, tuple(choices), doc, internal)


# The shape of an operand, relative to the data (Input.shape):
DATA = "data"        # the data tensor's shape (the data itself, or a gradient of it)
RANGE = "range"      # a per-channel parameter: 0-d per-tensor, [C] along the channel axis per-channel
SCALAR = "scalar"    # 0-d always (V3's num_bits)
BLOCKS = "blocks"    # a blocked parameter: the data's rank, its channel dimension holding ceil(C / block_size)
#   blocks (ONNX's blocked scales); never declared: a family's operand_layout says when a RANGE operand is one


@dataclass(frozen=True)
class Input:
    """One operand, declared: its shape relation to the data, its dtype rule, and a valid stand-in value.
    Generic code (layouts, the program's ABI, stand-in arrays, samples, reports) reads these, never ``role``."""
    name: str
    role: str                     # the reference's meaning (data | grad | min | max | num_bits | scale | ...)
    dtype: str = "T"              # "T" (the op's element type), a fixed dtype ("int32", "float32", "bool"), or
    #   "attr:<name>": the dtype a structural attribute names (aten's zero_point: int32 or float32, two programs;
    #   the attribute "": the op's element type, ONNX's scale of x's type)
    shape: str = DATA             # DATA, RANGE or SCALAR
    example: float | int | None = None   # a valid value where one is needed before any call exists (a
    #   configuration's stand-in arrays, the benchmark's parameters): RANGE and SCALAR operands
    stored_as: tuple[tuple[str, str], ...] = ()   # "attr:" dtypes held at the boundary in another, exactly (a
    #   float16 zero point as float32: widened by bind; the attribute still names float16, its own program)

    @property
    def layout(self) -> str:
        return self.shape

    @property
    def typed_by_op(self) -> bool:
        """Whether the input has the op's element type T (converted with the data, widened with it)."""
        return self.dtype == "T"

    def dtype_name(self, attrs, element: str) -> str:
        """The input's dtype in a call with ``attrs`` whose element type is ``element``."""
        if self.dtype == "T":
            return element
        if self.dtype.startswith("attr:"):
            named = attrs[self.dtype[5:]] or element
            return dict(self.stored_as).get(named, named)
        return self.dtype


def data(name: str, role: str = "data") -> Input:
    """The data tensor (or a gradient of the data's shape)."""
    return Input(name, role)


def per_channel(name: str, role: str, example: float) -> Input:
    """A parameter of the op's type: 0-d per-tensor, [C] per-channel."""
    return Input(name, role, "T", RANGE, example)


def scalar(name: str, role: str, dtype: str, example) -> Input:
    """A 0-d operand of a fixed dtype."""
    return Input(name, role, dtype, SCALAR, example)


def fixed(name: str, role: str, dtype: str, shape: str = DATA, example=None, stored_as=()) -> Input:
    """An operand of a fixed dtype (or one an attribute names, "attr:<name>") that does not follow T: aten's
    mask (bool, the data's shape), its per-channel scale (float32 [C]) and zero point."""
    return Input(name, role, dtype, shape, example, tuple(stored_as))


@dataclass(frozen=True)
class Output:
    """One result, declared as the operands are: its shape relation to the data (DATA: the data's shape;
    RANGE: the range parameters', 0-d per-tensor and [C] per-channel; SCALAR: 0-d). It has the op's element
    type. The executor's result shapes and caller storage, the program's result types and the reports
    read these."""
    name: str
    shape: str = DATA
    dtype: str = "T"      # "T" (the op's element type), a fixed dtype ("bool": aten's masks), or "attr:<name>":
    #   the storage type an attribute names (ONNX's QuantizeLinear: output_dtype)

    @property
    def layout(self) -> str:
        return self.shape

    def dtype_name(self, attrs, element: str) -> str:
        """The result's dtype in a call with ``attrs`` whose element type is ``element``."""
        if self.dtype == "T":
            return element
        return attrs[self.dtype[5:]] if self.dtype.startswith("attr:") else self.dtype


def result(name: str, dtype: str = "T") -> Output:
    """A result of the data's shape (the quantized data, a masked gradient; ``dtype`` "bool": a mask)."""
    return Output(name, DATA, dtype)


def per_channel_result(name: str) -> Output:
    """A result of the range parameters' shape: 0-d per-tensor, [C] per-channel (a range's gradient)."""
    return Output(name, RANGE)


@dataclass(frozen=True)
class OpSpec:
    name: str
    family: Any  # its ops.family.Family (not imported: family.py imports this module)
    inputs: tuple[Input, ...]
    attrs: tuple[Attr, ...]
    results: tuple[Output, ...]   # declared results (Output), in the op's order
    dtypes: tuple[str, ...]
    doc: str
    variant: Any = None           # the family's own switches for this op (read only by the family)
    sum_outputs: tuple[str, ...] = ()  # outputs that are float reductions (summation order is free, policy 6)
    sums_of: str | None = None    # the input those outputs add up (their rounding bound is in its terms)
    gradient_of: str | None = None
    tf_wrappers: tuple[str, ...] = field(default=())
    namespace: str = "tf"         # the public namespace that names it ("tf": raw_ops; "aten": qdq_compiler.aten)
    signature: tuple[str, ...] = ()   # aten: the schema's positional order of inputs and attributes
    public_defaults: tuple[tuple[str, Any], ...] = ()   # aten: the schema's defaults (the rest are required)
    public_name: str = ""         # the public function's name where it is not the op's (mx: fake_quantize)

    def __post_init__(self):
        if not self.results or not all(isinstance(r, Output) for r in self.results):
            raise TypeError(f"{self.name}: results must be Output records (spec.result, spec.per_channel_result)")
        if self.results[0].shape != DATA:
            raise ValueError(f"{self.name}: the first result must have the data's shape (caller storage, views)")

    # Cached (read on every call): a spec never changes.
    @property
    def function_name(self) -> str:
        """The name of the op's function in its public namespace."""
        return self.public_name or self.name

    @cached_property
    def outputs(self) -> tuple[str, ...]:
        """The results' names, in order."""
        return tuple(r.name for r in self.results)

    @cached_property
    def attr_map(self) -> dict[str, Attr]:
        return {a.name: a for a in self.attrs}

    @cached_property
    def user_attrs(self) -> tuple[Attr, ...]:
        """The reference's attributes: what a user sets (the command line, a bundle entry); the internal ones are
        derived from the inputs."""
        return tuple(a for a in self.attrs if not self.is_internal(a.name))

    def is_internal(self, name: str) -> bool:
        """Whether attribute ``name`` is derived from the inputs: declared so, or absent from the reference's
        signature where the op has one (ONNX's, PyTorch's schema, MX's functions)."""
        a = self.attr_map[name]
        return a.internal or bool(self.signature) and name not in self.signature

    @cached_property
    def user_attr_names(self) -> str:
        """The reference's attribute names, as errors list them ("none" where the op has none)."""
        return ", ".join(a.name for a in self.user_attrs) or "none"

    @cached_property
    def input_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    def input(self, role: str) -> Input | None:
        return next((i for i in self.inputs if i.role == role), None)

    @cached_property
    def argument_names(self) -> frozenset[str]:
        """Every keyword the op takes: its inputs and attributes."""
        return frozenset(self.input_names) | frozenset(self.attr_map)

    @cached_property
    def data_input(self) -> str:
        """The name of the data tensor (the one whose shape and dtype the outputs follow)."""
        return self.input("data").name

    def inputs_of(self, layout: str) -> tuple[str, ...]:
        """The names of the inputs of one layout (DATA, RANGE or SCALAR)."""
        return tuple(i.name for i in self.inputs if i.layout == layout)

    @cached_property
    def signature_defaults(self) -> dict[str, Any]:
        return dict(self.public_defaults)

    @property
    def has_axis(self) -> bool:
        return "axis" in self.attr_map
