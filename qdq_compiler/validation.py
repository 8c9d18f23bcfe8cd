"""Turn raw keyword arguments into a checked ``Call``, before anything is computed or compiled.

Every check of spec section 5 lives here, including the ones TF makes only in graph mode (shape
functions) and the inputs on which TF 2.21 aborts the process (project policy 3 and 4). Each error
is a ``QDQError`` naming the argument, the value and what is allowed, followed by TF's own message
where TF has one, so TF users can search for it.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from . import registry as R
from .errors import QDQError, QDQTypeError

_FLOAT_DTYPES = {"float32": np.float32, "float64": np.float64}


@dataclass(frozen=True)
class Call:
    """A validated op invocation: arrays in their final dtype, every attribute filled in."""
    spec: R.OpSpec
    arrays: Mapping[str, np.ndarray]
    attrs: Mapping[str, Any]
    dtype: np.dtype

    @property
    def op(self) -> str:
        return self.spec.name

    @property
    def data(self) -> np.ndarray:
        return self.arrays[self.spec.input("data").name]

    def per_channel_axis(self) -> int | None:
        """The channel dimension, or None for a per-tensor op."""
        if self.spec.per_channel_last:
            return self.data.ndim - 1
        axis = self.attrs.get("axis", -1)
        return None if axis == -1 else axis


def _fmt(v) -> str:
    """A number as C++'s ``operator<<`` prints it (6 significant digits), as in TF's messages."""
    if isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return "%g" % float(v)


def _shape(a: np.ndarray) -> str:
    return "[" + ",".join(str(d) for d in a.shape) + "]"


class _Checker:
    """Collects the context (op name) so each check is one line."""

    def __init__(self, spec: R.OpSpec):
        self.spec = spec

    def fail(self, msg, arg=None, tf=None, cls=QDQError):
        raise cls(msg, op=self.spec.name, arg=arg, tf_message=tf)

    def require(self, ok, msg, arg=None, tf=None):
        if not ok:
            self.fail(msg, arg, tf)


# ----------------------------------------------------------------------------------------------
# Arguments and attributes


def _check_attr(c: _Checker, attr: R.Attr, value):
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
            c.fail(f"attribute {name}={value!r} is not allowed; allowed values: {list(attr.choices)}", name,
                   tf=f'Value for attr \'{name}\' of "{value}" is not in the list of allowed values: {allowed}')
        return value
    raise AssertionError(attr)


def _as_array(c: _Checker, name: str, value, dtype, allowed: tuple[str, ...]) -> np.ndarray:
    """Convert one input to an array of ``dtype`` the way TF's convert_to_tensor would, or fail clearly."""
    allowed_txt = " or ".join(allowed)
    if isinstance(value, (str, bytes)) or value is None:
        c.fail(f"input {name}={value!r} must be a numeric array of {allowed_txt}", name, cls=QDQTypeError)
    if isinstance(value, (np.ndarray, np.generic)):
        arr = _native(np.asarray(value))
        if arr.dtype != dtype:
            index = c.spec.input_names.index(name)
            why = "; every float input of the op must have the same dtype" if np.dtype(dtype).kind == "f" else ""
            c.fail(f"input {name} has dtype {arr.dtype}, expected {np.dtype(dtype).name} (allowed: {allowed_txt}{why})",
                   name, cls=QDQTypeError,
                   tf=f"cannot compute {c.spec.name} as input #{index}(zero-based) was expected to be a "
                      f"{_TF_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)} tensor but is a "
                      f"{_TF_NAMES.get(arr.dtype.name, arr.dtype.name)} tensor")
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
    if raw.dtype.kind not in "fiu":
        c.fail(f"input {name} has element type {raw.dtype}; expected {allowed_txt}", name, cls=QDQTypeError)
    if np.dtype(dtype).kind == "i" and raw.dtype.kind == "f":
        c.fail(f"input {name}={value!r} must be an integer ({np.dtype(dtype).name})", name, cls=QDQTypeError)
    with np.errstate(over="ignore"):  # numbers beyond float32 become ±inf, as in TF's convert_to_tensor
        out = raw.astype(dtype)
    if np.dtype(dtype).kind == "i" and not np.array_equal(out, raw):
        c.fail(f"input {name}={value!r} does not fit in {np.dtype(dtype).name}", name)
    return out if out.flags.c_contiguous else np.array(out, order="C")


