"""Block-scaled formats in NumPy (issue 25, first slice): OCP Microscaling (MXFP8/6/4) with torchao's four E8M0
scale rules, and NVIDIA's NVFP4 with and without its per-tensor scale, as torchao 0.18.0 computes them, bit for bit.

Why torchao first: it is the reference the issue cross-checks against, and its answers are pinned by goldens
(``qdq_compiler/goldens/mx/torchao.json``, 751 cases, made by ``tools/goldens/mx_reference.py`` in a torchao
virtualenv; ``tests/test_mx_numerics.py`` holds this module to every one of them). Where torchao departs from
the OCP v1.0 text or NVIDIA's recipe, the step says so (``TORCHAO_DEPARTURES`` lists them): the spec's own
semantics, and the compiled family, come next and will be held to this module's steps.

Every step is float32 arithmetic or an operation on float32 bit patterns, as torchao's eager CPU code does it.
Blocks run along the last axis of a 2-D [rows, cols] input, cols a multiple of the block size (torchao raises
otherwise). Results: per-block scale codes (E8M0 bytes, 255 = NaN; NVFP4: float8_e4m3fn codes), element codes
(fp8 0..255, fp6 0..63, fp4 0..15, unpacked) and the dequantized float32 values.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..errors import QDQError

F32, U32 = np.float32, np.uint32
QNAN = 0x7FC00000


@dataclass(frozen=True)
class Elem:
    """An element format: the largest value, the exponent of its largest power of two (torchao's
    ``target_max_pow2``: the OCP emax), exponent and mantissa widths, and the ml_dtypes type that decodes it."""
    name: str
    max_value: float
    emax: int
    ebits: int
    mbits: int
    np_type: type
    block_size: int = 32

    @property
    def is_fp8(self) -> bool:
        return self.ebits + self.mbits == 7


ELEMS: dict[str, Elem] = {e.name: e for e in (
    Elem("mxfp8_e4m3", 448.0, 8, 4, 3, ml_dtypes.float8_e4m3fn),
    Elem("mxfp8_e5m2", 57344.0, 15, 5, 2, ml_dtypes.float8_e5m2),
    Elem("mxfp6_e2m3", 7.5, 2, 2, 3, ml_dtypes.float6_e2m3fn),
    Elem("mxfp6_e3m2", 28.0, 4, 3, 2, ml_dtypes.float6_e3m2fn),
    Elem("mxfp4_e2m1", 6.0, 2, 2, 1, ml_dtypes.float4_e2m1fn),
)}
NVFP4 = Elem("nvfp4", 6.0, 2, 2, 1, ml_dtypes.float4_e2m1fn, block_size=16)
SCALE_RULES = ("floor", "ceil", "even", "rceil")

TORCHAO_DEPARTURES = (
    "E8M0 byte 0: elements are divided by 2^-126 (floor, ceil, even) or multiplied by 1.0 (rceil), but dequantized "
    "with 2^-127, so such a block comes back at half (or 2^-127 times) its value; OCP: X = 2^-127 both ways",
    "rceil: ceil() of log2(amax / max) rounded to float32 first, so d just above a power of two 2^k (k outside "
    "[-4, 3]) gets 2^k, not 2^(k+1); NVIDIA's recipe rounds the power of two up exactly",
    "a block with an infinity and no NaN gets a finite scale (floor/ceil/even: byte 255 - emax; rceil: 254), its "
    "infinities saturate to the largest element; OCP: the scale is NaN",
    "NVFP4 block scales never go below 2^-6 (a clamp before the E4M3 cast), and the element multiplier is the "
    "float32 reciprocal of the scale, not a division",
)


def _f2b(a) -> np.ndarray:
    return np.ascontiguousarray(a, F32).view(U32).astype(np.int64)


def _b2f(b) -> np.ndarray:
    return np.asarray(b, np.int64).astype(U32).view(F32)


def _blocks(x, block_size: int) -> np.ndarray:
    x = np.asarray(x, F32)
    if x.ndim != 2 or x.shape[1] % block_size:
        raise QDQError(f"x must be 2-D [rows, cols] with cols a multiple of block_size {block_size} (torchao's "
                       f"blocks run along the last dimension); got shape {x.shape}", arg="x")
    return x.reshape(x.shape[0], x.shape[1] // block_size, block_size)


def _amax(xb: np.ndarray) -> np.ndarray:
    """max |x| per block; a block with a NaN gives torch.amax's canonical +NaN."""
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(xb), -1)
    return np.where(np.isnan(amax), _b2f(QNAN), amax).astype(F32)


