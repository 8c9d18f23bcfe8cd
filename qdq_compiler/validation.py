"""Turn raw keyword arguments into a checked ``Call``, before anything is computed or compiled.

The generic checks live here (argument names, attribute types, array conversion and dtypes); each op
family adds its own (spec section 5, including the ones TF makes only in graph mode and the inputs on
which TF 2.21 aborts the process: project policy 3 and 4) through the family's rules (``spec.family.rules(semantics).check``). Each error is
a ``QDQError`` naming the argument, the value and what is allowed, followed by TF's own message where
TF has one, so TF users can search for it.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import numpy as np

from . import dtypes, ops
from . import semantics as _semantics
from .errors import Checker, QDQTypeError


@dataclass(frozen=True)
class Call:
    """A validated op invocation: arrays in their final dtype, every attribute filled in."""
    spec: ops.OpSpec
    arrays: Mapping[str, np.ndarray]
    attrs: Mapping[str, Any]
    dtype: np.dtype
    semantics: str = _semantics.DEFAULT   # whose answer: "tf-cpu" (TF's CPU kernels) or "tf-xla" (its XLA lowering)
    # the op, semantics and the attributes given, by type and bits (None: some attribute is no plain
    # scalar): with the dtype and the data's shape it picks the compiled plan (execute.prepare's fast path)
    attrs_key: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def dtype_name(self) -> str:
        return dtypes.name_of(self.dtype)

    @property
    def op(self) -> str:
        return self.spec.name

    @cached_property
    def data(self) -> np.ndarray:
        return self.arrays[self.spec.data_input]

    def result_dtype(self, i: int) -> np.dtype:
        """The dtype of result ``i``: the op's element type, or the fixed one its declaration names (a bool mask)."""
        declared = self.spec.results[i].dtype
        return self.dtype if declared == "T" else dtypes.np_of(self.spec.results[i].dtype_name(self.attrs,
                                                                                             self.dtype_name))

    def __reduce__(self):
        """Pickled by the op's name (its spec holds the family's functions): a validation cluster ships calls
        between processes, and every process has the same registry (jobs/cluster checks the sources)."""
        return (_call_of, (self.spec.name, dict(self.arrays), dict(self.attrs), self.dtype, self.semantics,
                           self.attrs_key))

    def per_channel_axis(self) -> int | None:
        """The channel dimension, or None for a per-tensor call."""
        return self.spec.family.channel_axis(self.spec, self.attrs, self.data.ndim)


# ----------------------------------------------------------------------------------------------
# Arguments and attributes


def check_attr(c: Checker, attr: ops.Attr, value):
    """``value`` of attribute ``attr`` checked and converted as TF converts attribute values."""
    name = attr.name
    if attr.kind is bool:
        if not isinstance(value, (bool, np.bool_)):
            c.fail(f"attribute {name}={value!r} must be a bool (True or False)", name, cls=QDQTypeError)
        return bool(value)
    if attr.kind is int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            c.fail(f"attribute {name}={value!r} must be an int", name, cls=QDQTypeError)
        return int(value)
    if attr.kind is float:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            c.fail(f"attribute {name}={value!r} must be a float", name, cls=QDQTypeError)
        try:
            with np.errstate(over="ignore"):  # beyond float32: ±inf, as TF's proto float
                return float(np.float32(value))  # TF float attrs are proto floats: rounded to float32
        except (OverflowError, ValueError, TypeError) as e:  # an int beyond any float
            text = repr(value) if len(repr(value)) <= 40 else repr(value)[:20] + f"...({len(repr(value))} digits)"
            c.fail(f"attribute {name}={text} cannot be converted to a float ({e})", name)
    if attr.kind is str:
        if isinstance(value, bytes):
            value = value.decode()
        if not isinstance(value, str):
            c.fail(f"attribute {name}={value!r} must be a string, one of {list(attr.choices)}", name,
                   cls=QDQTypeError)
        if attr.choices and value not in attr.choices:
            allowed = ", ".join(f'"{v}"' for v in attr.choices)
            tf_words = f'Value for attr \'{name}\' of "{value}" is not in the list of allowed values: {allowed}'
            c.fail(f"attribute {name}={value!r} is not allowed; allowed values: {list(attr.choices)}", name,
                   tf=tf_words if c.reference == "TensorFlow" else None)   # TF's words are TF's alone
        return value
    raise AssertionError(attr)


