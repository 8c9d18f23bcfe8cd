"""The storage-type table: every integer and low-precision float type a quantized tensor is stored in, one row
each, and the exact conversions between float32 and any of them, written with integer operations only.

A row describes a type by its fields (bits, exponent and mantissa widths, bias, how infinities and NaN are
encoded, where values saturate) and names it the way NumPy/ml_dtypes, MLIR and ONNX's ``TensorProto`` do.
Everything else reads the row: the NumPy conversions below (the oracle's), the generated StableHLO conversion
(templates/storage.mlir.j2 walks the same steps on i32 lanes), error messages, the ONNX ops' type lists.

How a storage type crosses a compiled program's boundary: as its **code**, the type's bit pattern in the low
``bits`` bits of an ``i8`` (8 bits or fewer) or ``i16`` (16 bits) container. That is the byte ml_dtypes keeps
(an int4 -1 is the byte 0x0F, not 0xFF), so an ml_dtypes array crosses as a free ``view`` both ways
(``to_codes``, ``from_codes``); the program masks what it reads and writes only the low bits.

Why integer operations: StableHLO leaves inexact float-to-float ``convert`` undefined (openxla/stablehlo#180)
and IREE's fp8 types are emulated or missing on some targets, while shifts, adds and compares on i32 mean the
same everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import ml_dtypes
import numpy as np

from .errors import QDQError

# How a float type spends its top codes (the ``special`` field):
IEEE = "ieee"          # exponent all ones: inf (mantissa 0) and NaN (float16, bfloat16, float8_e5m2)
FN = "fn"              # finite, one NaN per sign: every exponent and mantissa bit set (float8_e4m3fn)
FNUZ = "fnuz"          # finite, no -0: the code 0x80 (sign alone) is the one NaN (the *fnuz types)
FINITE = "finite"      # every code is a number, no inf, no NaN (float6, float4)
EXPONENT = "exponent"  # unsigned powers of two 2^(code - bias), 0xFF is NaN, no zero (float8_e8m0fnu)


@dataclass(frozen=True)
class StorageType:
    name: str            # NumPy/ml_dtypes name: "float8_e4m3fn", "int4"
    onnx: str            # TensorProto's name: "FLOAT8E4M3FN"
    onnx_code: int       # TensorProto's number
    bits: int
    signed: bool = True
    exponent_bits: int = 0   # 0: an integer type
    mantissa_bits: int = 0
    bias: int = 0
    special: str = ""    # IEEE, FN, FNUZ, FINITE or EXPONENT (floats only)
    nan_payload: bool = False   # a NaN keeps its top payload bits when converted in (NumPy's float16; 1 if none)

    # -- what it is ---------------------------------------------------------------------------------
    @property
    def is_float(self) -> bool:
        return self.exponent_bits > 0

    @property
    def scalar(self) -> type:
        return getattr(ml_dtypes, self.name, None) or np.dtype(self.name).type

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.scalar)

    @property
    def container_bits(self) -> int:
        """The width of the integer a code crosses the program boundary in (i8, i16; int32: i32)."""
        return 8 if self.bits <= 8 else 16 if self.bits <= 16 else 32

    @property
    def container(self) -> str:
        return f"i{self.container_bits}"

    @property
    def code_dtype(self) -> np.dtype:
        """The NumPy integer the codes cross the boundary in (int8, int16 or int32)."""
        return np.dtype({8: np.int8, 16: np.int16, 32: np.int32}[self.container_bits])

    @property
    def code_mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def magnitude_mask(self) -> int:
        """Every code bit but the sign."""
        return self.code_mask >> 1 if self.signed else self.code_mask

    @property
    def mantissa_mask(self) -> int:
        return (1 << self.mantissa_bits) - 1

    @property
    def exponent_all_ones(self) -> int:
        return (1 << self.exponent_bits) - 1

    # -- integers -----------------------------------------------------------------------------------
    @property
    def min(self) -> int:
        """The smallest integer (integer types)."""
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    # -- floats -------------------------------------------------------------------------------------
    @property
    def sign_bit(self) -> int:
        """The code's sign bit (0: unsigned, float8_e8m0fnu)."""
        return 1 << (self.bits - 1) if self.signed and self.is_float else 0

    @property
    def emin(self) -> int:
        """The exponent of the smallest normal number (subnormals share it)."""
        return 1 - self.bias

    @cached_property
    def max_code(self) -> int:
        """The code of the largest finite magnitude."""
        e_all, m_all = (1 << self.exponent_bits) - 1, (1 << self.mantissa_bits) - 1
        if self.special == IEEE:
            return ((e_all - 1) << self.mantissa_bits) | m_all
        if self.special == FN:
            return (e_all << self.mantissa_bits) | (m_all - 1)
        if self.special == EXPONENT:
            return 0xFE
        return (e_all << self.mantissa_bits) | m_all          # FNUZ, FINITE: every magnitude code is finite

    @cached_property
    def nan_code(self) -> int | None:
        """The quiet NaN code this package writes (positive where the type has a sign), None: no NaN."""
        if self.special == IEEE:
            return ((1 << (self.exponent_bits + 1)) - 1) << (self.mantissa_bits - 1)   # exponent ones, top bit
        if self.special == FN:
            return (1 << (self.bits - 1)) - 1
        if self.special == FNUZ:
            return 1 << (self.bits - 1)
        if self.special == EXPONENT:
            return 0xFF
        return None

    @cached_property
    def inf_code(self) -> int | None:
        return ((1 << self.exponent_bits) - 1) << self.mantissa_bits if self.special == IEEE else None

    @cached_property
    def max_value(self) -> float:
        """The largest finite value (integers: ``max``)."""
        if not self.is_float:
            return float(self.max)
        return float(decode(np.array([self.max_code]), self)[0])

    def describe(self) -> str:
        if not self.is_float:
            return f"{self.name}: {self.bits}-bit {'signed' if self.signed else 'unsigned'} integer [{self.min}, {self.max}]"
        return (f"{self.name}: {self.bits}-bit float, {self.exponent_bits} exponent bits (bias {self.bias}), "
                f"{self.mantissa_bits} mantissa bits, {self.special}, max {self.max_value:g}")