def cast_fp8(q: np.ndarray, e: Elem) -> np.ndarray:
    """torch's float8 cast (round to nearest even; the caller has clamped): a NaN becomes sign | 0x7F for both
    formats (ml_dtypes writes 0x7E for E5M2's)."""
    codes = np.asarray(q, F32).astype(e.np_type).view(np.uint8).astype(np.int64)
    sign = (_f2b(q) >> 24) & 0x80
    return np.where(np.isnan(q), sign | 0x7F, codes)


def cast_floatx(q: np.ndarray, e: Elem) -> np.ndarray:
    """torchao's ``_f32_to_floatx_unpacked`` (fp6, fp4): round to nearest even on the bits, subnormals by adding
    a power of two, |q| >= the largest normal (inf too) to the largest code. A NaN is not special: it takes the
    normal path and gives a finite code that depends on its payload."""
    xb = _f2b(q)
    sign = xb & 0x80000000
    a = xb ^ sign
    af = _b2f(a)
    bias = (1 << (e.ebits - 1)) - 1
    max_code = (1 << (e.ebits + e.mbits)) - 1
    min_normal = F32(2.0 ** (1 - bias))
    denorm_exp = (127 - bias) + (23 - e.mbits) + 1
    with np.errstate(invalid="ignore"):
        sat = af >= F32(e.max_value)
        sub = ~sat & (af < min_normal)
        sub_code = (_f2b((af + _b2f(denorm_exp << 23)).astype(F32)) - (denorm_exp << 23)) & 0xFF
    odd = (a >> (23 - e.mbits)) & 1
    normal_code = ((a + ((bias - 127) << 23) + ((1 << (22 - e.mbits)) - 1) + odd) >> (23 - e.mbits)) & 0xFF
    code = np.where(sat, max_code, np.where(sub, sub_code, normal_code))
    return code | (sign >> (31 - e.ebits - e.mbits))


def _elements(q: np.ndarray, e: Elem) -> tuple[np.ndarray, np.ndarray]:
    """(codes, their float32 values)."""
    codes = cast_fp8(q, e) if e.is_fp8 else cast_floatx(q, e)
    return codes, codes.astype(np.uint8).view(e.np_type).astype(F32)