def _as_array(c: Checker, spec: ops.OpSpec, name: str, value, dtype, allowed: tuple[str, ...]) -> np.ndarray:
    """Convert one input to an array of ``dtype`` the way TF's convert_to_tensor would, or fail clearly."""
    allowed_txt = " or ".join(allowed)
    if isinstance(value, (str, bytes)) or value is None:
        c.fail(f"input {name}={value!r} must be a numeric array of {allowed_txt}", name, cls=QDQTypeError)
    if isinstance(value, (np.ndarray, np.generic)):
        arr = _native(np.asarray(value))
        if arr.dtype != dtype:
            index = spec.input_names.index(name)
            why = "; every float input of the op must have the same dtype" if dtypes.is_float(dtype) else ""
            c.fail(f"input {name} has dtype {arr.dtype}, expected {np.dtype(dtype).name} (allowed: {allowed_txt}{why})",
                   name, cls=QDQTypeError, tf=spec.family.mismatched_dtype_words(spec, index, arr.dtype, np.dtype(dtype)))
        return arr if arr.flags.c_contiguous else np.array(arr, order="C")
    if isinstance(value, (bool, np.bool_)):
        c.fail(f"input {name}={value!r} is a bool; expected {allowed_txt}", name, cls=QDQTypeError)
    try:
        raw = _native(np.asarray(value))
    except (ValueError, TypeError, OverflowError) as e:
        c.fail(f"input {name} cannot be converted to an array of {allowed_txt}: {e}", name, cls=QDQTypeError)
    if raw.dtype == object:  # mixed element types, nested non-sequences, or ints beyond 64 bits
        c.fail(f"input {name} ({type(value).__name__}) cannot be converted to an array of {allowed_txt}: its "
               f"elements are not all numbers that fit in 64 bits", name, cls=QDQTypeError)
    if raw.dtype.kind not in "fiu" and not dtypes.is_float(raw.dtype):
        c.fail(f"input {name} has element type {raw.dtype}; expected {allowed_txt}", name, cls=QDQTypeError)
    if np.dtype(dtype).kind == "i" and raw.dtype.kind == "f":
        c.fail(f"input {name}={value!r} must be an integer ({np.dtype(dtype).name})", name, cls=QDQTypeError)
    with np.errstate(over="ignore"):  # numbers beyond float32 become ±inf, as in TF's convert_to_tensor
        out = raw.astype(dtype)
    if np.dtype(dtype).kind == "i" and not np.array_equal(out, raw):
        c.fail(f"input {name}={value!r} does not fit in {np.dtype(dtype).name}", name)
    return out if out.flags.c_contiguous else np.array(out, order="C")


def _native(arr: np.ndarray) -> np.ndarray:
    """``arr`` in native byte order (a big-endian array is the same numbers; IREE takes native only)."""
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def _element_dtype(c: Checker, spec: ops.OpSpec, kwargs, semantics: str, rules) -> np.dtype:
    """T: the family's answer (ONNX's DequantizeLinear: its result's type), else the dtype of the first T-typed numpy
    input (TF infers attrs from the first tensor), else float32."""
    allowed = rules.dtypes
    given = spec.family.element_dtype(spec, kwargs)
    if given is not None:
        if dtypes.name_of(given) not in allowed:
            hint = rules.dtype_hint(spec, dtypes.name_of(given))
            c.fail(f"the result's type {dtypes.name_of(given)} is not supported under semantics={semantics!r}; "
                   f"allowed: {', '.join(allowed)}" + (f". {hint}" if hint else ""), "output_dtype", cls=QDQTypeError)
        return np.dtype(given)
    for inp in spec.inputs:
        if inp.dtype != "T" or inp.name not in kwargs:
            continue
        v = kwargs[inp.name]
        if isinstance(v, (np.ndarray, np.generic)):
            dt = np.asarray(v).dtype
            dt = dt if dt.isnative else dt.newbyteorder("=")
            if dtypes.name_of(dt) not in allowed:
                hint = rules.dtype_hint(spec, dt.name)
                c.fail(f"input {inp.name} has dtype {dt} under semantics={semantics!r}; allowed: {', '.join(allowed)}"
                       + (f". {hint}" if hint else ""), inp.name, cls=QDQTypeError,
                       tf=spec.family.wrong_dtype_words(spec, inp.name, dt))
            return dt
    return np.dtype(np.float32)


# Attribute values already checked, per (op, semantics, the attributes given as their types and bits): a
# repeated small call skips the conversions (TF's float attrs are float32) and their checks; every check
# that depends on the arrays' values still runs. Only plain Python or NumPy scalars make a key.
_ATTRS_SEEN: dict = {}
_ATTRS_SEEN_MAX = 4096
_SCALAR_TYPES = (bool, int, float, str, np.bool_, np.integer, np.floating)


def _attrs_key(spec: ops.OpSpec, kwargs, semantics: str):
    key = [spec.name, semantics]
    for a in spec.attrs:
        if a.name in kwargs:
            v = kwargs[a.name]
            if not isinstance(v, _SCALAR_TYPES):
                return None
            # by type and bits: -0.0 == 0.0 and 1 == 1.0 == True, but each converts (or fails) its own way
            key.append((a.name, type(v), v.hex() if type(v) is float else (v.tobytes() if isinstance(v, np.generic)
                                                                            else v)))
    return tuple(key)


