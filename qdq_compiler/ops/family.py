"""``Family``: the behaviour one group of ops shares, as hooks that generic code calls.

Generic code (``validation.bind``, ``config``, ``emit``, ``execute``, the jobs) never asks which op or
family it holds: it calls these hooks on ``spec.family``. Each family module (``ops/qdq.py``, ...)
subclasses ``Family`` and registers its ``OpSpec``s, the way JAX's ``lax.py`` registers a primitive with
its rules side by side.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .. import dtypes
from ..errors import QDQError
from .rules import Rules
from .spec import DATA, RANGE, OpSpec, Input

# Canonical layouts of the data on the Python path (config.canonical_view): the data reshaped so that one
# artifact serves every shape of a kind. The bits are unchanged: the arithmetic is element-wise per channel.
FLAT = "flat"        # per-tensor: rank 1
LAST = "last"        # per-channel along the last dimension: [batch, C]
AXIS = "axis"        # per-channel along any axis: [outer, C, inner] with axis 1

# Numeric attributes that change nothing in a program's structure travel as runtime parameters;
# these change the program and are always part of a configuration.
STRUCTURAL = frozenset({"range_given", "round_mode", "axis"})


class Family:
    name: str = ""
    # One Rules block per semantics the family answers (ops/rules.py), registered by the family module.
    rules_by_semantics: Mapping[str, Rules] = {}

    def answers(self, semantics: str) -> bool:
        """Whether the family has rules under ``semantics`` (a semantics may cover some families only)."""
        return semantics in self.rules_by_semantics

    def rules(self, semantics: str) -> Rules:
        """The family's rules under ``semantics``; a QDQError naming the semantics it has rules for."""
        try:
            return self.rules_by_semantics[semantics]
        except (KeyError, TypeError):
            allowed = ", ".join(repr(s) for s in self.rules_by_semantics)
            raise QDQError(f"semantics={semantics!r} has no rules for the {self.name} ops; allowed: {allowed}",
                           arg="semantics") from None

    # -- validation ----------------------------------------------------------------------------------
    def wrong_dtype_words(self, spec: OpSpec, input_name: str, dtype: np.dtype) -> str | None:
        """TF's words for a data tensor of a dtype the op does not take (None: TF has none)."""
        if len(spec.dtypes) > 1 and dtype.name not in ("float16", "bfloat16", "float32", "float64"):
            return (f"Value for attr 'T' of {dtype.name} is not in the list of allowed values: "
                    f"bfloat16, half, float, double")
        return None

    def mismatched_dtype_words(self, spec: OpSpec, index: int, got: np.dtype, want: np.dtype) -> str | None:
        """The reference's words for input number ``index`` given as ``got`` where ``want`` is required."""
        return (f"cannot compute {spec.name} as input #{index}(zero-based) was expected to be a "
                f"{dtypes.tf_name(want.name)} tensor but is a {dtypes.tf_name(got.name)} tensor")

    def public_arguments(self, spec: OpSpec, kwargs: dict) -> dict:
        """A public call's arguments as ``validation.bind`` takes them (aten: a Python float scale as a float32
        0-d array, 1-element tensors as 0-d, ...); TF's pass unchanged."""
        return kwargs

    def configure(self, spec: OpSpec, attrs: Mapping[str, Any], dims: tuple, shapes: Mapping[str, tuple],
                  types: Mapping[str, str], element: str) -> dict:
        """The attributes of a program built with no arrays (the command line, a bundle entry): the reference's
        ``attrs``, and the internal ones derived from the inputs as declared: ``dims`` the data's shape (None:
        dynamic), ``shapes`` and ``types`` those given by input name, ``element`` the op's element type. By default
        an input whose dtype an internal attribute names ("attr:<name>") sets it from its declared type."""
        out = dict(attrs)
        for inp in spec.inputs:
            named = types.get(inp.name)
            if named is not None and inp.dtype.startswith("attr:") and inp.dtype[5:] in spec.attr_map:
                key = inp.dtype[5:]
                if key in attrs and attrs[key] != named:
                    raise QDQError(f"{key}={attrs[key]!r} does not match {inp.name}'s type {named}", op=spec.name,
                                   arg=key)
                out[key] = named
        return out

    def element_dtype(self, spec: OpSpec, kwargs: Mapping[str, Any]) -> np.dtype | None:
        """The op's element type T where no operand of type T carries it (ONNX's DequantizeLinear: its result's
        type); None: the first T-typed array's."""
        return None

    def public_results(self, spec: OpSpec, call, outputs: tuple) -> tuple:
        """A call's outputs as the framework returns them (aten's per-tensor gradient sums as [1]); unchanged
        by default."""
        return outputs

    # -- structure -----------------------------------------------------------------------------------
    def channel_axis(self, spec: OpSpec, attrs: Mapping[str, Any], rank: int) -> int | None:
        """The channel dimension of a call, or None for a per-tensor one."""
        axis = attrs.get("axis", -1)
        return None if axis == -1 else axis

    def operand_layout(self, spec: OpSpec, attrs: Mapping[str, Any], operand: Input) -> str:
        """The shape relation of an operand in a call with ``attrs``: its declared one, or BLOCKS where a family
        blocks a RANGE operand (ONNX's blocked quantization)."""
        return operand.layout

    def block_size(self, spec: OpSpec, attrs: Mapping[str, Any]) -> int:
        """The elements of the channel dimension one block of a BLOCKS operand covers (0: none is blocked)."""
        return 0

    def layout(self, spec: OpSpec, attrs: Mapping[str, Any]) -> str:
        """The canonical layout (FLAT, LAST or AXIS) the Python path runs a call in."""
        return FLAT if attrs.get("axis", -1) == -1 else AXIS

    def structural(self, spec: OpSpec) -> frozenset[str]:
        """The attributes that shape the program (the rest can be runtime parameters)."""
        return STRUCTURAL & set(spec.attr_map)

    def sum_terms(self, spec: OpSpec, arrays: Mapping[str, np.ndarray], attrs: Mapping[str, Any], name: str):
        """The terms a float-sum output adds up, channels last (the layout numerics.sum_within_bound reduces):
        the input ``spec.sums_of`` (TF's gradients); a family whose terms are computed says so."""
        return arrays[spec.sums_of]

    def reduces(self, spec: OpSpec, attrs: Mapping[str, Any]) -> bool:
        """Whether the program reduces over the data (a loop as long as the data, per channel)."""
        return bool(spec.sum_outputs)

    # -- computing -----------------------------------------------------------------------------------
    def grid_step(self, call) -> np.ndarray | None:
        """The quantisation step of the call's data output (broadcastable to the data), for measuring a
        difference in levels; None where the output is not on a grid (gradients)."""
        return None

    def template_vars(self, spec: OpSpec, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """The family's own switches, as the template reads them (``k.v.<name>``)."""
        return {}

    # -- samples for the validation matrix and the benchmarks ----------------------------------------
    def matrix_variants(self, spec: OpSpec) -> list[dict]:
        """The structural attribute sets the validation matrix covers."""
        return [{}]

    def sample_shape(self, spec: OpSpec, attrs: Mapping[str, Any], size: int) -> tuple[int, ...]:
        """The data shape of about ``size`` elements the validation matrix samples (config.sample_shape of the
        call's layout: 8 channels last, or 4 channels between 10s)."""
        layout = self.layout(spec, attrs)
        if layout == LAST:
            return (max(size // 8, 1), 8)
        if layout == AXIS:
            return (max(size // 40, 1), 4, 10)
        return (size,)

    def random_calls(self, spec: OpSpec, attrs: Mapping[str, Any], x: np.ndarray, rng: np.random.Generator,
                     special) -> list[dict]:
        """Keyword arguments of several calls on the data ``x`` (random, of the entry's shape and dtype;
        ``special(a, scale)`` sprinkles ties, NaN, infinities, zeros and subnormals), under several numeric
        attribute sets."""
        raise NotImplementedError

    def bench_kwargs(self, spec: OpSpec, attrs: Mapping[str, Any], shape: tuple[int, ...],
                     rng: np.random.Generator) -> dict:
        """Keyword arguments of one float32 benchmark call: normal data (scale 2), each parameter its declared
        example (Input.example: range [-1.5, 2.0], 8 bits), a ramp across channels when per-channel."""
        kw = dict(attrs)
        axis = self.channel_axis(spec, attrs, len(shape))
        for inp in spec.inputs:
            if inp.layout == DATA:
                kw[inp.name] = (rng.standard_normal(shape, dtype=np.float32) * np.float32(2)).astype(np.float32)
            elif inp.layout == RANGE:
                v = np.float32(inp.example)
                if axis is not None and len(shape) > 1:
                    kw[inp.name] = (v * np.linspace(0.5, 1.5, shape[axis], dtype=np.float32)).astype(np.float32)
                else:
                    kw[inp.name] = v
            else:
                kw[inp.name] = np.asarray(inp.example, inp.dtype)[()]
        return kw