_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _native(arr: np.ndarray) -> np.ndarray:
    """``arr`` in native byte order (a big-endian array is the same numbers; IREE takes native only)."""
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def _element_dtype(c: _Checker, kwargs) -> np.dtype:
    """T: the dtype of the first T-typed numpy input (TF infers attrs from the first tensor), else float32."""
    allowed = c.spec.dtypes
    for inp in c.spec.inputs:
        if inp.dtype != "T" or inp.name not in kwargs:
            continue
        v = kwargs[inp.name]
        if isinstance(v, (np.ndarray, np.generic)):
            dt = np.asarray(v).dtype
            dt = dt if dt.isnative else dt.newbyteorder("=")
            if dt.name not in allowed:
                tf = None
                if len(allowed) == 1 and c.spec.range_from == "attr":  # Args: conversion of a fixed-float input
                    tf = f"Tensor conversion requested dtype float32 for Tensor with dtype {dt.name}"
                elif len(allowed) == 1:  # Vars/PerChannel: fixed float inputs
                    index = c.spec.input_names.index(inp.name)
                    tf = (f"cannot compute {c.spec.name} as input #{index}(zero-based) was expected to be a "
                          f"float tensor but is a {_TF_NAMES.get(dt.name, dt.name)} tensor")
                elif dt.kind != "f":
                    tf = (f"Value for attr 'T' of {dt.name} is not in the list of allowed values: "
                          f"bfloat16, half, float, double")
                c.fail(f"input {inp.name} has dtype {dt}; allowed: {', '.join(allowed)}", inp.name,
                       cls=QDQTypeError, tf=tf)
            return dt
    return np.dtype(np.float32)


def bind(op: str, kwargs: Mapping[str, Any]) -> Call:
    """Validate ``kwargs`` for raw op ``op`` (TF's argument names) and return the ``Call``."""
    spec = R.get(op)
    c = _Checker(spec)
    kwargs = dict(kwargs)
    kwargs.pop("name", None)  # TF's op name argument: accepted and ignored
    known = set(spec.input_names) | set(spec.attr_map)
    unknown = sorted(set(kwargs) - known)
    if unknown:
        c.fail(f"unknown argument {unknown[0]!r}; arguments are: {', '.join(spec.input_names + tuple(spec.attr_map))}",
               unknown[0])
    missing = [n for n in spec.input_names if n not in kwargs]
    if missing:
        c.fail(f"missing required input {missing[0]!r} (inputs: {', '.join(spec.input_names)})", missing[0])

    attrs = {a.name: _check_attr(c, a, kwargs.get(a.name, a.default)) for a in spec.attrs}
    dtype = _element_dtype(c, kwargs)
    arrays = {}
    for inp in spec.inputs:
        if inp.dtype == "T":
            arrays[inp.name] = _as_array(c, inp.name, kwargs[inp.name], dtype, spec.dtypes)
        else:
            arrays[inp.name] = _as_array(c, inp.name, kwargs[inp.name], np.dtype(inp.dtype), (inp.dtype,))
    _CHECKS[spec.family](c, arrays, attrs)
    return Call(spec, arrays, attrs, np.dtype(dtype))


# ----------------------------------------------------------------------------------------------
# Family checks (spec section 5)


def _check_qdq_num_bits(c: _Checker, num_bits: int, signed: bool, backticks: bool):
    limit = 61 if signed else 62
    if not 0 < num_bits <= limit:
        s = "`signed_input_`" if backticks else "signed_input_"
        c.fail(f"num_bits={num_bits} is out of range; allowed 1..{limit} when signed_input={signed}", "num_bits",
               tf=f"num_bits is out of range: {num_bits} with {s} {int(signed)}")


def _axes(rank: int) -> str:
    """The allowed axis values for an input of ``rank``, in words."""
    return f"-1 (per-tensor) or 0..{rank - 1}" if rank > 0 else "only -1 (per-tensor; the input is a scalar)"


def _check_axis_range(c: _Checker, axis: int, rank: int):
    if axis < -1:
        c.fail(f"axis={axis} is not allowed; allowed: {_axes(rank)}", "axis",
               tf=f"Axis must be at least -1. Found {axis}")


def _check_range_tensors(c: _Checker, x, mn, mx, axis: int, names=("input_min", "input_max")):
    """The shape-function checks: min/max rank 0 per-tensor, rank 1 of length dim(axis) per-channel."""
    want = 0 if axis == -1 else 1
    for n, t in zip(names, (mn, mx)):
        if t.ndim != want:
            what = "a scalar (rank 0)" if want == 0 else f"a vector of length {x.shape[axis]} (rank 1)"
            c.fail(f"{n} has shape {list(t.shape)}; with axis={axis} it must be {what}", n,
                   tf=f"Shape must be rank {want} but is rank {t.ndim}")
    if want == 1:
        if mn.shape != mx.shape:
            c.fail(f"{names[0]} has shape {list(mn.shape)} but {names[1]} has shape {list(mx.shape)}; they must be equal",
                   names[1], tf=f"Dimension 0 in both shapes must be equal, but are {mx.shape[0]} and {mn.shape[0]}. "
                                f"Shapes are {_shape(mx)} and {_shape(mn)}.")
        for n, t in zip(names, (mn, mx)):
            if t.shape[0] != x.shape[axis]:
                c.fail(f"{n} has length {t.shape[0]} but dimension {axis} of the input is {x.shape[axis]}", n,
                       tf=f"Dimensions must be equal, but are {t.shape[0]} and {x.shape[axis]}")


