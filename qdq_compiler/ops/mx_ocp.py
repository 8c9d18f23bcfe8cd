"""OCP Microscaling (MX) v1.0 fake quantization in NumPy, written from the specification (semantics ``ocp``), not
from any implementation: where torchao departs from the text (ops/mx_numerics.py, TORCHAO_DEPARTURES), this is
the text's answer, and where the text is silent the choice is stated here (and in the README).

  X = 2^s per block, s from the block's largest magnitude amax and the element's emax (exponent of its largest
      power of two), clamped to [-127, 127]: floor (OCP §6.3): s = floor(log2 amax) - emax; ceil: ceil(log2 amax)
      - emax; even: floor of amax rounded half up to the element's mantissa width (torchao's rule; exact already);
      rceil: ceil(log2(amax / largest element)), the real quotient (NVIDIA's round-up conversion, without
      torchao's float32 log2). The E8M0 byte is s + 127; byte 0 is X = 2^-127, both to divide and to multiply.
  P = x / X rounded to the element format, ties to even, subnormals kept; beyond the largest normal it is clamped
      to it with its sign (§6.3).
  y = X * P, exact in float32 (or inf beyond the largest float); a float16 or bfloat16 x (widened exactly) gets y
      rounded to its type once, to nearest even.
  A block holding a NaN or an infinity has no finite amax: its scale is NaN (byte 255) and every element comes
      back NaN (the spec: a NaN scale makes the block NaN; which NaN is ours: the canonical quiet NaN 0x7FC00000).
  A block of zeros has amax 0: s clamps to -127 (byte 0) and the elements are zeros of their signs.
Arithmetic is exact (float64 where a product or quotient is formed); the answer does not depend on float32
rounding of intermediate values.
"""
from __future__ import annotations

import numpy as np

from .mx_numerics import ELEMS as FLOAT_ELEMS
from . import mx_stochastic as MXS
from .mx_numerics import SCALE_RULES, Elem

F32, U32 = np.float32, np.uint32
QNAN = np.uint32(0x7FC00000).view(F32)
# MXINT8 (OCP v1.0 section 5.3.4): two's complement int8 n standing for n * 2^-6, emax 0; clamped to the largest
# normal, 127/64 (-128, -2.0, is never produced: the spec clamps to the max normal with the sign, as microxcaling
# does). As a grid: 6 fraction bits, the same step 2^-6 from 0 to 2 (emin 0, no subnormal step change).
MXINT8 = Elem("mxint8", 127 / 64, 0, 0, 6, None)
ELEMS: dict[str, Elem] = {**FLOAT_ELEMS, MXINT8.name: MXINT8}


def _floor_log2(a: np.ndarray) -> np.ndarray:
    """floor(log2 a) for finite a > 0, exactly (frexp: a = m 2^e with m in [0.5, 1))."""
    _, e = np.frexp(a.astype(np.float64))
    return e.astype(np.int64) - 1


def block_exponents(amax: np.ndarray, e: Elem, rule: str) -> np.ndarray:
    """s per block (int64, clamped to [-127, 127]); 128 marks a NaN scale (amax NaN or infinite)."""
    if rule not in SCALE_RULES:
        raise ValueError(rule)
    a = amax.astype(np.float64)
    finite = np.isfinite(a)
    pos = finite & (a > 0)
    safe = np.where(pos, a, 1.0)
    fl = _floor_log2(safe)
    pow2 = safe == np.ldexp(1.0, fl)
    if rule == "floor":
        s = fl - e.emax
    elif rule == "ceil":
        s = fl + (~pow2) - e.emax
    elif rule == "even":
        # amax's float32 bits rounded half up to the element's mantissa width (a carry bumps the exponent)
        bits = safe.astype(F32).view(U32).astype(np.int64)
        rounded = ((bits + (1 << (22 - e.mbits))) & 0xFF800000)
        s = ((rounded >> 23) & 0xFF) - 127 - e.emax   # (a subnormal amax too: its bits, as torchao's rule reads them)
    else:   # rceil: the smallest k with amax <= max * 2^k
        k = fl - _floor_log2(np.full_like(safe, e.max_value))
        k = np.where(safe > np.ldexp(e.max_value, k), k + 1, k)
        k = np.where(safe <= np.ldexp(e.max_value, k - 1), k - 1, k)
        s = k
    s = np.where(pos, s, -127)   # zeros: the smallest scale
    return np.where(finite, np.clip(s, -127, 127), 128)


