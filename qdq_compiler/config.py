"""``OpConfig``: what one compiled artifact is (op, attributes, dtype, shape, target).

Attributes that change the program's structure (range source, rounding, axis, rank) are always part
of the config. Numeric attributes (num_bits, narrow_range, signed_input, Args' min/max) are either
baked in as constants (``params="baked"``, what bundles ship by default) or passed at run time as trailing 0-d
arguments (``params="runtime"``, the default of the Python path: one artifact serves every num_bits,
which costs nothing on a memory-bound op and saves a compile per attribute value; its data-shaped results are
written into caller storage on CPU targets). ``params="arguments"`` passes them at run time too, with the plain
signature (results returned): a bundle entry whose parameters change per call (MX's stochastic seed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from . import dtypes, ops, targets
from . import semantics as _semantics
from .errors import Checker, QDQError
from .validation import bind, check_attr

PARAM_MODES = ("runtime", "baked", "arguments")


def parse_shape(text: str | tuple | list) -> tuple[int | None, ...]:
    """'?x8' -> (None, 8); '' or 'scalar' -> (); a tuple/list passes through (None or '?' = dynamic)."""
    if isinstance(text, (tuple, list)):
        dims = list(text)
    else:
        t = str(text).strip()
        if t in ("", "scalar", "()"):
            return ()
        dims = t.split("x")
    out = []
    for d in dims:
        if d is None or d == "?" or d == -1:
            out.append(None)
            continue
        try:
            v = int(d)
        except (TypeError, ValueError):
            raise QDQError(f"shape {text!r}: dimension {d!r} must be a non-negative integer or '?'",
                           arg="shape") from None
        if v < 0:
            raise QDQError(f"shape {text!r}: dimension {v} must be >= 0 (or '?' for dynamic)", arg="shape")
        out.append(v)
    return tuple(out)


def format_shape(shape) -> str:
    return "x".join("?" if d is None else str(d) for d in shape) or "scalar"


def _fma_choice(c: Checker | None, spec, rules, attrs: dict, dtype: str, target, fma: str | None) -> str:
    """OpConfig.fma of a program: "" when it rounds no multiply-add once, else as ``OpConfig.make`` says
    (``from_call`` passes the host's first unit, always available: no checker needed)."""
    if not rules.fused_multiply_add(spec, attrs, dtype):
        return ""
    # a unit that cannot run this program (MultiplyAdd.narrow_reductions): the emulation, or refused when asked
    unfit = not target.multiply_add.narrow_reductions and dtypes.get(dtype).narrow and spec.family.reduces(spec, attrs)
    if fma is None or (c is None and unfit):
        return "hardware" if target.multiply_add.unit == "hardware" and not unfit else "emulated"
    if fma not in target.fma_units() or (fma == "hardware" and unfit):
        allowed = [u for u in target.fma_units() if not (u == "hardware" and unfit)]
        c.fail(f"fma={fma!r} is not available for target {target.name!r} here{' for this 16-bit reduction' if unfit else ''}; "
               f"allowed: {', '.join(repr(u) for u in allowed)}", "fma")
    return fma


@dataclass(frozen=True)
class OpConfig:
    """A frozen, hashable description of one compiled artifact."""
    op: str
    attrs: tuple[tuple[str, Any], ...]
    dtype: str = "float32"
    shape: tuple[int | None, ...] = (None,)
    target: str = "cpu"
    params: str = "runtime"
    semantics: str = _semantics.DEFAULT
    tuning: str = ""   # a code-generation tuning of the target for this program's data ("" none; Target.tunings)
    fma: str = ""      # how the program's once-rounded multiply-adds run: "hardware", "emulated" ("" none: Rules)
    _attr_dict: Mapping[str, Any] = field(default=None, compare=False, hash=False, repr=False)

    @staticmethod
    def make(op: str, attrs: Mapping[str, Any] | None = None, dtype: str = "float32", shape="?",
             target: str = "cpu", params: str = "runtime", semantics: str | None = None,
             tuning: str = "", fma: str | None = None) -> "OpConfig":
        """Validate and normalise: every attribute filled in (defaults), unknown ones rejected.

        ``fma`` (programs that round multiply-adds once): None is the portable choice, a target's fused
        instruction only where every device of the target has it (CUDA), else the emulation; "hardware"
        asks for this machine's unit (an error where it has none); "emulated" always works."""
        spec = ops.get(op)
        attrs = dict(attrs or {})
        semantics = _semantics.get(semantics or _semantics.default_for(spec.namespace)).name
        c = Checker(spec.name, _semantics.framework(spec.namespace))
        rules = spec.family.rules(semantics)
        why = rules.unsupported(spec)
        if why:
            c.fail(why, "semantics")
        unknown = sorted(set(attrs) - set(spec.attr_map))
        if unknown:
            c.fail(f"unknown attribute {unknown[0]!r}; attributes of {op}: {spec.user_attr_names}", unknown[0])
        full = {a.name: check_attr(c, a, attrs.get(a.name, a.default)) for a in spec.attrs}
        allowed = rules.dtypes
        if dtype not in allowed:
            hint = rules.dtype_hint(spec, dtype)
            c.fail(f"dtype {dtype!r} is not supported under semantics={semantics!r}; allowed: {', '.join(allowed)}"
                   + (f". {hint}" if hint else ""), "dtype")
        targets.get(target).tuning_flags(tuning)  # an unknown target or tuning is a QDQError listing the known ones
        if params not in PARAM_MODES:
            c.fail(f"params={params!r}; allowed: {', '.join(PARAM_MODES)}", "params")
        shape = parse_shape(shape)
        fma = _fma_choice(c, spec, rules, full, dtype, targets.get(target), fma)
        cfg = OpConfig(op, tuple(sorted(full.items())), dtype, shape, target, params, semantics, tuning, fma)
        cfg.check_static()
        return cfg

    @staticmethod
    def from_reference(op: str, attrs: Mapping[str, Any] | None = None, dtype: str = "float32", shape="?",
                       target: str = "cpu", params: str = "runtime", semantics: str | None = None, tuning: str = "",
                       shapes: Mapping[str, Any] | None = None, types: Mapping[str, str] | None = None) -> "OpConfig":
        """The configuration a user describes (the command line, a bundle entry): the reference's attributes only,
        the data's ``shape``, and optionally other inputs' shapes and types by name (``shapes``, ``types``); the
        internal attributes are derived from them (``Family.configure``), as a call derives them from its arrays."""
        spec = ops.get(op)
        c = Checker(spec.name, _semantics.framework(spec.namespace))
        attrs, shapes, types = dict(attrs or {}), dict(shapes or {}), dict(types or {})
        # An internal attribute given by name overrides what the inputs' declarations derive (kept for the
        # generated lit tests, which pin programs whose choice no declaration makes yet: a dynamic extent's ragged
        # blocks, tiny scales); it is never listed nor suggested.
        forced = {a.name: attrs.pop(a.name) for a in spec.attrs if spec.is_internal(a.name) and a.name in attrs}
        unknown = sorted(set(attrs) - set(spec.attr_map))
        if unknown:
            c.fail(f"unknown attribute {unknown[0]!r}; attributes of {op}: {spec.user_attr_names}", unknown[0])
        for what, given in (("shape", shapes), ("dtype", types)):
            for name in given:
                if name not in spec.input_names:
                    c.fail(f"input {name!r} (a {what} given by name) is not an input of {op}; inputs: "
                           f"{', '.join(spec.input_names)}", name)
        dims = parse_shape(shapes.pop(spec.data_input, shape))
        declared = {n: parse_shape(v) for n, v in shapes.items()}
        named = {}
        for n, v in types.items():
            try:
                named[n] = dtypes.name_of(dtypes.np_of(v))
            except (QDQError, TypeError, ValueError):
                c.fail(f"input {n}: dtype {v!r} is not known", n)
        full = {**spec.family.configure(spec, attrs, dims, declared, named, dtype), **forced}
        for inp in spec.inputs:   # a declared type an internal attribute cannot name: the input's own error
            a = spec.attr_map.get(inp.dtype[5:]) if inp.dtype.startswith("attr:") else None
            if inp.name in named and a is not None and a.choices and full.get(a.name) not in a.choices:
                c.fail(f"input {inp.name} of type {named[inp.name]} is not allowed; allowed: "
                       f"{', '.join(v for v in a.choices if v)}", inp.name)
        return OpConfig.make(op, full, dtype, dims, target, params, semantics, tuning)   # (then, by the caller:
        #   jobs.bundle.signature.check_declared, the declared shapes against the program's parameters)

    @staticmethod
    def from_call(call, target: str, shape: str, override: Mapping[str, Any], tuning: str = "") -> "OpConfig":
        """The runtime configuration a validated ``Call`` (validation.bind) runs in, with no second validation:
        its structural attributes (``override``: those the canonical view fixes), the others at their defaults
        (they travel as runtime parameters); ``target`` and ``tuning`` as the executor chose them."""
        spec = call.spec
        structural = spec.family.structural(spec)
        full = {a.name: override[a.name] if a.name in override else call.attrs[a.name] if a.name in structural
                else a.default for a in spec.attrs}
        t = targets.get(target)   # in process: the host's unit where it has one
        fma = _fma_choice(None, spec, spec.family.rules(call.semantics), full, call.dtype_name, t, t.fma_units()[0])
        return OpConfig(call.op, tuple(sorted(full.items())), call.dtype_name, parse_shape(shape), target, "runtime",
                        call.semantics, tuning, fma)

    @property
    def spec(self) -> ops.OpSpec:
        return ops.get(self.op)

    @property
    def attr(self) -> dict[str, Any]:
        return dict(self.attrs)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def structural(self) -> set[str]:
        return set(self.spec.family.structural(self.spec))

    def check_static(self):
        """Validate the config with the same checks as a call (validation.bind), on stand-in arrays of
        its shape (a dynamic dim counts as 1): attribute ranges, axis against rank, PerChannel rank."""
        spec, a = self.spec, self.attr
        dims = tuple(1 if d is None else d for d in self.shape)
        axis = spec.family.channel_axis(spec, a, len(dims))
        pshape = (dims[axis],) if axis is not None and 0 <= axis < len(dims) else ()
        dt = dtypes.get(self.dtype).np
        kwargs = {}
        for inp in spec.inputs:
            if inp.layout == ops.DATA:
                kwargs[inp.name] = np.zeros(dims, dt)
            elif inp.layout == ops.SCALAR:
                kwargs[inp.name] = np.array(inp.example, inp.dtype)
            else:   # a per-channel parameter: its declared stand-in value (blocked: the data's shape in blocks)
                shape = pshape
                if spec.family.operand_layout(spec, a, inp) == ops.BLOCKS and axis is not None:
                    size = spec.family.block_size(spec, a)
                    if size < 1:
                        Checker(spec.name, _semantics.framework(spec.namespace)).fail(
                            f"block_size={size}: blocks need block_size > 0", "block_size")
                    shape = tuple(-(-d // size) if i == axis else d for i, d in enumerate(dims))
                kwargs[inp.name] = np.full(shape, inp.example, dtypes.np_of(inp.dtype_name(a, dt.name)))
            if inp.layout == ops.DATA and not inp.typed_by_op:
                kwargs[inp.name] = np.zeros(dims, dtypes.np_of(inp.dtype_name(a, dt.name)))
        bind(self.op, {**kwargs, **{k: v for k, v in a.items()}}, semantics=self.semantics)

    def key(self) -> dict:
        """A JSON-able identity (what the cache hashes, with the rendered text and flags)."""
        key = {"op": self.op, "attrs": dict(self.attrs), "dtype": self.dtype,
               "shape": format_shape(self.shape), "target": self.target, "params": self.params}
        if self.semantics != _semantics.DEFAULT:  # absent for tf-cpu: the keys of existing artifacts stay valid
            key["semantics"] = self.semantics
        if self.tuning:
            key["tuning"] = self.tuning
        if self.fma:
            key["fma"] = self.fma
        return key

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.attrs if self.params == "baked" or k in self.structural]
        sem = "" if self.semantics == _semantics.DEFAULT else f" ({self.semantics})"
        tuning = f" tuned for {self.tuning}" if self.tuning else ""
        return f"{self.op}[{', '.join(parts)}] {self.dtype} {format_shape(self.shape)} @{self.target}{sem}{tuning}"

    def __str__(self):
        return json.dumps(self.key(), sort_keys=True)


# -- canonical shapes --------------------------------------------------------------------------------------
# The Python path runs every call in one of three layouts (ops.FLAT, ops.LAST, ops.AXIS), so that one
# dynamic-shape artifact serves every shape of a kind: NumPy reshapes of contiguous arrays are free and the
# arithmetic is element-wise within a channel, so the bits are unchanged.

LAYOUT_RANK = {ops.FLAT: 1, ops.LAST: 2, ops.AXIS: 3}
# The structural attribute a layout fixes (AXIS runs the [outer, C, inner] view with axis 1).
LAYOUT_ATTRS = {ops.FLAT: {}, ops.LAST: {}, ops.AXIS: {"axis": 1}}


def canonical_dims(layout: str, shape: tuple[int, ...], axis: int | None) -> tuple[int, ...]:
    """The shape of data of ``shape`` in ``layout`` (channel ``axis``)."""
    if layout == ops.FLAT or axis is None:
        return (int(np.prod(shape, dtype=np.int64)),)
    if layout == ops.LAST:
        return (int(np.prod(shape[:-1], dtype=np.int64)), shape[-1])
    return (int(np.prod(shape[:axis], dtype=np.int64)), shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64)))