def _check_given_range(c: _Checker, mn, mx, names=("input_min", "input_max")):
    from .oracle.numerics import flush  # TF compares under DAZ: a subnormal bound is 0
    lo, hi = flush(np.asarray(mn)).item(), flush(np.asarray(mx)).item()
    if not lo <= hi:
        c.fail(f"invalid range: {names[0]}={_fmt(lo)} > {names[1]}={_fmt(hi)}; need {names[0]} <= {names[1]}",
               names[0], tf=f"Invalid range: input_min {_fmt(lo)} > input_max {_fmt(hi)}")


def _checks_qdq(c: _Checker, arrays, attrs):
    spec = c.spec
    x = arrays["input"]
    signed = attrs["signed_input"]
    if spec.num_bits_input:
        nb = arrays["num_bits"]
        if nb.ndim != 0:
            c.fail(f"num_bits must be a scalar int32 tensor, got shape {list(nb.shape)}", "num_bits",
                   tf=f"Invalid shape. The `num_bits` tensor should be a scalar. Got dimensions: {nb.ndim}")
        _check_qdq_num_bits(c, int(nb), signed, backticks=True)
    else:
        _check_qdq_num_bits(c, attrs["num_bits"], signed, backticks=False)
    if spec.range_from == "attr":  # V1
        if attrs["range_given"]:
            _check_given_range(c, np.float32(attrs["input_min"]), np.float32(attrs["input_max"]))
        return
    axis = attrs["axis"]
    rank = x.ndim
    if spec.num_bits_input:  # V3 reports axis errors in its own words
        if axis >= rank or axis < -rank:
            c.fail(f"axis={axis} is out of range for an input of rank {rank}; allowed: {_axes(rank)}", "axis",
                   tf=f"Axis requested is larger than input dimensions. Axis: {axis} Input Dimensions: {rank}")
        if axis < -1:  # TF 2.21 aborts (CHECK d >= 0); the shape function's words
            c.fail(f"axis={axis} is not allowed; allowed: {_axes(rank)}", "axis",
                   tf=f"axis should be at least -1, got {axis}")
    else:
        _check_axis_range(c, axis, rank)
        if axis >= rank:
            c.fail(f"axis={axis} is out of range for an input of rank {rank}; allowed: {_axes(rank)}", "axis",
                   tf=f"Shape must be at least rank {axis + 1} but is rank {rank}")
    mn, mx = arrays["input_min"], arrays["input_max"]
    if attrs["range_given"] and axis == -1 and not spec.num_bits_input:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.ndim != 0:
                c.fail(f"{n} must be a scalar when axis=-1, got shape {list(t.shape)}", n,
                       tf=f"{n} must be a scalar.")
    if attrs["range_given"] and axis >= 0:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.ndim != 1:
                c.fail(f"{n} must be a vector of length {x.shape[axis]} when axis={axis}, got shape {list(t.shape)}",
                       n, tf=f"Shape must be rank 1 for {n}_tensor when the axis is specified")
            if t.shape[0] != x.shape[axis]:
                c.fail(f"{n} has length {t.shape[0]}, expected {x.shape[axis]} (dimension {axis} of the input)", n,
                       tf=f"{n}_tensor has incorrect size, was {t.shape[0]} expected {x.shape[axis]} to match "
                          f"dim {axis} of the input {_shape(t)}")
    if spec.num_bits_input and attrs["range_given"] and axis == -1:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.size != 1:  # TF 2.21 aborts: Check failed: 1 == NumElements()
                c.fail(f"{n} must be a scalar when axis=-1, got shape {list(t.shape)}", n,
                       tf=f"Shape must be rank 0 but is rank {t.ndim}")
    _check_range_tensors(c, x, mn, mx, axis)
    if attrs["range_given"] and axis == -1:
        _check_given_range(c, mn, mx)