def _int(name, onnx, code, bits, signed):
    return StorageType(name, onnx, code, bits, signed)


def _float(name, onnx, code, bits, e, m, bias, special, signed=True, nan_payload=False):
    return StorageType(name, onnx, code, bits, signed, e, m, bias, special, nan_payload)


TABLE: dict[str, StorageType] = {t.name: t for t in (
    _int("int2", "INT2", 26, 2, True),
    _int("uint2", "UINT2", 25, 2, False),
    _int("int4", "INT4", 22, 4, True),
    _int("uint4", "UINT4", 21, 4, False),
    _int("int8", "INT8", 3, 8, True),
    _int("uint8", "UINT8", 2, 8, False),
    _int("int16", "INT16", 5, 16, True),
    _int("uint16", "UINT16", 4, 16, False),
    _int("int32", "INT32", 6, 32, True),    # DequantizeLinear's data only (a bias, an accumulator)
    _float("float8_e4m3fn", "FLOAT8E4M3FN", 17, 8, 4, 3, 7, FN),
    _float("float8_e4m3fnuz", "FLOAT8E4M3FNUZ", 18, 8, 4, 3, 8, FNUZ),
    _float("float8_e5m2", "FLOAT8E5M2", 19, 8, 5, 2, 15, IEEE),
    _float("float8_e5m2fnuz", "FLOAT8E5M2FNUZ", 20, 8, 5, 2, 16, FNUZ),
    _float("float6_e2m3fn", "FLOAT6E2M3", 27, 6, 2, 3, 1, FINITE),
    _float("float6_e3m2fn", "FLOAT6E3M2", 28, 6, 3, 2, 3, FINITE),
    _float("float4_e2m1fn", "FLOAT4E2M1", 23, 4, 2, 1, 1, FINITE),
    _float("float8_e8m0fnu", "FLOAT8E8M0", 24, 8, 8, 0, 127, EXPONENT, signed=False),
    # the 16-bit float types that TF's and aten's float16/bfloat16 programs cross the boundary in
    # (narrow_types.mlir.j2 generates their conversions from these rows)
    _float("float16", "FLOAT16", 10, 16, 5, 10, 15, IEEE, nan_payload=True),
    _float("bfloat16", "BFLOAT16", 16, 16, 8, 7, 127, IEEE),
)}
_BY_ONNX_CODE = {t.onnx_code: t for t in TABLE.values()}
NARROW_FLOATS = tuple(n for n, t in TABLE.items() if t.is_float and t.bits <= 8)
INTEGERS = tuple(n for n, t in TABLE.items() if not t.is_float)


