"""The one dtype table: every name a floating-point element type has in NumPy, MLIR, TF and the CLI.

Every module that needs to turn a dtype into something else (an MLIR element type, a CLI alias, TF's
name in an error message, the integer of the same width for bit tricks) reads it here, so a new type
is one row. bfloat16 is ``ml_dtypes.bfloat16``, the NumPy type TF and JAX use (NumPy has none; its
dtype kind is 'V', so "is this a float" is ``is_float`` here, never ``dtype.kind == "f"``).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from . import storage as _storage
from .errors import QDQError


@dataclass(frozen=True)
class DType:
    name: str            # NumPy's name, the package's canonical spelling ("float32")
    short: str           # CLI alias and report tag ("f32"), also the MLIR element type
    tf: str              # TF's name in its error messages ("float")
    int_mlir: str        # the signed integer of the same width, for bit manipulations in templates ("i32")
    scalar: type         # the NumPy scalar type (np.float32, ml_dtypes.bfloat16)
    compute: str         # the type the arithmetic runs in: 16-bit types compute in float32 and round back

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.scalar)

    @property
    def narrow(self) -> bool:
        """Stored in fewer bits than it computes in (float16, bfloat16)."""
        return self.compute != self.name

    @property
    def finfo(self):
        return ml_dtypes.finfo(self.scalar)

    @property
    def mlir(self) -> str:
        return self.short

    @property
    def bits(self) -> int:
        return self.np.itemsize * 8

    @property
    def integral_threshold(self) -> float:
        """2^(mantissa bits): every value of at least this magnitude is an integer, and adding it to a smaller
        magnitude rounds that to an integer, ties to even (the rounding macro's trick)."""
        return float(2 ** self.finfo.nmant)

    @property
    def uint(self) -> np.dtype:
        """The unsigned integer of the same width: the raw bit pattern."""
        return np.dtype(f"uint{self.bits}")


FLOATS: dict[str, DType] = {d.name: d for d in (
    DType("float16", "f16", "half", "i16", np.float16, "float32"),
    DType("bfloat16", "bf16", "bfloat16", "i16", ml_dtypes.bfloat16, "float32"),
    DType("float32", "f32", "float", "i32", np.float32, "float32"),
    DType("float64", "f64", "double", "i64", np.float64, "float64"),
)}
# Integer types that appear as op inputs (V3's num_bits) or in function signatures (int16: the bit patterns
# of float16/bfloat16 at the function boundary). bool (aten's masks) crosses the boundary as i8, 0 or 1: NumPy
# stores a bool in one byte, so the views are free both ways (abi_view, from_abi).
INTS: dict[str, str] = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "bool": "i8"}

_ALIASES = {**{d.short: d for d in FLOATS.values()}, **FLOATS}


def is_float(dtype) -> bool:
    """Whether a NumPy dtype is one of the table's float types (bfloat16's kind is 'V', not 'f')."""
    return np.dtype(dtype).name in FLOATS


def get(name) -> DType:
    """The row of a float dtype given its name, CLI alias or a NumPy dtype; a QDQError lists the allowed ones."""
    if isinstance(name, DType):
        return name
    key = name
    if not isinstance(name, str):
        try:
            key = np.dtype(name).name
        except TypeError:
            key = None
    try:
        return _ALIASES[key]
    except (KeyError, TypeError):
        raise QDQError(f"dtype {name!r} is not supported; allowed: {allowed()}", arg="dtype") from None


def allowed(names=None) -> str:
    """'f32, f64' for the given canonical names (all float dtypes by default), as error messages list them."""
    return ", ".join(FLOATS[n].short for n in (names or FLOATS))


def mlir_of(name: str) -> str:
    """The MLIR element type of a float or integer dtype name; a storage type's (storage.py): its container."""
    if name in FLOATS:
        return FLOATS[name].mlir
    return INTS[name] if name in INTS else _storage.TABLE[name].container


def np_of(name: str) -> np.dtype:
    """The NumPy dtype of a name in this table or the storage table (ml_dtypes' int4, float8_e4m3fn, ...)."""
    return _storage.TABLE[name].np if name in _storage.TABLE else np.dtype(name)


def from_mlir(etype: str) -> str:
    """The NumPy name of an MLIR element type (f32 -> float32, i32 -> int32)."""
    for d in FLOATS.values():
        if d.mlir == etype:
            return d.name
    for n, m in INTS.items():
        if m == etype:
            return n
    raise KeyError(etype)


def tf_name(np_name: str) -> str:
    """TF's spelling of a dtype in its messages (float32 -> float); unknown names pass through."""
    return FLOATS[np_name].tf if np_name in FLOATS else np_name


_NAMES: dict = {}


def name_of(dt) -> str:
    """``np.dtype(dt).name``, remembered: NumPy builds the name afresh on every access (1-3 us, which a
    16-element call pays several times over)."""
    try:
        return _NAMES[dt]
    except KeyError:
        name = _NAMES[dt] = np.dtype(dt).name
        return name


def abi_view(a: np.ndarray, widened: bool = False) -> np.ndarray:
    """An array as a compiled function takes it: float16/bfloat16 as their int16 bit patterns (a free view;
    the program converts them with integer ops, exactly on every target), or as float32 where the target
    widens on the host (``Target.widens_on_host``: an exact conversion), anything else unchanged."""
    name = name_of(a.dtype)
    if name not in _NARROW:
        view = _CODE_VIEWS.get(name)
        return a.view(view) if view is not None else a
    return a.astype(np.float32) if widened else a.view(np.int16)


def from_abi(a: np.ndarray, dtype) -> np.ndarray:
    """A compiled function's result as ``dtype``: int16 bit patterns viewed as the 16-bit float."""
    dtype = np.dtype(dtype)
    name = name_of(dtype)
    if name == "bool" and a.dtype == np.int8:
        return a.view(np.bool_)
    if name in _CODE_VIEWS and a.dtype == _CODE_VIEWS[name]:
        return a.view(dtype)
    return a.view(dtype) if name in _NARROW and a.dtype == np.int16 else a


_NARROW = ("float16", "bfloat16")
# What crosses the boundary as a signed integer of its width: a bool as i8; the storage types (storage.py) other
# than the 16-bit floats and the signed 8/16-bit integers (already what IREE takes) as their codes, i8 or i16.
_CODE_VIEWS = {"bool": np.dtype(np.int8), **{
    n: t.code_dtype for n, t in _storage.TABLE.items()
    if n not in _NARROW and n not in ("int8", "int16")}}