def _checks_qdq_grad(c: _Checker, arrays, attrs):
    g, x, mn, mx = arrays["gradients"], arrays["input"], arrays["input_min"], arrays["input_max"]
    axis, rank = attrs["axis"], x.ndim
    _check_axis_range(c, axis, rank)
    if g.shape != x.shape:
        c.fail(f"gradients has shape {list(g.shape)} but input has shape {list(x.shape)}; they must be equal",
               "gradients", tf="gradient and input must be the same size")
    if axis >= rank:
        c.fail(f"axis={axis} is out of range for an input of rank {rank}; allowed: {_axes(rank)}", "axis",
               tf=f"Axis should be -1 or 0 or a positive value less than {rank}but given axis value was {axis}")
    for n, t, short in (("input_min", mn, "min"), ("input_max", mx, "max")):
        if t.ndim > 1:
            c.fail(f"{n} must be rank 0 or 1, got rank {t.ndim}", n,
                   tf=f"Input {short} tensor must have dimension 0 or 1. Received {t.ndim}.")
    if axis >= 0:
        for n, t, short in (("input_min", mn, "min"), ("input_max", mx, "max")):
            if t.ndim == 0:
                c.fail(f"{n} must be a vector of length {x.shape[axis]} when axis={axis}, got a scalar", n,
                       tf=f"Shape must be rank 1 for {n}_tensor when the axis is specified")
            if t.shape[0] != x.shape[axis]:
                c.fail(f"{n} must be a vector of length {x.shape[axis]} (dimension {axis} of the input), "
                       f"got shape {list(t.shape)}", n,
                       tf=f"{short} has incorrect size, expected {x.shape[axis]} was {t.size}")
    else:
        for n, t in (("input_min", mn), ("input_max", mx)):
            if t.ndim != 0:
                c.fail(f"{n} must be a scalar when axis=-1, got shape {list(t.shape)}", n,
                       tf=f"{n} must be a scalar if axis is unspecified")


def _checks_fake_quant(c: _Checker, arrays, attrs):
    spec = c.spec
    nb = attrs["num_bits"]
    if not 2 <= nb <= 16:
        c.fail(f"num_bits={nb} is out of range; allowed 2..16", "num_bits",
               tf="num_bits must be between 2 and 16, inclusive")
    x = arrays["inputs"]
    if "gradients" in arrays and arrays["gradients"].shape != x.shape:
        g = arrays["gradients"]
        if spec.range_from == "attr":
            tf = (f"Inputs to operation {spec.name} of type {spec.name} must have the same size and shape.  "
                  f"Input 0: {_shape(g)} != input 1: {_shape(x)}")
        else:
            tf = "gradient and input must be the same size"
        c.fail(f"gradients has shape {list(g.shape)} but inputs has shape {list(x.shape)}; they must be equal",
               "gradients", tf=tf)
    if spec.range_from == "attr":
        from .oracle.numerics import flush  # TF compares under DAZ: a subnormal bound is 0
        lo, hi = flush(np.float32(attrs["min"])).item(), flush(np.float32(attrs["max"])).item()
        if not lo < hi:
            c.fail(f"min={_fmt(lo)} must be smaller than max={_fmt(hi)}", "min",
                   tf=f"min has to be smaller than max, was: {_fmt(lo)} >= {_fmt(hi)}")
        return
    mn, mx = arrays["min"], arrays["max"]
    if spec.range_from == "scalar":
        for n, t in (("min", mn), ("max", mx)):
            if t.ndim != 0:
                c.fail(f"{n} must be a scalar (rank 0), got shape {list(t.shape)}", n,
                       tf=f"`{n}` must be rank 0 but is rank {t.ndim}")
        return
    # per-channel along the last dimension
    if x.ndim == 0:  # TF 2.21 aborts here (Check failed: d >= 0); the shape function's words
        c.fail("inputs must have rank >= 1 (the channel is the last dimension), got a scalar", "inputs",
               tf="Shape must be at least rank 1 but is rank 0")
    if "gradients" in arrays and x.ndim > 4:
        c.fail(f"inputs has rank {x.ndim}; the per-channel gradient allows rank 1..4", "inputs",
               tf=f"Shape must be at most rank 4 but is rank {x.ndim}")
    d = x.shape[-1]
    for n, t in (("min", mn), ("max", mx)):
        if t.ndim != 1:
            c.fail(f"{n} must be a vector of length {d} (the last dimension), got shape {list(t.shape)}", n,
                   tf=f"`{n}` must be rank 1 but is rank {t.ndim}")
        if t.shape[0] != d:
            c.fail(f"{n} has length {t.shape[0]}, expected {d} (the last dimension of inputs)", n,
                   tf=f"{n} has incorrect size, expected {d} was {t.shape[0]}")


_CHECKS = {
    R.QDQ: _checks_qdq,
    R.QDQ_GRAD: _checks_qdq_grad,
    R.FAKE_QUANT: _checks_fake_quant,
    R.FAKE_QUANT_GRAD: _checks_fake_quant,
}