def get(dtype) -> StorageType:
    """The row of a storage type given a NumPy/ml_dtypes dtype, its name, or ONNX's TensorProto number."""
    if isinstance(dtype, StorageType):
        return dtype
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        row = _BY_ONNX_CODE.get(int(dtype))
    else:
        try:
            row = TABLE.get(dtype if isinstance(dtype, str) else np.dtype(dtype).name)
        except TypeError:
            row = None
    if row is None:
        raise QDQError(f"storage type {dtype!r} is not supported; allowed: {', '.join(TABLE)} "
                       f"(or their TensorProto numbers)", arg="dtype")
    return row


# -- the exact conversions, NumPy (the oracle's; the template walks the same steps) ---------------------


def _f32_fields(x: np.ndarray):
    x = np.asarray(x, np.float32)
    u = np.ascontiguousarray(x).view(np.uint32).astype(np.int64).reshape(x.shape)   # (a 0-d x stays 0-d)
    return u >> 31, u & 0x7FFFFFFF


def encode(x: np.ndarray, t: StorageType, saturate: bool = True) -> np.ndarray:
    """float32 values to ``t``'s codes (int64), rounded to nearest even. ``saturate``: a finite value beyond the
    largest becomes the largest (and an infinity too, on types without one); otherwise it becomes inf (IEEE) or
    NaN (FN, FNUZ). Integer types: the value must already be an integer; it is clamped to the type's range.
    Types with neither inf nor NaN (FINITE) always saturate; a NaN becomes the zero of the other sign (ml_dtypes)."""
    if not t.is_float:
        v = np.clip(np.nan_to_num(np.asarray(x, np.float64), nan=0.0), t.min, t.max).astype(np.int64)
        return v & t.code_mask
    sign, a = _f32_fields(x)
    if t.special == EXPONENT:
        return _encode_exponent(a, sign)
    e32 = a >> 23
    mant = (a & 0x7FFFFF) | np.where(e32 > 0, 0x800000, 0)
    e = np.maximum(e32, 1) - 127                      # unbiased exponent (float32 subnormals: -126, no hidden bit)
    below = np.maximum(t.emin - e, 0)                 # extra right shift for the type's subnormals
    shift = np.minimum(23 - t.mantissa_bits + below, 31)
    q = mant >> shift
    rem = mant - (q << shift)
    half = np.int64(1) << (shift - 1)
    q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
    code = (np.maximum(e - t.emin, 0) << t.mantissa_bits) + q   # a carry walks into the exponent, as it should
    over = (code > t.max_code) | (a >= 0x7F800000)
    if saturate or t.special == FINITE:
        over_code = t.max_code
    else:
        over_code = t.inf_code if t.special == IEEE else t.nan_code
    code = np.where(a == 0x7F800000, t.inf_code if t.special == IEEE and not saturate else over_code,
                    np.where(over, over_code, code))
    if t.special == FNUZ:       # no -0: a negative value that rounds to zero is +0; the sign code is NaN
        sign = np.where(code == 0, 0, sign)
    code = code | (sign << (t.bits - 1))
    if t.nan_payload:           # NumPy's float16: the top payload bits (at least 1), the sign kept
        payload = np.maximum((a >> (23 - t.mantissa_bits)) & t.mantissa_mask, 1)
        nan = (t.exponent_all_ones << t.mantissa_bits) | payload | (sign << (t.bits - 1))
    elif t.nan_code is not None:
        nan = t.nan_code | (sign << (t.bits - 1)) if t.special in (IEEE, FN) else t.nan_code
    else:   # FINITE: ml_dtypes writes a NaN as the zero of the other sign (+NaN: -0), the ONNX reference's answer
        nan = (1 - sign) << (t.bits - 1)
    return np.where(a > 0x7F800000, nan, code)


