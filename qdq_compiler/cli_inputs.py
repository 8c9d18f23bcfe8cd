"""What ``qdqc run --input`` takes: .npy files or literal numbers, in the op's input order, turned into arrays.

Kept apart from cli.py (argument parsing) because files need care: np.save writes bfloat16 as 2-byte void,
np.load calls any non-.npy file "pickled data", and argparse reads ``-inf`` as an option.
"""
from __future__ import annotations

import os

import numpy as np

from . import dtypes
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
    try:
        with open(text, "rb") as f:
            npy = f.read(6) == b"\x93NUMPY"
        if npy:
            return _float_from_void(np.load(text, allow_pickle=False), text)
    except (OSError, ValueError) as e:
        raise QDQError(f"--input {text}: cannot read a .npy file ({e}), nor is it a number", arg="--input") from None
    raise QDQError(f"--input {text}: not a .npy file (no NumPy header; write one with np.save), nor a number",
                   arg="--input")


def read_inputs(spec, texts: list[str]) -> dict[str, np.ndarray]:
    """The op's inputs by name: each text a .npy file, or a literal number typed like the data (min, max) or as
    the input's own dtype (V3's num_bits)."""
    arrays, literals = {}, {}
    for inp, text in zip(spec.inputs, texts):
        value = number(text)
        if value is not None and not os.path.isfile(text):
            literals[inp] = value  # typed once the data is read
        else:
            arrays[inp.name] = _load(text)
    element = next((arrays[i.name].dtype for i in spec.inputs if i.name in arrays and i.dtype == "T"),
                   np.dtype(np.float32))
    for inp, value in literals.items():
        dtype = np.dtype(inp.dtype) if inp.dtype != "T" else element
        if dtype.kind != "i" and not dtypes.is_float(dtype):
            raise QDQError(f"--input {value!r} for {inp.name}: a number cannot be typed like data of dtype {dtype}",
                           arg="--input")
        if dtype.kind == "i" and not float(value).is_integer():
            raise QDQError(f"--input {value!r} for {inp.name} must be an integer ({dtype.name})", arg="--input")
        arrays[inp.name] = np.array(int(value) if dtype.kind == "i" else value, dtype)
    return arrays