LONG_ROWS = "long-rows"  # the tuning of per-axis programs whose inner rows are long (Target.tunings)
# The tuning of per-tensor programs that reduce a long tensor: it runs as [n / SPLIT_WIDTH, SPLIT_WIDTH]
# (rows of SPLIT_WIDTH, a size the template relies on), so that its reductions spread over the cores.
SPLIT_ROWS = "split-rows"
SPLIT_WIDTH = 1024
SPLIT_MIN = 1 << 16
# The tuning of channels-last programs that reduce long [rows, C] data: the rows are reduced in SPLIT_GROUPS
# groups of rows / SPLIT_GROUPS (a size the template relies on), spread over the cores, then the partials.
SPLIT_COLUMNS = "split-columns"
SPLIT_GROUPS = 16


def canonical_view(layout: str, shape: tuple[int, ...], axis: int | None,
                   rank2: bool = True, split: bool = False) -> tuple[tuple[int, ...], dict, str]:
    """(dims, the structural attrs they fix, the tuning they ask for) of the view the Python path runs
    data of ``shape`` in. AXIS data whose channels are its last dimension (inner == 1) runs as [outer, C]
    with axis 1: IREE vectorises the innermost dimension, and one of size 1 leaves it a scalar loop
    (measured: 15-22x a copy, against about 1x for the rank-2 view). AXIS data with long inner rows (a
    multiple of 16, or 128 and more) asks for LONG_ROWS, which targets may tune for. ``rank2`` False
    keeps channels-last data [outer, C, 1] (a target that cannot compile the rank-2 program's reductions).
    ``split`` (a program that reduces, on a target with the split tunings): a long flat tensor runs as
    [n / SPLIT_WIDTH, SPLIT_WIDTH] (SPLIT_ROWS), and long channels-last data whose rows divide into
    SPLIT_GROUPS asks for SPLIT_COLUMNS."""
    dims = canonical_dims(layout, shape, axis)
    if split and len(dims) == 1 and dims[0] >= SPLIT_MIN and dims[0] % SPLIT_WIDTH == 0:
        return (dims[0] // SPLIT_WIDTH, SPLIT_WIDTH), LAYOUT_ATTRS[ops.FLAT], SPLIT_ROWS
    if layout == ops.AXIS and axis is not None:
        if dims[2] == 1 and rank2:
            return dims[:2], {"axis": 1}, _columns_tuning(dims[:2], split)
        if dims[2] % 16 == 0 or dims[2] >= 128:
            return dims, LAYOUT_ATTRS[layout], LONG_ROWS
    if layout == ops.LAST and axis is not None:
        return dims, LAYOUT_ATTRS[layout], _columns_tuning(dims, split)
    return dims, LAYOUT_ATTRS[layout], ""


def _columns_tuning(dims: tuple[int, ...], split: bool) -> str:
    """SPLIT_COLUMNS for long [rows, C] data that reduces and whose rows divide into SPLIT_GROUPS."""
    rows, channels = dims
    if split and rows % SPLIT_GROUPS == 0 and rows * channels >= SPLIT_MIN:
        return SPLIT_COLUMNS
    return ""


def layout_of(spec: ops.OpSpec, attrs) -> str:
    """The layout a call of ``spec`` with ``attrs`` runs in (per-tensor calls are always FLAT)."""
    return spec.family.layout(spec, attrs)