def _on_grid(rows: np.ndarray, elem: str, rule: str, block_size: int, r: np.ndarray | None):
    """(P on the element grid [n, blocks, block_size] (float64, exact), s per block, the NaN-scale blocks) of [n, C]
    float32 rows, C a multiple of block_size: x / X rounded to nearest even, or stochastically with the random words
    ``r`` (uint32, the rows' shape; ops/mx_stochastic.py), then clamped to +-max (the spec clamps first; rounding a
    clamped value never passes max, so the order does not matter)."""
    e = ELEMS[elem]
    xb = rows.reshape(rows.shape[0], -1, block_size).astype(np.float64)
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(xb), axis=-1)
    s = block_exponents(amax, e, rule)
    nan_block = s == 128
    X = np.ldexp(1.0, np.where(nan_block, 0, s))[..., None]
    with np.errstate(all="ignore"):
        q = np.clip(np.where(nan_block[..., None], 0.0, xb) / X, -e.max_value, e.max_value)
        if r is not None:
            step = np.full_like(q, 2.0 ** -6) if e.np_type is None else \
                MXS.grid_step(np.abs(q), e.mbits, 2 - 2 ** (e.ebits - 1))
            p = MXS.round_stochastic(q, step, r.reshape(q.shape))
        elif e.np_type is None:                        # MXINT8: n = rint(q * 64), ties to even
            p = np.rint(q * 64.0) / 64.0
        else:
            p = q.astype(e.np_type).astype(np.float64)  # round to nearest even (ml_dtypes), subnormals kept
    if e.np_type is None:
        p = p + 0.0                                    # an int8 has no -0
    return p, s, nan_block


def fake_quantize_rows(rows: np.ndarray, elem: str, rule: str, block_size: int, r: np.ndarray | None = None
                       ) -> np.ndarray:
    """[n, C] float32, C a multiple of block_size: each block quantized and dequantized as the spec says (``r``:
    stochastic rounding's random words, see _on_grid)."""
    p, s, nan_block = _on_grid(rows, elem, rule, block_size, r)
    X = np.ldexp(1.0, np.where(nan_block, 0, s))[..., None]
    with np.errstate(all="ignore"):
        y = (p * X).astype(F32)                        # exact, or inf beyond float32
    y = np.where(nan_block[..., None], QNAN, y)
    return y.reshape(rows.shape)


# -- the stored form: element codes and E8M0 scale bytes ----------------------------------------------------
# The element types the codes are returned in (ml_dtypes, one element per byte; MXINT8: int8).
STORAGE = {"mxfp8_e4m3": "float8_e4m3fn", "mxfp8_e5m2": "float8_e5m2", "mxfp6_e2m3": "float6_e2m3fn",
           "mxfp6_e3m2": "float6_e3m2fn", "mxfp4_e2m1": "float4_e2m1fn", "mxint8": "int8"}


def quantize_rows(rows: np.ndarray, elem: str, rule: str, block_size: int, r: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(element codes [n, C] as int64 (the code's bits; MXINT8: the signed integer), E8M0 bytes [n, C / block_size])
    of [n, C] float32 rows, C a multiple of block_size. A block whose scale is NaN (byte 255) carries no elements
    (OCP: every element of it is NaN whatever its code): its codes are 0, our choice."""
    e = ELEMS[elem]
    p, s, nan_block = _on_grid(rows, elem, rule, block_size, r)
    with np.errstate(all="ignore"):
        codes = np.rint(p * 64.0).astype(np.int64) if e.np_type is None else \
            p.astype(e.np_type).view(np.uint8).astype(np.int64)   # exact: p is on the grid
    codes = np.where(nan_block[..., None], 0, codes)
    return codes.reshape(rows.shape), (s + 127).astype(np.int64)


def dequantize_rows(codes: np.ndarray, scale_bytes: np.ndarray, elem: str, block_size: int) -> np.ndarray:
    """float32 [n, C] of element codes [n, C] (int64 as quantize_rows gives them) and bytes [n, C / block_size]:
    X * P exactly (inf beyond float32); a NaN scale (255) or a NaN element: the quiet NaN 0x7FC00000."""
    e = ELEMS[elem]
    cb = codes.reshape(codes.shape[0], -1, block_size)
    if e.np_type is None:
        p = cb.astype(np.float64) / 64.0
    else:
        p = cb.astype(np.uint8).view(e.np_type).astype(np.float64)
    byte = scale_bytes.astype(np.int64)[..., None]
    with np.errstate(all="ignore"):
        y = (p * np.ldexp(1.0, np.where(byte == 255, 0, byte - 127))).astype(F32)
    y = np.where((byte == 255) | np.isnan(p), QNAN, y)
    return y.reshape(codes.shape)


def in_range_rows(rows: np.ndarray, elem: str, rule: str, block_size: int) -> np.ndarray:
    """Clipped straight-through's mask of [n, C] float32 rows: |x| <= the block's largest representable magnitude,
    max * X (x that the conversion does not clamp); false throughout a block whose scale is NaN."""
    e = ELEMS[elem]
    xb = rows.reshape(rows.shape[0], -1, block_size).astype(np.float64)
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(xb), axis=-1)
        s = block_exponents(amax, e, rule)
        bound = np.ldexp(e.max_value, np.where(s == 128, 0, s))[..., None]
        mask = (np.abs(xb) <= bound) & (s != 128)[..., None]
    return mask.reshape(rows.shape)
