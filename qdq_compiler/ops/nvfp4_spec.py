"""NVFP4 as NVIDIA's recipe computes it (semantics ``ocp``, the formats' own texts: NVFP4 is NVIDIA's, not OCP's).

The recipe is the one NVIDIA publishes with its NVFP4 GEMMs (cuBLAS' 1D block scaling of narrow outputs) and holds
its kernels to (Transformer Engine's ``NVFP4QuantizerRef``): FP4 E2M1 elements in blocks of 16, each block with an
E4M3 decode scale, and one float32 scale per tensor. Every step is the float32 operation NVIDIA's text writes,
rounded to nearest (as a GPU computes it without fast-math: subnormals kept):

  s_enc = 6 * 448 / amax(|x|), at most FLT_MAX (a zero tensor), 1.0 where it is 0 (an infinity in x)
  s_dec = 1 / s_enc                                       the tensor scale (stored, float32)
  S_b   = e4m3(min(amax_b / 6 * s_enc, 448))              the block's scale, rounded to nearest even, subnormals kept
  e_b   = min(1 / (S_b * s_dec), FLT_MAX)                 the block's encode multiplier (a zero scale: FLT_MAX)
  P     = e2m1(clamp(x * e_b, -6, 6))                     rounded to nearest even, the sign kept (-0 too)
  y     = (P * S_b) * s_dec                               P * S_b exact; one rounding

Where the text is silent, our choices: a NaN anywhere makes s_enc NaN and so every y the quiet NaN 0x7FC00000, its
codes 0, its block scales the E4M3 NaN (0x7F) and its tensor scale 0x7FC00000 (NVIDIA's reference gives the same
NaNs and codes 0); an infinity (no NaN) takes the recipe's own guard, s_enc = 1 (its block scales 448, its
elements +-6). Transformer Engine's Python reference writes -0.0 as +0 (its table tests x >= 0.0 first); the
hardware conversion (cvt.rn.satfinite.e2m1x2.f32) keeps the sign, and so do we. TE's newest kernel folds 1 / 6 into
s_enc (amax_b * (s_enc * fl(1 / 6))): a different rounding of the same quantity, not followed here.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

F32, U32 = np.float32, np.uint32
FLT_MAX = F32(np.finfo(F32).max)
QNAN = 0x7FC00000
BLOCK = 16


def tensor_scales(amax) -> tuple[np.float32, np.float32]:
    """(s_enc, s_dec) of the tensor's float32 amax (NaN for a NaN amax)."""
    with np.errstate(all="ignore"):
        s_enc = np.minimum(F32(6.0 * 448.0) / F32(amax), FLT_MAX).astype(F32)
        s_enc = F32(1.0) if s_enc == 0 else s_enc
        return F32(s_enc), (F32(1.0) / F32(s_enc)).astype(F32)


def e4m3_codes(d: np.ndarray) -> np.ndarray:
    """E4M3 codes (0..126, 0x7F for NaN) of float32 d in [0, 448] or NaN, rounded to nearest even."""
    codes = np.asarray(d, F32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8).astype(np.int64)
    return np.where(np.isnan(d), 0x7F, codes)


def e2m1_codes(q: np.ndarray) -> np.ndarray:
    """FP4 E2M1 codes (sign << 3 | magnitude) of float32 q in [-6, 6], rounded to nearest even; NaN gives 0."""
    codes = np.asarray(q, F32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8).astype(np.int64) & 0xF
    return np.where(np.isnan(q), 0, codes)


def _scaled(x_rows: np.ndarray, amax):
    """(the blocks [n, C / 16, 16], s_enc, s_dec, E4M3 scale codes, their float32 values, x * e_b unclamped)."""
    xb = np.asarray(x_rows, F32).reshape(x_rows.shape[0], -1, BLOCK)
    s_enc, s_dec = tensor_scales(amax)
    with np.errstate(all="ignore"):
        amax_b = np.max(np.abs(xb), axis=-1)
        d = ((amax_b / F32(6.0)).astype(F32) * s_enc).astype(F32)
        d = np.minimum(np.minimum(d, FLT_MAX), F32(448.0))
        s_codes = e4m3_codes(d)
        s32 = s_codes.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(F32)
        enc = np.minimum((F32(1.0) / (s32 * s_dec).astype(F32)).astype(F32), FLT_MAX)
        return xb, s_enc, s_dec, s_codes, s32, (xb * enc[..., None]).astype(F32)


def rows(x_rows: np.ndarray, amax) -> tuple[np.ndarray, np.ndarray, np.float32, np.ndarray]:
    """(E2M1 codes [n, C], E4M3 scale codes [n, C / 16], s_dec, y [n, C]) of float32 rows (C a multiple of 16),
    with ``amax`` the whole tensor's largest magnitude (a NaN: NaN)."""
    xb, s_enc, s_dec, s_codes, s32, scaled = _scaled(x_rows, amax)
    with np.errstate(all="ignore"):
        q = np.clip(scaled, F32(-6.0), F32(6.0))
        codes = e2m1_codes(q)
        p = codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(F32)
        y = ((p * s32[..., None]).astype(F32) * s_dec).astype(F32)
    if np.isnan(s_enc):
        y = np.full(y.shape, QNAN, np.uint32).view(F32)
        codes, s_codes, s_dec = np.zeros_like(codes), np.full_like(s_codes, 0x7F), np.uint32(QNAN).view(F32)
    return codes.reshape(x_rows.shape), s_codes, F32(s_dec), y.reshape(x_rows.shape)


def in_range_rows(x_rows: np.ndarray, amax) -> np.ndarray:
    """Clipped straight-through's mask of float32 rows: |x| <= the block's largest value, (6 * S_b) * s_dec as
    dequantizing computes it, false throughout a tensor with a NaN. (Not |x * e_b| <= 6: e_b = 1 / (S_b * s_dec)
    rounds up often enough that the amax itself lands one ulp above 6, 2688 * fl(1 / 448) for one.)"""
    xb, s_enc, s_dec, _, s32, _ = _scaled(x_rows, amax)
    with np.errstate(invalid="ignore"):
        bound = ((F32(6.0) * s32).astype(F32) * s_dec).astype(F32)
        return (np.abs(xb) <= bound[..., None]).reshape(x_rows.shape) & ~np.isnan(s_enc)


def tensor_amax(x) -> np.float32:
    """max |x| in float32, NaN if any element is NaN."""
    x = np.asarray(x, F32)
    if x.size == 0:
        return F32(0)
    with np.errstate(invalid="ignore"):
        return F32(np.max(np.abs(x)))


def dequantize_rows(codes: np.ndarray, s_codes: np.ndarray, s_dec) -> np.ndarray:
    """float32 [n, C] of E2M1 codes [n, C], E4M3 scale codes [n, C / 16] and s_dec: (P * S_b) * s_dec, rounded once;
    a NaN scale (0x7F, 0xFF) or a NaN s_dec gives the quiet NaN 0x7FC00000."""
    p = (np.asarray(codes, np.int64) & 0xF).astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(F32)
    p = p.reshape(codes.shape[0], -1, BLOCK)
    sc = np.asarray(s_codes, np.int64) & 0xFF
    s32 = sc.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(F32)
    with np.errstate(all="ignore"):
        y = ((p * s32[..., None]).astype(F32) * F32(s_dec)).astype(F32)
    y = np.where(np.isnan(y) | np.isnan(s32)[..., None] | np.isnan(F32(s_dec)), np.uint32(QNAN).view(F32), y)
    return y.reshape(codes.shape)