def _times(vals: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """vals * scale in float32 with torch's NaN: the first operand's (quieted) where vals is NaN, as x86's vmulps
    gives it; NumPy's own loop may return the second operand's NaN."""
    with np.errstate(all="ignore"):
        prod = (vals * scale).astype(F32)
    return np.where(np.isnan(vals), _b2f(_f2b(vals) | 0x400000), prod)


def _ceil_log2_rounded(d: np.ndarray) -> np.ndarray:
    """ceil(log2(d)) with log2 rounded to float32 first, as torch's CPU log2 gives it (correctly rounded here)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.ceil(np.log2(d.astype(np.float64)).astype(F32).astype(np.float64))


def e8m0_scales(amax: np.ndarray, e: Elem, rule: str) -> np.ndarray:
    """The E8M0 byte per block under ``rule`` (bits of the float32 amax A; emax = e.emax):

    floor: (A >> 23) - 127 - emax, clamped to [-127, 128], + 127 (OCP v1.0's floor(log2 amax) - emax);
    ceil: floor's plus 1 where A's mantissa is not 0; even: A rounded to the element's mantissa width first
    ((A + 2^(22 - mbits)) & 0xFF800000), then floor; a NaN amax: 255.
    rceil: d = amax / max_value; NaN -> 255, inf -> 254, else clamp(ceil(log2 d), -127, 127) + 127.
    """
    if rule not in SCALE_RULES:
        raise QDQError(f"unknown scale_rule {rule!r}; allowed: {', '.join(SCALE_RULES)}", arg="scale_rule")
    isnan = np.isnan(amax)
    if rule == "rceil":
        with np.errstate(all="ignore"):
            d = (amax / F32(e.max_value)).astype(F32)
        k = np.nan_to_num(np.clip(_ceil_log2_rounded(d), -127, 127), nan=0.0).astype(np.int64) + 127
        return np.where(np.isnan(d), 255, np.where(np.isinf(d), 254, k))
    a = _f2b(amax)
    if rule == "even":
        a = np.where(isnan, a, (a + (1 << (22 - e.mbits))) & 0xFF800000)
    s = ((a >> 23) & 0xFF) - 127
    if rule == "ceil":
        s = s + ((a & 0x7FFFFF) != 0)
    return np.where(isnan, 255, np.clip(s - e.emax, -127, 128) + 127)


def e8m0_value(byte: np.ndarray) -> np.ndarray:
    """2^(byte - 127) in float32 (byte 0: the subnormal 2^-127), NaN for 255: how torchao dequantizes."""
    return np.where(byte == 255, np.nan, 2.0 ** (np.asarray(byte, np.float64) - 127)).astype(F32)


def mx(x, elem: str, scale_rule: str = "floor", block_size: int | None = None
       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E8M0 bytes [rows, cols / block_size], element codes [rows, cols], dequantized [rows, cols]) of torchao's
    ``to_mx`` then ``to_dtype(..., float32)``; ``block_size`` default the format's (32)."""
    try:
        e = ELEMS[elem]
    except KeyError:
        raise QDQError(f"unknown element format {elem!r}; allowed: {', '.join(ELEMS)}, nvfp4", arg="elem") from None
    xb = _blocks(x, block_size or e.block_size)
    byte = e8m0_scales(_amax(xb), e, scale_rule)
    with np.errstate(all="ignore"):
        if scale_rule == "rceil":
            # the multiplier 2^(127 - byte), except 1.0 for byte 0 and 2^-127 for 254; a NaN block is all NaN
            rcp = np.where(byte == 255, np.nan, np.where(byte == 254, 2.0 ** -127, np.where(
                byte == 0, 1.0, 2.0 ** (127.0 - byte)))).astype(F32)
            q = np.where((byte == 255)[..., None], _b2f(QNAN), (xb * rcp[..., None]).astype(F32))
            q = np.clip(q, F32(-e.max_value), F32(e.max_value))
        else:
            # the divisor 2^(byte - 127), at least 2^-126 (byte 0), inf for 255; fp8 only is clamped first
            s = np.maximum(_b2f(np.where(byte == 255, 0x7F800000, byte << 23)), F32(2.0 ** -126))
            q = (xb / s[..., None]).astype(F32)
            if e.is_fp8:
                q = np.clip(q, F32(-e.max_value), F32(e.max_value))
    codes, vals = _elements(q, e)
    deq = _times(vals, e8m0_value(byte)[..., None])
    return byte, codes.reshape(np.shape(x)), deq.reshape(np.shape(x))


def per_tensor_scale(x) -> np.ndarray:
    """NVFP4's float32 per-tensor scale from the tensor's amax: amax / (6 * 448) (torchao's
    ``per_tensor_amax_to_scale``; NaN amax: the canonical NaN)."""
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(np.asarray(x, F32)))
    amax = _b2f(QNAN) if np.isnan(amax) else F32(amax)
    return (F32(amax) / F32(6.0 * 448.0)).astype(F32)


def nvfp4(x, pts=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float8_e4m3fn block-scale codes, fp4 element codes, dequantized) of torchao's ``nvfp4_quantize`` and
    ``NVFP4Tensor.dequantize``; ``pts`` the float32 per-tensor scale (two-level) or None (block scales only).

    Block scale: e4m3(clamp(amax / 6 [/ pts], 2^-6, 448)), each step float32-rounded. Multiplier: the float32
    reciprocal of the decoded scale (two-level: (1 / pts) / scale), x * multiplier clamped to +-6, then fp4.
    Dequantized: value * scale (two-level: * (pts * scale), the product rounded first). torch decodes the e4m3
    NaN as 0x7FF00000, so a NaN block gives fp4 code 4 everywhere.
    """
    xb = _blocks(x, NVFP4.block_size)
    e4 = ELEMS["mxfp8_e4m3"]
    with np.errstate(all="ignore"):
        bs = (_amax(xb) / F32(6.0)).astype(F32)
        if pts is not None:
            pts = F32(pts)
            bs = (bs / pts).astype(F32)
        s8 = cast_fp8(np.clip(bs, F32(2.0 ** -6), F32(448.0)), e4)
        s32 = s8.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(F32)
        s32 = np.where(np.isnan(s32), _b2f(_f2b(s32) | 0x7FF00000), s32)
        if pts is None:
            r, dscale = (F32(1.0) / s32).astype(F32), s32
        else:
            r, dscale = ((F32(1.0) / pts) / s32).astype(F32), (pts * s32).astype(F32)
        q = (xb * r[..., None]).astype(F32)
        q = np.where(np.isnan(r)[..., None], r[..., None], q)
        q = np.clip(q, F32(-6.0), F32(6.0))
    codes, vals = _elements(q, NVFP4)
    deq = _times(vals, dscale[..., None])
    return s8, codes.reshape(np.shape(x)), deq.reshape(np.shape(x))


# -- what the compiled program reads of these steps (templates/mx_fake_quant.mlir.j2) ------------------------


def threshold(max_value: float, bits_at_least: int) -> int:
    """The smallest float32 amax (its bits) with fl(amax / max_value) >= the float32 of ``bits_at_least``."""
    lo, hi = 0, 0x7F7FFFFF
    with np.errstate(all="ignore"):
        while lo < hi:
            mid = (lo + hi) // 2
            d = (np.asarray(mid, U32).view(F32) / F32(max_value)).astype(F32)
            if int(d.view(U32)) >= bits_at_least:
                hi = mid
            else:
                lo = mid + 1
    return lo


def nan_decoded(e: Elem, code: int) -> int:
    """The float32 bits (quieted) a NaN element code decodes to, as torchao's to_dtype reads it back (fp8); the
    canonical NaN for the formats without one (their NaN blocks come back as the scale's NaN)."""
    if not e.is_fp8:
        return 0x7FC00000
    return int(np.asarray([code], np.uint8).view(e.np_type).astype(F32).view(U32)[0]) | 0x400000


def rounding_boundaries(e: Elem, most: int = 7) -> tuple[int, ...]:
    """The float32 bits c_i with code(|q|) = #{i: bits(|q|) > c_i}: q rounded to ``e``'s magnitudes to nearest even
    and saturated, as a count of the boundaries below it; () where there are more than ``most`` (the compiled
    quantize compares against each one: FP4's 7, not FP6's 31). A tie between magnitude codes i and i + 1 goes to
    the even one: up (q >= m, bits(m) - 1) where i is odd, down (q > m, bits(m)) where i is even."""
    if e.np_type is None:   # MXINT8's 128 magnitudes
        return ()
    codes = np.arange(1 << (e.ebits + e.mbits), dtype=np.uint8)
    values = codes.view(e.np_type).astype(np.float64)
    finite = values[np.isfinite(values) & (values >= 0)]
    if len(finite) - 1 > most:
        return ()
    mids = ((finite[:-1] + finite[1:]) / 2).astype(F32).view(U32).astype(np.int64)   # exact: few-bit halves
    return tuple(int(m) - (i % 2) for i, m in enumerate(mids))
