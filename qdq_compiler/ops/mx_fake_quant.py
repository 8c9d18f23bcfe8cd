"""Block-scaled fake quantization, compiled (issue 25): OCP Microscaling's element formats (MXFP8 E4M3/E5M2, MXFP6
E2M3/E3M2, MXFP4 E2M1) with one E8M0 scale per block, under the four scale rules torchao has, as torchao 0.18.0
computes them (semantics ``torchao``; its steps, measured: ops/mx_numerics.py, held to 751 goldens).

One op, ``MXFakeQuantize`` (public: ``qdq_compiler.mx.fake_quantize``): x quantized to the format block by block
along ``axis`` and dequantized, in float32. Blocks are ``block_size`` consecutive elements of that axis; torchao
refuses a length that is not a multiple, we take a shorter last block (its scale from its own elements: the same
as padding it with zeros, which is how the program and the oracle compute it; ``ragged``, set from the data).

The program (templates/mx_fake_quant.mlir.j2) reads every scale from integer operations on the block's largest
magnitude (its float32 bits) and rounds x to the element grid scaled by the block's power of two directly on x's
bits (quantize-then-dequantize by a power of two is exactly that), so it gives NumPy's bits on the CPU targets,
which flush subnormals. RCEIL's ceil(log2(amax / max)) is torchao's float32 log2 as integer thresholds (a
correctly rounded float32 log2 maps just above 2^k to k when k's binade is wide; the template's table, checked
against the oracle for every exponent), or exact under OCP.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import storage
from ..errors import QDQError, QDQTypeError
from . import mx_numerics as MXN
from . import mx_ocp as MXO
from .family import AXIS, Family
from .rules import Rules
from .spec import OpSpec, attr, data, result

F32, U32 = np.float32, np.uint32
# The element formats: the name OCP and torchao use -> the grid the program rounds to (its storage row's exponent
# bias and mantissa bits; MXINT8's n * 2^-6 as a grid of 6 fraction bits with emin 0).
@dataclass(frozen=True)
class Grid:
    name: str
    bias: int
    mantissa_bits: int


ELEM_GRIDS = {**{name: Grid(row.name, row.bias, row.mantissa_bits) for name, row in (
    (n, storage.get(r)) for n, r in (("mxfp8_e4m3", "float8_e4m3fn"), ("mxfp8_e5m2", "float8_e5m2"),
                                     ("mxfp6_e2m3", "float6_e2m3fn"), ("mxfp6_e3m2", "float6_e3m2fn"),
                                     ("mxfp4_e2m1", "float4_e2m1fn")))},
    "mxint8": Grid("int8 n * 2^-6", 1, 6)}
ELEMS = tuple(ELEM_GRIDS)
SCALE_RULES = MXN.SCALE_RULES

ELEM = attr("elem", str, "mxfp8_e4m3", ELEMS, doc="the element format")
BLOCK_SIZE = attr("block_size", int, 32, doc="the elements along axis one scale covers (OCP: 32)")
AXIS_ATTR = attr("axis", int, -1, doc="the axis the blocks run along (negative: from the end; torchao: the last)")
SCALE_RULE = attr("scale_rule", str, "floor", SCALE_RULES,
                  doc="how the E8M0 scale is chosen from the block's amax: floor (OCP v1.0), ceil, even, rceil")
RAGGED = attr("ragged", bool, False, doc="set from the data: the axis is not a multiple of block_size (a shorter "
                                          "last block)")


def elem_info(name: str) -> MXN.Elem:
    return MXO.ELEMS[name]


# -- the NumPy reference -----------------------------------------------------------------------------------


def _as_rows(x: np.ndarray, axis: int, block_size: int) -> tuple[np.ndarray, tuple, int]:
    """x with ``axis`` last, as [rows, C padded with zeros to a multiple of block_size]; the moved shape and C."""
    moved = np.moveaxis(x, axis, -1)
    c = moved.shape[-1]
    rows = moved.reshape(-1, c)
    pad = -c % block_size
    if pad:
        rows = np.concatenate([rows, np.zeros((rows.shape[0], pad), F32)], axis=1)
    return rows, moved.shape, c


def fake_quantize(x, elem: str, block_size: int, axis: int, scale_rule: str, reference: str = "torchao") -> np.ndarray:
    """Blocks along ``axis`` (a shorter last block: padded with zeros), quantized and dequantized: ``reference``
    "torchao" (to_mx then to_dtype(float32), ops/mx_numerics.py) or "ocp" (the specification, ops/mx_ocp.py)."""
    x = np.asarray(x, F32)
    if x.size == 0:
        return x.copy()
    rows, moved_shape, c = _as_rows(x, axis, block_size)
    if reference == "ocp":
        deq = MXO.fake_quantize_rows(rows, elem, scale_rule, block_size)
    else:
        _, _, deq = MXN.mx(rows, elem, scale_rule, block_size)
    return np.moveaxis(deq[:, :c].reshape(moved_shape), -1, axis)


def _oracle(reference: str):
    def oracle(call):
        a = call.attrs
        return (fake_quantize(call.arrays["x"], a["elem"], a["block_size"], a["axis"], a["scale_rule"], reference),)
    return oracle


# -- checks, in torchao's words where it has them ------------------------------------------------------------


def check(c, spec, arrays, attrs):
    x = arrays["x"]
    bs, axis = attrs["block_size"], attrs["axis"]
    if x.ndim == 0:
        c.fail("x must have at least one dimension (the blocks run along an axis)", "x")
    if bs <= 0:
        c.fail(f"block_size={bs} must be a positive integer (OCP: 32)", "block_size")
    if not -x.ndim <= axis < x.ndim:
        c.fail(f"axis={axis} is out of range for x of rank {x.ndim}; allowed: {-x.ndim}..{x.ndim - 1}", "axis")


# -- the family ----------------------------------------------------------------------------------------------


def _threshold(max_value: float, bits_at_least: int) -> int:
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


def _nan_decoded(e: MXN.Elem, code: int) -> int:
    """The float32 bits (quieted) a NaN element code decodes to, as torchao's to_dtype reads it back (fp8); the
    canonical NaN for the formats without one (their NaN blocks come back as the scale's NaN)."""
    if not e.is_fp8:
        return 0x7FC00000
    return int(np.asarray([code], np.uint8).view(e.np_type).astype(F32).view(U32)[0]) | 0x400000


class MXFakeQuant(Family):
    name = "mx_fake_quant"
    rules_by_semantics = {}

    def wrong_dtype_words(self, spec, input_name, dtype):
        return None

    def mismatched_dtype_words(self, spec, index, got, want):
        return None

    def public_arguments(self, spec, kwargs):
        """x as an array; axis made non-negative; ``ragged`` set from x's extent along it."""
        out = dict(kwargs)
        x = out.get("x")
        if not isinstance(x, np.ndarray):
            raise QDQTypeError(f"x must be a NumPy array of float32, float16 or bfloat16 (got {type(x).__name__})",
                               op=spec.name, arg="x")
        for name, allowed in (("elem", ELEMS), ("scale_rule", SCALE_RULES)):   # (torchao has no words: an enum)
            if name in out and out[name] not in allowed:
                raise QDQError(f"{name}={out[name]!r} is not known; allowed: {', '.join(allowed)}", op=spec.name,
                               arg=name)
        axis, bs = out.get("axis", -1), out.get("block_size", 32)
        if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and x.ndim and -x.ndim <= axis < x.ndim:
            out["axis"] = int(axis) % x.ndim
            if isinstance(bs, (int, np.integer)) and not isinstance(bs, bool) and bs > 0:
                ragged = bool(x.shape[out["axis"]] % bs)
                if out.get("ragged", ragged) != ragged:   # a program built for the other kind (a bundle entry)
                    raise QDQError(f"x has {x.shape[out['axis']]} elements along axis {out['axis']}, "
                                   f"{'not ' if ragged else ''}a multiple of block_size {bs}; this program was built "
                                   f"with ragged={out['ragged']} (build it with ragged={ragged})", op=spec.name, arg="x")
                out["ragged"] = ragged
        return out

    def channel_axis(self, spec, attrs, rank):
        return attrs["axis"] % rank if rank else None

    def layout(self, spec, attrs):
        return AXIS

    def block_size(self, spec, attrs):
        return attrs["block_size"]

    def structural(self, spec):
        return frozenset({"elem", "block_size", "axis", "scale_rule", "ragged"})

    def reduces(self, spec, attrs):
        return False   # a block's amax is a reduction of block_size elements, not of the data

    def template_vars(self, spec, attrs):
        e = elem_info(attrs["elem"])
        return {"elem": e, "row": ELEM_GRIDS[attrs["elem"]], "block_size": attrs["block_size"], "rule": attrs["scale_rule"],
                "ragged": attrs["ragged"], "fp8": e.is_fp8,
                "max_mantissa": int(np.asarray(e.max_value, F32).view(U32)) & 0x7FFFFF,
                # RCEIL: amax at least thr_normal gives a normal amax / max; below it, amax at least thr_one gives
                # code 1 (torchao's ceil(log2(d)) = -126 for d > 2^-127 (1 + 11 * 2^-22)), else code 0
                "thr_normal": _threshold(e.max_value, 0x00800000), "thr_one": _threshold(e.max_value, 0x0040000C),
                "nan_pos": _nan_decoded(e, 0x7F), "nan_neg": _nan_decoded(e, 0xFF)}

    def matrix_variants(self, spec):
        """Each element format under each scale rule (24), blocks along the last axis or a middle one, a ragged
        last block in every other one; the block size 32, or 8 in a quarter (more blocks per sample)."""
        out = []
        for i, e in enumerate(ELEMS):
            for j, r in enumerate(SCALE_RULES):
                n = i * len(SCALE_RULES) + j
                out.append({"elem": e, "scale_rule": r, "block_size": 8 if n % 4 == 3 else 32,
                            "axis": 1, "ragged": bool(n % 2)})
        return out

    def sample_shape(self, spec, attrs, size):
        """[rows, C] (blocks along the last axis) or, for the ragged variants, [outer, C, 3] (along a middle one); C
        four blocks, one element more when ragged."""
        bs = attrs["block_size"]
        c = 4 * bs + (1 if attrs.get("ragged") else 0)
        inner = 3 if attrs.get("ragged") else 1
        outer = max(size // (c * inner), 2)
        return (outer, c, inner) if inner > 1 else (outer, c)

    def random_calls(self, spec, attrs, x, rng, special):
        """Two calls on x's shape: each block its own magnitude (2^-140 to 2^120), the specials sprinkled, and one
        block of zeros, one of subnormals, one with a NaN, one with +inf, one with -inf."""
        bs, axis = attrs["block_size"], 1
        c = x.shape[axis]
        calls = []
        for _ in range(2):
            v = rng.standard_normal(x.shape).astype(F32)
            mag = np.exp2(rng.integers(-140, 121, x.shape[:1] + (-(-c // bs),) + x.shape[2:])).astype(np.float64)
            with np.errstate(all="ignore"):
                v = (v * np.repeat(mag, bs, axis=1)[:, :c]).astype(F32)
            v = special(v, 1.0)
            view = v.reshape(v.shape[0], c, -1)
            for b, what in enumerate(("zero", "sub", "nan", "inf", "ninf")):
                row, lo = rng.integers(0, v.shape[0]), (b * bs) % (c - c % bs or c)
                hi = min(lo + bs, c)
                if what == "zero":
                    view[row, lo:hi] = np.where(rng.random((hi - lo, 1)) < 0.5, 0.0, -0.0)
                elif what == "sub":
                    view[row, lo:hi] = rng.standard_normal((hi - lo, view.shape[2])) * 2.0 ** -135
                else:
                    view[row, lo + 1] = {"nan": np.nan, "inf": np.inf, "ninf": -np.inf}[what]
            calls.append(self.public_arguments(spec, {"x": v, "elem": attrs["elem"], "block_size": bs, "axis": axis,
                                                      "scale_rule": attrs["scale_rule"]}))
        return calls

    def bench_kwargs(self, spec, attrs, shape, rng):
        x = rng.standard_normal(shape, dtype=F32) * F32(2)
        return {"x": x, "elem": attrs.get("elem", ELEM.default), "block_size": attrs.get("block_size", BLOCK_SIZE.default),
                "axis": len(shape) - 1, "scale_rule": attrs.get("scale_rule", SCALE_RULE.default)}   # the public arguments


# The types x may have: float16 and bfloat16 are widened exactly, computed as float32 and y rounded to x's type
# once (X * P is exact in float32). torchao takes float32 and bfloat16; its bfloat16 answers are the same but for
# a NaN block's NaN (ATen's vectorised float -> bfloat16 conversion writes 0xFFFF), so semantics="torchao" is
# float32 only for now.
DTYPES = ("float32", "float16", "bfloat16")


def _float32_only(spec, dtype):
    return ("semantics='torchao' takes float32 here (torchao's bfloat16 NaN blocks are ATen's 0xFFFF); "
            "semantics='ocp' takes float16 and bfloat16") if dtype != "float32" else ""


# How the two references differ, as the template reads it (k.arith): torchao's byte 0 divides by 2^-126 (OCP:
# 2^-127), its RCEIL takes a float32 log2 (OCP: exact), an infinity's block keeps a finite scale (OCP: NaN), and
# a NaN block's elements are the NaNs its arithmetic happens to give (OCP: the canonical NaN).
TORCHAO_ARITH = {"byte0_exp": 126, "rceil_log2_f32": True, "nonfinite_block_nan": False,
                 "canonical_nan_blocks": False}
OCP_ARITH = {"byte0_exp": 127, "rceil_log2_f32": False, "nonfinite_block_nan": True, "canonical_nan_blocks": True}
def _torchao_check(c, spec, arrays, attrs):
    if attrs["elem"] not in MXN.ELEMS:
        c.fail(f"semantics='torchao': torchao 0.18.0 has no {attrs['elem']} (its to_mx asserts 'unsupported'); "
               f"allowed: {', '.join(MXN.ELEMS)} (semantics='ocp' takes {attrs['elem']})", "elem")
    check(c, spec, arrays, attrs)


def _torchao_has(spec, attrs) -> bool:
    return attrs.get("elem", ELEM.default) in MXN.ELEMS


FAMILY = MXFakeQuant()
FAMILY.rules_by_semantics = {
    "ocp": Rules(_oracle("ocp"), "mx_fake_quant.mlir.j2", DTYPES, check=check, arithmetic=OCP_ARITH),
    "torchao": Rules(_oracle("torchao"), "mx_fake_quant.mlir.j2", ("float32",), check=_torchao_check,
                     dtype_hint=_float32_only, arithmetic=TORCHAO_ARITH, answers_variant=_torchao_has),
}

SPECS = (
    OpSpec("MXFakeQuantize", FAMILY, (data("x"),), (ELEM, BLOCK_SIZE, AXIS_ATTR, SCALE_RULE, RAGGED),
           (result("y"),), DTYPES,
           "x quantized to an MX format block by block along axis (one E8M0 scale per block, chosen by scale_rule) "
           "and dequantized, in x's type.", namespace="mx",
           signature=("x", "elem", "block_size", "axis", "scale_rule"),
           public_defaults=(("block_size", 32), ("axis", -1), ("scale_rule", "floor")), public_name="fake_quantize"),
)

