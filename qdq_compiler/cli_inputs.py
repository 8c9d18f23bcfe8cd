"""What ``qdqc run --input`` takes: .npy files or literal numbers, in the op's input order, turned into arrays.

Kept apart from cli.py (argument parsing) because files need care: np.save writes bfloat16 as 2-byte void,
np.load calls any non-.npy file "pickled data", and argparse reads ``-inf`` as an option.
"""
from __future__ import annotations

import os

import numpy as np

from . import dtypes, storage
from .errors import QDQError


def number(text: str):
    """``text`` as a float (decimal or C99 hex), or None if it is not a number."""
    try:
        return float.fromhex(text) if text.lower().lstrip("-+").startswith("0x") else float(text)
    except ValueError:
        return None


def negative_literals(argv: list[str]) -> list[str]:
    """``--input -inf`` as ``--input=-inf``: argparse takes -1 for a value but -inf, -nan, -1e5 for options."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--input" and i + 1 < len(argv) and argv[i + 1].startswith("-") and number(argv[i + 1]) is not None:
            out.append("--input=" + argv[i + 1])
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def _float_from_void(a: np.ndarray, text: str) -> np.ndarray:
    """np.save writes an ml_dtypes array (bfloat16, ...) as void of its width ('<V2'): read it back as the
    dtype table's one non-NumPy float of that width (several of one width: an error naming them)."""
    if a.dtype.kind != "V" or a.dtype.names is not None:
        return a
    matches = [d for d in dtypes.FLOATS.values() if d.np.kind == "V" and d.np.itemsize == a.dtype.itemsize]
    if len(matches) != 1:
        raise QDQError(f"--input {text}: a {a.dtype.itemsize}-byte void array is "
                       + (f"one of {', '.join(d.name for d in matches)}: save it as its integer bit pattern"
                          if matches else "no float type this package knows"), arg="--input")
    return a.view(matches[0].np)


def _load(text: str) -> np.ndarray:
    return _float_from_void(_load_raw(text), text)


def _load_raw(text: str) -> np.ndarray:
    try:
        with open(text, "rb") as f:
            npy = f.read(6) == b"\x93NUMPY"
        if npy:
            return np.load(text, allow_pickle=False)
    except (OSError, ValueError) as e:
        hint = " (an ml_dtypes float8 saved by np.save: save its codes, a.view(np.uint8), and name its type with " \
               "--attr)" if "'<f1'" in str(e) else ""
        raise QDQError(f"--input {text}: cannot read a .npy file ({e}), nor is it a number{hint}",
                       arg="--input") from None
    raise QDQError(f"--input {text}: not a .npy file (no NumPy header; write one with np.save), nor a number",
                   arg="--input")


def _named_dtype(spec, inp, attrs) -> np.dtype | None:
    """The dtype an attribute names for an input declared "attr:<name>" (ONNX's storage types): as given, else
    the attribute's default (ONNX's uint8)."""
    if not inp.dtype.startswith("attr:"):
        return None
    name = inp.dtype[5:]
    try:
        value = str(attrs.get(name, spec.attr_map[name].default))
        return dtypes.np_of(value) if value else None   # "": the op's element type (ONNX's scale)
    except (TypeError, KeyError):
        return None


def read_inputs(spec, texts: list[str], attrs=None) -> dict[str, np.ndarray]:
    """The op's inputs by name: each text a .npy file, or a literal number typed like the data (min, max), as
    the input's own dtype (V3's num_bits) or as the storage type an attribute names (``--attr
    output_dtype=int4``: ONNX's zero point; a .npy of an ml_dtypes type, saved as void, is read as it)."""
    attrs = attrs or {}
    arrays, literals = {}, {}
    for inp, text in zip(spec.inputs, texts):
        value = number(text)
        named = _named_dtype(spec, inp, attrs)
        if value is not None and not os.path.isfile(text):
            literals[inp] = value  # typed once the data is read
        elif named is not None:   # void (what np.save writes for most ml_dtypes types) or the codes as int8/uint8
            raw = _load_raw(text)
            codes = raw.dtype.kind == "V" or (raw.dtype.kind in "iu" and named.kind not in "iu")
            arrays[inp.name] = raw.view(named) if codes and raw.dtype.itemsize == named.itemsize else raw
        else:
            arrays[inp.name] = _load(text)
    element = next((arrays[i.name].dtype for i in spec.inputs if i.name in arrays and i.dtype == "T"),
                   np.dtype(np.float32))
    for inp, value in literals.items():
        named = _named_dtype(spec, inp, attrs)
        if named is not None:   # a storage type: the number converted as ml_dtypes converts it
            arrays[inp.name] = np.array(value, np.float64).astype(named)
            continue
        dtype = element if inp.dtype == "T" or inp.dtype.startswith("attr:") else np.dtype(inp.dtype)
        if dtype.kind != "i" and not dtypes.is_float(dtype):
            raise QDQError(f"--input {value!r} for {inp.name}: a number cannot be typed like data of dtype {dtype}",
                           arg="--input")
        if dtype.kind == "i" and not float(value).is_integer():
            raise QDQError(f"--input {value!r} for {inp.name} must be an integer ({dtype.name})", arg="--input")
        arrays[inp.name] = np.array(int(value) if dtype.kind == "i" else value, dtype)
    return arrays


def as_saved(outs) -> tuple[list, str]:
    """Outputs as ``-o`` writes them, and what to tell the reader: bfloat16 as .npy's |V2; a storage type
    (ml_dtypes' int4, float8, ...) as its codes, int8 (.npy cannot hold every one: a float8_e5m2 is written as
    '<f1', which NumPy does not load)."""
    note = " (bfloat16, which .npy stores as |V2: read it back with np.load(f).view(ml_dtypes.bfloat16))" \
        if any(o.dtype == dtypes.get("bfloat16").np for o in outs) else ""
    coded = [o.dtype.name for o in outs if o.dtype.name in storage.TABLE and not dtypes.is_float(o.dtype)]
    if coded:
        outs = [storage.to_codes(o) if o.dtype.name in coded else o for o in outs]
        note = f" ({coded[0]} as its codes, int8: read it back with np.load(f).view(ml_dtypes.{coded[0]}))"
    return list(outs), note