def _encode_exponent(a, sign):
    """float8_e8m0fnu (a scale type): the nearest power of two, 2^-127 .. 2^127, a tie (1.5 * 2^e) to the larger,
    as ONNX's Cast "nearest" and onnxruntime's Float8E8M0 round, in float32's subnormal range as elsewhere (there
    the tie is 1.5 * 2^-127, the bits 0x00600000). ml_dtypes 0.7 rounds so; 0.6 gave 2^-126 to everything above
    2^-127 (tests/test_onnx.py). Zero, negative, inf and NaN: NaN (0xFF)."""
    e32 = a >> 23
    m = a & 0x7FFFFF
    up = m >= 0x400000                                  # at or above 1.5 * 2^e rounds to 2^(e+1)
    code = np.where(e32 == 0, np.where(a >= 0x600000, 1, 0), e32 + up)
    bad = (sign == 1) | (a == 0) | (a >= 0x7F800000) | (code > 0xFE)
    return np.where(bad, 0xFF, code)


def decode(codes: np.ndarray, t: StorageType) -> np.ndarray:
    """Codes (any integer array; the low ``bits`` bits are read) to float32 values, exactly: every code of a
    narrow type is a float32. Integer types: the signed or unsigned value."""
    c = np.asarray(codes, np.int64) & t.code_mask
    if not t.is_float:
        return (c - ((c >> (t.bits - 1)) << t.bits) if t.signed else c).astype(np.float32)
    if t.special == EXPONENT:
        bits = np.where(c == 0, 0x400000, c << 23)
        bits = np.where(c == 0xFF, 0x7FC00000, bits)
        return bits.astype(np.uint32).view(np.float32)
    sign = (c >> (t.bits - 1)) & 1 if t.signed else np.zeros_like(c)
    mag = c & (t.code_mask >> 1)
    e = mag >> t.mantissa_bits
    m = mag & ((1 << t.mantissa_bits) - 1)
    normal = ((e - t.bias + 127) << 23) | (m << (23 - t.mantissa_bits))
    # subnormal: m * 2^(emin - mantissa_bits), exact in float32 (the values are far above float32's subnormals)
    sub = (m.astype(np.float32) * np.float32(2.0 ** (t.emin - t.mantissa_bits))).view(np.uint32).astype(np.int64)
    bits = np.where(e == 0, sub, normal)
    if t.special == IEEE:   # NaN: ml_dtypes writes the quiet NaN of its sign (NumPy's float16 keeps the payload)
        e_all = t.exponent_all_ones
        payload = (m << (23 - t.mantissa_bits)) if t.bits > 8 else np.where(m == 0, 0, 0x400000)
        bits = np.where(e == e_all, 0x7F800000 | payload, bits)
    elif t.special == FN:
        bits = np.where(mag == t.nan_code, 0x7FC00000, bits)
    elif t.special == FNUZ:   # the code 0x80, read by ml_dtypes as a negative quiet NaN
        bits = np.where(c == t.nan_code, 0x7FC00000, bits)
    return (bits | (sign << 31)).astype(np.uint32).view(np.float32)


def to_codes(a: np.ndarray) -> np.ndarray:
    """An array of a storage type as the program takes it: its bytes viewed as the container integer (free)."""
    t = get(a.dtype)
    return np.require(a, requirements="C").view(t.code_dtype)


def from_codes(codes: np.ndarray, dtype) -> np.ndarray:
    """A program's container integers (codes in the low bits) as an array of ``dtype`` (a free view)."""
    t = get(dtype)
    return np.require(codes, requirements="C").view(t.np)