def bind(op: str, kwargs: Mapping[str, Any], semantics: str | None = None) -> Call:
    """Validate ``kwargs`` for op ``op`` (its reference's argument names) under ``semantics`` (None: the
    default of the op's namespace); return the ``Call``."""
    spec = ops.get(op)
    semantics = _semantics.get(semantics or _semantics.default_for(spec.namespace)).name
    rules = spec.family.rules(semantics)
    c = Checker(spec.name, _semantics.framework(spec.namespace))
    kwargs = dict(kwargs)
    kwargs.pop("name", None)  # TF's op name argument: accepted and ignored
    if not spec.argument_names.issuperset(kwargs):
        unknown = sorted(set(kwargs) - spec.argument_names)
        c.fail(f"unknown argument {unknown[0]!r}; arguments are: "
               f"{', '.join(spec.input_names + tuple(a.name for a in spec.user_attrs))}", unknown[0])
    for n in spec.input_names:
        if n not in kwargs:
            c.fail(f"missing required input {n!r} (inputs: {', '.join(spec.input_names)})", n)

    for inp in spec.inputs:   # an attribute that names an input's dtype, from the array given (unless given)
        if inp.dtype.startswith("attr:") and inp.name in kwargs:
            given = kwargs[inp.name]
            if isinstance(given, (np.ndarray, np.generic)):
                named = dtypes.name_of(np.asarray(given).dtype)
                a = spec.attr_map.get(inp.dtype[5:])
                if inp.dtype[5:] not in kwargs and a is not None and a.choices and named not in a.choices:
                    # the attribute is the input's type: a type it cannot name is the input's error
                    dt = np.asarray(given).dtype
                    c.fail(f"input {inp.name} has dtype {named}; allowed: {', '.join(v for v in a.choices if v)}",
                           inp.name, cls=QDQTypeError, tf=spec.family.wrong_dtype_words(spec, inp.name, dt))
                kwargs.setdefault(inp.dtype[5:], named)
                stored = dict(inp.stored_as).get(named)
                if stored is not None and kwargs[inp.dtype[5:]] == named:   # held wider at the boundary (exact)
                    kwargs[inp.name] = np.asarray(given).astype(stored)
    memo_key = _attrs_key(spec, kwargs, semantics)
    attrs = _ATTRS_SEEN.get(memo_key) if memo_key is not None else None
    if attrs is None:
        attrs = {a.name: check_attr(c, a, kwargs.get(a.name, a.default)) for a in spec.attrs}
        why = rules.unsupported(spec)
        if why:
            c.fail(why, "semantics")
        if memo_key is not None:
            if len(_ATTRS_SEEN) >= _ATTRS_SEEN_MAX:
                _ATTRS_SEEN.clear()
            _ATTRS_SEEN[memo_key] = attrs
    attrs = dict(attrs)
    dtype = _element_dtype(c, spec, kwargs, semantics, rules)
    arrays = {}
    for inp in spec.inputs:
        if inp.typed_by_op:
            arrays[inp.name] = _as_array(c, spec, inp.name, kwargs[inp.name], dtype,
                                         rules.dtypes)
        else:
            fixed = inp.dtype_name(attrs, dtype.name)
            arrays[inp.name] = _as_array(c, spec, inp.name, kwargs[inp.name], dtypes.np_of(fixed), (fixed,))
    rules.check(c, spec, arrays, attrs)
    for inp in spec.inputs:   # what the family's checks left: a declared 0-d operand must be 0-d
        if inp.layout == ops.SCALAR and arrays[inp.name].ndim != 0:
            c.fail(f"input {inp.name} must be a scalar (rank 0), got shape {list(arrays[inp.name].shape)}", inp.name)
    return Call(spec, arrays, attrs, np.dtype(dtype), semantics, memo_key)


def _call_of(op: str, arrays: dict, attrs: dict, dtype, semantics: str, attrs_key) -> Call:
    """A ``Call`` rebuilt from its pickled parts (``Call.__reduce__``)."""
    return Call(ops.get(op), arrays, attrs, dtype, semantics, attrs_key)


def public_sum_agrees(op: str, kwargs: Mapping[str, Any], name: str, got, want) -> bool:
    """Whether a float-sum output ``name`` of a public call (the namespace's arguments and result shapes, as
    ``qdq_compiler.aten`` takes and returns them) matches ``want`` up to its summation order (policy 6): the
    terms of the bound call; a single total ([1] per tensor, or a 1-D input's 0-d one) bounds every term."""
    from .numerics import sum_within_bound
    spec = ops.get(op)
    call = bind(op, spec.family.public_arguments(spec, dict(kwargs)))
    terms = spec.family.sum_terms(spec, call.arrays, call.attrs, name)
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.size == 1:
        terms, got, want = terms.reshape(-1), got.reshape(()), want.reshape(())
    return sum_within_bound(got, want, terms)
