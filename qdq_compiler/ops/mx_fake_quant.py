"""Block-scaled fake quantization, compiled (issue 25): OCP Microscaling's element formats (MXFP8 E4M3/E5M2, MXFP6
E2M3/E3M2, MXFP4 E2M1, MXINT8) with one E8M0 scale per block under four scale rules, and NVIDIA's NVFP4. Two
semantics: ``ocp``, the formats' own texts: OCP v1.0 in exact arithmetic (ops/mx_ocp.py) and, for NVFP4, NVIDIA's
recipe (ops/nvfp4_spec.py), and ``torchao``, torchao 0.18.0's bits (ops/mx_numerics.py, held to 751 goldens). The
semantics' rules and the OpSpecs are in ops/mx_specs.py.

Six ops, one template (templates/mx_fake_quant.mlir.j2 and its includes): ``MXFakeQuantize`` (public:
``qdq_compiler.mx.fake_quantize``): x quantized block by block along ``axis`` and dequantized, in x's type, rounded
to nearest or stochastically (``ocp``: counter-based, ops/mx_stochastic.py); ``MXQuantize`` (``quantize``): the
stored form, element codes and E8M0 scales (a BLOCKS result; mx_encode.mlir.j2; both semantics); ``MXDequantize``
(``dequantize``, OCP's) back (mx_decode.mlir.j2); ``MXFakeQuantizeGradient`` (``fake_quantize_gradient``): clipped
straight-through; ``NVFP4Quantize`` and ``NVFP4Dequantize`` (``nvfp4_quantize``, ``nvfp4_dequantize``): NVFP4's
stored form, three parts (E2M1 codes, E4M3 block scales, the float32 tensor scale), NVIDIA's recipe. Blocks
are ``block_size`` consecutive elements of that axis; torchao refuses a length that is not a multiple, we take a
shorter last block (its scale from its own elements: the same as padding it with zeros, which is how the program
and the oracle compute it; ``ragged``, set from the data).

The program reads every E8M0 scale from integer operations on the block's largest magnitude (its float32 bits)
and rounds x to the element grid scaled by the block's power of two directly on x's bits (quantize-then-dequantize
by a power of two is exactly that), so it gives NumPy's bits on the CPU targets, which flush subnormals. RCEIL's
ceil(log2(amax / max)) is torchao's float32 log2 as integer thresholds (a correctly rounded float32 log2 maps just
above 2^k to k when k's binade is wide; the template's table, checked against the oracle for every exponent), or
exact under OCP. NVFP4 (nvfp4_blocks.mlir.j2, nvfp4_decode.mlir.j2) is the float32 operations of NVIDIA's recipe
(``ocp``: ops/nvfp4_spec.py; the stored form, ``nvfp4_quantize`` and ``nvfp4_dequantize``) or torchao's, one for one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes, storage
from ..errors import QDQError, QDQTypeError
from . import mx_numerics as MXN
from . import mx_ocp as MXO
from . import mx_stochastic as MXS
from .mx_reference import clipped_gradient, dequantize, fake_quantize, nvfp4_dequantize, nvfp4_quantize, quantize
from .family import AXIS, Family
from .spec import BLOCKS, RANGE, attr

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
MX_ELEMS = tuple(ELEM_GRIDS)   # the E8M0-scaled formats (OCP's)
ELEMS = MX_ELEMS + ("nvfp4",)   # NVFP4: E4M3 block scales and a per-tensor scale (NVIDIA's recipe, torchao's)
NVFP4_BLOCK = MXN.NVFP4.block_size
SCALE_RULES = MXN.SCALE_RULES

ELEM = attr("elem", str, "mxfp8_e4m3", ELEMS, doc="the element format")
BLOCK_SIZE = attr("block_size", int, 32, doc="the elements along axis one scale covers (None: the format's own, OCP's "
                                             "32, NVFP4's 16)")
AXIS_ATTR = attr("axis", int, -1, doc="the axis the blocks run along (negative: from the end; torchao: the last)")
SCALE_RULE = attr("scale_rule", str, "floor", SCALE_RULES,
                  doc="how the E8M0 scale is chosen from the block's amax: floor (OCP v1.0), ceil, even, rceil")
ELEM_TYPE = attr("elem_type", str, "float8_e4m3fn", tuple(MXO.STORAGE.values()),
                 doc="set from elem (dequantize: elem from it, the elements' type): the type the element codes are in",
                 internal=True)
OUT_DTYPE = attr("out_dtype", str, "float32", ("float32", "float16", "bfloat16"),
                 doc="dequantize: the result's type (rounded to it once, to nearest even)")
ROUNDING = attr("rounding", str, "nearest", ("nearest", "stochastic"),
                doc="nearest (ties to even) or stochastic: counter-based, the same bits on every target and tiling")
SEED = attr("seed", int, 0, doc="stochastic rounding's key, 0 .. 2^64 - 1 (a runtime parameter: one program per "
                                "configuration serves every seed)")
RAGGED = attr("ragged", bool, False, doc="set from the data: the axis is not a multiple of block_size (a shorter "
                                          "last block)", internal=True)


def elem_info(name: str) -> MXN.Elem:
    return MXN.NVFP4 if name == "nvfp4" else MXO.ELEMS[name]


# -- the NumPy reference -----------------------------------------------------------------------------------


def _oracle(reference: str):
    def oracle(call):
        a, kind = call.attrs, call.spec.variant.kind
        if call.spec.variant.nvfp4:   # the stored form: (elements, scales, tensor_scale) and back
            if kind == "quantize":
                return nvfp4_quantize(call.arrays["x"], a["axis"], reference)
            return (nvfp4_dequantize(call.arrays["elements"], call.arrays["scales"], call.arrays["tensor_scale"],
                                     a["axis"]),)
        if kind == "dequantize":
            return (dequantize(call.arrays["elements"], call.arrays["scales"], a["elem"], a["block_size"], a["axis"]),)
        if kind == "gradient":
            return (clipped_gradient(call.arrays["gradients"], call.arrays["x"], a["elem"], a["block_size"], a["axis"],
                                     a["scale_rule"]),)
        x = call.arrays["x"]
        r = MXS.element_random_bits(a["seed"], x.shape) if a.get("rounding") == "stochastic" else None
        if kind == "quantize":
            return quantize(x, a["elem"], a["block_size"], a["axis"], a["scale_rule"], r, reference)
        return (fake_quantize(x, a["elem"], a["block_size"], a["axis"], a["scale_rule"], reference, r),)
    return oracle


# -- checks, in torchao's words where it has them ------------------------------------------------------------


def check(c, spec, arrays, attrs):
    name = spec.data_input
    x = arrays[name]
    bs, axis = attrs["block_size"], attrs["axis"]
    if x.ndim == 0:
        c.fail(f"{name} must have at least one dimension (the blocks run along an axis)", name)
    if bs <= 0:
        c.fail(f"block_size={bs} must be a positive integer (OCP: 32)", "block_size")
    if not -x.ndim <= axis < x.ndim:
        c.fail(f"axis={axis} is out of range for {name} of rank {x.ndim}; allowed: {-x.ndim}..{x.ndim - 1}", "axis")
    if attrs.get("elem") == "nvfp4" and (bs != NVFP4_BLOCK or attrs.get("scale_rule", "floor") != "floor"
                                         or attrs.get("rounding", "nearest") != "nearest"):
        c.fail(f"elem='nvfp4' has blocks of {NVFP4_BLOCK} with an E4M3 scale (amax / 6, to nearest) and rounds to "
               f"nearest: block_size={bs}, scale_rule={attrs.get('scale_rule')!r} and rounding="
               f"{attrs.get('rounding', 'nearest')!r} do not apply (leave them out)", "elem")
    if attrs.get("rounding") == "stochastic":
        if not 0 <= attrs["seed"] < 2 ** 64:
            c.fail(f"seed={attrs['seed']} is out of range; allowed: 0 .. 2**64 - 1", "seed")
        if x.size >= 2 ** 31:
            c.fail(f"x has {x.size:,} elements; stochastic rounding counts elements in 32 bits here (at most "
                   f"2**31 - 1): split x", "x")
    if "gradients" in arrays and arrays["gradients"].shape != x.shape:
        c.fail(f"gradients has shape {list(arrays['gradients'].shape)} but x has shape {list(x.shape)}; they must be "
               f"equal", "gradients")
    if "scales" in arrays:   # dequantize: one scale per block
        want = tuple(-(-d // bs) if i == axis % x.ndim else d for i, d in enumerate(x.shape))
        if arrays["scales"].shape != want:
            c.fail(f"scales has shape {list(arrays['scales'].shape)}; elements of shape {list(x.shape)} in blocks of "
                   f"{bs} along axis {axis} need {list(want)}", "scales")


# -- the family ----------------------------------------------------------------------------------------------


class MXFakeQuant(Family):
    name = "mx_fake_quant"
    rules_by_semantics = {}

    def wrong_dtype_words(self, spec, input_name, dtype):
        return None

    def mismatched_dtype_words(self, spec, index, got, want):
        return None

    def public_arguments(self, spec, kwargs):
        """The data as an array (dequantize: elem from the elements' type, the scales' type checked); elem_type set
        from elem; axis made non-negative; ``ragged`` set from the data's extent along it."""
        out = dict(kwargs)
        name = spec.data_input
        x = out.get(name)
        if spec.variant.kind == "dequantize" and spec.variant.nvfp4:
            for arg, want in (("elements", "float4_e2m1fn"), ("scales", "float8_e4m3fn")):
                a = out.get(arg)
                if not isinstance(a, np.ndarray) or a.dtype != storage.get(want).np:
                    got = a.dtype if isinstance(a, np.ndarray) else type(a).__name__
                    raise QDQTypeError(f"{arg} must be a NumPy array of {want} (nvfp4_quantize's; got {got})",
                                       op=spec.name, arg=arg)
            out["tensor_scale"] = np.asarray(out.get("tensor_scale"), np.float32)
        elif spec.variant.kind == "dequantize":
            elem = _ELEM_OF_TYPE.get(getattr(getattr(x, "dtype", None), "name", None))
            if not isinstance(x, np.ndarray) or elem is None:
                got = x.dtype if isinstance(x, np.ndarray) else type(x).__name__
                raise QDQTypeError(f"elements must be a NumPy array of an MX element type: "
                                   f"{', '.join(MXO.STORAGE.values())} (got {got})", op=spec.name, arg="elements")
            sc = out.get("scales")
            if not isinstance(sc, np.ndarray) or sc.dtype != storage.get("float8_e8m0fnu").np:
                got = sc.dtype if isinstance(sc, np.ndarray) else type(sc).__name__
                raise QDQTypeError(f"scales must be a NumPy array of float8_e8m0fnu (the E8M0 scales; got {got})",
                                   op=spec.name, arg="scales")
            out["elem"] = elem
        elif not isinstance(x, np.ndarray):
            raise QDQTypeError(f"x must be a NumPy array of float32, float16 or bfloat16 (got {type(x).__name__})",
                               op=spec.name, arg="x")
        for key, allowed in (("elem", ELEMS), ("scale_rule", SCALE_RULES)):   # (torchao has no words: an enum)
            if key in out and out[key] not in allowed:
                raise QDQError(f"{key}={out[key]!r} is not known; allowed: {', '.join(allowed)}", op=spec.name,
                               arg=key)
        if "elem_type" in spec.attr_map:
            out["elem_type"] = MXO.STORAGE.get(out.get("elem", ELEM.default), ELEM_TYPE.default)
        if out.get("block_size", 0) is None:   # the format's own
            out["block_size"] = NVFP4_BLOCK if out.get("elem") == "nvfp4" else BLOCK_SIZE.default
        axis, bs = out.get("axis", -1), out.get("block_size", 32)
        if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and x.ndim and -x.ndim <= axis < x.ndim:
            out["axis"] = int(axis) % x.ndim
            if isinstance(bs, (int, np.integer)) and not isinstance(bs, bool) and bs > 0:
                ragged = bool(x.shape[out["axis"]] % bs)
                if out.get("ragged", ragged) != ragged:   # a program built for the other kind (a bundle entry)
                    raise QDQError(f"{name} has {x.shape[out['axis']]} elements along axis {out['axis']}, "
                                   f"{'not ' if ragged else ''}a multiple of block_size {bs}; this program was built "
                                   f"for data whose extent along axis is {'' if ragged else 'not '}one (build it "
                                   f"for this data's shape)", op=spec.name, arg=name)
                out["ragged"] = ragged
        return out

    def configure(self, spec, attrs, dims, shapes, types, element):
        """As a call: dequantize's elem from its elements' declared type, elem_type from elem, block_size None as the
        format's own, axis non-negative, ragged from a static extent along it (a dynamic one: blocks that divide it)."""
        out = super().configure(spec, attrs, dims, shapes, types, element)
        if spec.variant.kind == "dequantize" and not spec.variant.nvfp4 and spec.data_input in types:
            elem = _ELEM_OF_TYPE.get(types[spec.data_input])
            if elem is None:
                raise QDQTypeError(f"elements must be of an MX element type: {', '.join(MXO.STORAGE.values())} (got "
                                   f"{types[spec.data_input]})", op=spec.name, arg="elements")
            out["elem"] = elem
        if "elem_type" in spec.attr_map:
            out["elem_type"] = MXO.STORAGE.get(out.get("elem", ELEM.default), ELEM_TYPE.default)
        if out.get("block_size", 0) is None:
            out["block_size"] = NVFP4_BLOCK if out.get("elem") == "nvfp4" else BLOCK_SIZE.default
        axis, bs = out.get("axis", -1), out.get("block_size", spec.attr_map["block_size"].default)
        if isinstance(axis, int) and dims and -len(dims) <= axis < len(dims):
            out["axis"] = axis % len(dims)
            extent = dims[out["axis"]]
            if isinstance(bs, int) and bs > 0 and extent is not None:
                out["ragged"] = bool(extent % bs)
        return out

    def element_dtype(self, spec, kwargs):
        """dequantize's T: its result's type, out_dtype."""
        if spec.variant.kind != "dequantize":
            return None
        out = kwargs.get("out_dtype", OUT_DTYPE.default)
        return dtypes.np_of(out) if out in OUT_DTYPE.choices else None   # (else the attribute check names it)

    def operand_layout(self, spec, attrs, operand):
        return BLOCKS if operand.layout == RANGE else operand.layout

    def channel_axis(self, spec, attrs, rank):
        return attrs["axis"] % rank if rank else None

    def layout(self, spec, attrs):
        return AXIS

    def block_size(self, spec, attrs):
        return attrs["block_size"]

    def structural(self, spec):
        return frozenset({"elem", "elem_type", "block_size", "axis", "scale_rule", "rounding", "ragged"}) & \
            set(spec.attr_map)

    def reduces(self, spec, attrs):
        return False   # a block's amax is a reduction of block_size elements, not of the data

    def template_vars(self, spec, attrs):
        e = elem_info(attrs["elem"])
        if e is MXN.NVFP4:   # its own helper (templates/nvfp4_blocks.mlir.j2) reads none of the E8M0 rules' values
            return {"kind": spec.variant.kind, "nvfp4": True, "code_type": storage.get("float4_e2m1fn"), "elem": e,
                    "block_size": attrs["block_size"], "rule": "", "stochastic": False, "ragged": attrs["ragged"],
                    "row": None, "bounds": ()}
        return {"nvfp4": False, "kind": spec.variant.kind, "elem": e, "row": ELEM_GRIDS[attrs["elem"]],
                "code_type": storage.get(MXO.STORAGE[attrs["elem"]]), "block_size": attrs["block_size"],
                "rule": attrs.get("scale_rule", "floor"), "stochastic": attrs.get("rounding") == "stochastic",
                "ragged": attrs["ragged"], "fp8": e.is_fp8,
                "max_mantissa": int(np.asarray(e.max_value, F32).view(U32)) & 0x7FFFFF,
                # RCEIL: amax at least thr_normal gives a normal amax / max; below it, amax at least thr_one gives
                # code 1 (torchao's ceil(log2(d)) = -126 for d > 2^-127 (1 + 11 * 2^-22)), else code 0
                "thr_normal": MXN.threshold(e.max_value, 0x00800000), "thr_one": MXN.threshold(e.max_value, 0x0040000C),
                "nan_pos": MXN.nan_decoded(e, 0x7F), "nan_neg": MXN.nan_decoded(e, 0xFF),
                # quantize to nearest of a format with few magnitudes (FP4): the codes as counts of boundaries below
                "bounds": MXN.rounding_boundaries(e) if spec.variant.kind == "quantize"
                and attrs.get("rounding") != "stochastic" else ()}

    def matrix_variants(self, spec):
        """Each element format under each scale rule (24), blocks along the last axis or a middle one, a ragged
        last block in every other one; the block size 32, or 8 in a quarter (more blocks per sample)."""
        nvfp4 = [{"elem": "nvfp4", "scale_rule": "floor", "block_size": NVFP4_BLOCK, "axis": 1, "ragged": g}
                 for g in (False, True)]
        if spec.variant.nvfp4:
            return [{k: v for k, v in a.items() if k in spec.attr_map} for a in nvfp4]
        out = []
        for i, e in enumerate(MX_ELEMS):
            for j, r in enumerate(SCALE_RULES):
                n = i * len(SCALE_RULES) + j
                out.append({"elem": e, "scale_rule": r, "block_size": 8 if n % 4 == 3 else 32,
                            "axis": 1, "ragged": bool(n % 2)})
        # stochastic rounding: three formats (fake_quantize), two (quantize), a ragged middle axis in one
        sr = [{"elem": e, "scale_rule": r, "block_size": 32, "axis": 1, "ragged": g, "rounding": "stochastic"}
              for e, r, g in (("mxfp6_e2m3", "rceil", True), ("mxint8", "even", False), ("mxfp8_e4m3", "floor", False))]
        if spec.variant.kind == "fake":
            return out + sr + nvfp4
        stored = out[1::5] + (sr[:2] if spec.variant.kind == "quantize" else [])   # each format once, rules in turn
        # (the gradient too: its mask is the scale's range; NVFP4's as well)
        stored += nvfp4 if spec.variant.kind == "gradient" else []
        return [{k: v for k, v in (a | {"elem_type": MXO.STORAGE.get(a["elem"])}).items() if k in spec.attr_map}
                for a in stored]

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
        block of zeros, one of subnormals, one with a NaN, one with +inf, one with -inf. NVFP4 (one per-tensor
        scale, which one NaN makes NaN everywhere): blocks 2^-40 to 2^40, zeros and subnormals, -inf in the second."""
        bs, axis = attrs["block_size"], 1
        c = x.shape[axis]
        calls = []
        nvfp4 = attrs["elem"] == "nvfp4"
        for _ in range(2):
            v = rng.standard_normal(x.shape).astype(F32)
            lo, hi = (-40, 41) if nvfp4 else (-140, 121)
            mag = np.exp2(rng.integers(lo, hi, x.shape[:1] + (-(-c // bs),) + x.shape[2:])).astype(np.float64)
            with np.errstate(all="ignore"):
                v = (v * np.repeat(mag, bs, axis=1)[:, :c]).astype(F32)
            v = v if nvfp4 else special(v, 1.0)
            view = v.reshape(v.shape[0], c, -1)
            kinds = (("zero", "sub", "ninf")[:2 + len(calls)]) if nvfp4 else ("zero", "sub", "nan", "inf", "ninf")
            for b, what in enumerate(kinds):
                row, lo = rng.integers(0, v.shape[0]), (b * bs) % (c - c % bs or c)
                hi = min(lo + bs, c)
                if what == "zero":
                    view[row, lo:hi] = np.where(rng.random((hi - lo, 1)) < 0.5, 0.0, -0.0)
                elif what == "sub":
                    view[row, lo:hi] = rng.standard_normal((hi - lo, view.shape[2])) * 2.0 ** -135
                else:
                    view[row, lo + 1] = {"nan": np.nan, "inf": np.inf, "ninf": -np.inf}[what]
            kwargs = {"x": v, "elem": attrs["elem"], "block_size": bs, "axis": axis,
                      "scale_rule": attrs.get("scale_rule", SCALE_RULES[len(calls)])}
            if attrs.get("rounding") == "stochastic":
                kwargs |= {"rounding": "stochastic", "seed": int(rng.integers(0, 2 ** 63)) * 2 + len(calls)}
            if spec.variant.nvfp4:
                kwargs = {"x": v, "axis": axis} if spec.variant.kind == "quantize" else \
                    _stored_nvfp4(v, rng, x.dtype.name)
            elif spec.variant.kind == "dequantize":
                kwargs = self._stored(v, attrs["elem"], bs, kwargs["scale_rule"], rng, x.dtype.name)
            elif spec.variant.kind == "gradient":
                kwargs["gradients"] = special(rng.standard_normal(x.shape).astype(F32), 1.0)
            calls.append(self.public_arguments(spec, kwargs))
        return calls

    def _stored(self, v, elem, bs, rule, rng, out_dtype):
        """dequantize's arguments: v quantized (axis 1), then codes of every kind sprinkled (NaN and inf where the
        format has them) and scales 0, 254 and 255 (NaN)."""
        elements, scales = quantize(v, elem, bs, 1, rule)
        codes, sb = storage.to_codes(elements).copy(), storage.to_codes(scales).copy()
        t = storage.get(MXO.STORAGE[elem])
        hit = rng.random(codes.shape) < 0.05
        codes[hit] = rng.integers(t.min, t.max + 1, int(hit.sum())) if not t.is_float else \
            rng.integers(0, 1 << t.bits, int(hit.sum())).astype(np.uint8).view(np.int8)
        sb.reshape(-1)[rng.integers(0, sb.size, 3)] = np.array([0, 254, 255], np.uint8).view(np.int8)
        return {"elements": storage.from_codes(codes, t.np), "scales": storage.from_codes(sb, "float8_e8m0fnu"),
                "block_size": bs, "axis": 1, "out_dtype": out_dtype}

    def bench_kwargs(self, spec, attrs, shape, rng):
        x = rng.standard_normal(shape, dtype=F32) * F32(2)
        if spec.variant.nvfp4:
            elements, scales, ts = nvfp4_quantize(x, len(shape) - 1)
            return {"x": x, "axis": len(shape) - 1} if spec.variant.kind == "quantize" else \
                {"elements": elements, "scales": scales, "tensor_scale": ts, "axis": len(shape) - 1}
        if spec.variant.kind == "gradient":
            return {"gradients": rng.standard_normal(shape, dtype=F32), "x": x, "elem": attrs.get("elem", ELEM.default),
                    "block_size": attrs.get("block_size", 32), "axis": len(shape) - 1}
        if spec.variant.kind == "dequantize":
            elements, scales = quantize(x, attrs.get("elem", ELEM.default), attrs.get("block_size", 32), len(shape) - 1,
                                        "floor")
            return {"elements": elements, "scales": scales, "block_size": attrs.get("block_size", 32),
                    "axis": len(shape) - 1}
        rounding = {"rounding": "stochastic", "seed": 1} if attrs.get("rounding") == "stochastic" else {}
        return {"x": x, "elem": attrs.get("elem", ELEM.default), "block_size": attrs.get("block_size", BLOCK_SIZE.default),
                "axis": len(shape) - 1, "scale_rule": attrs.get("scale_rule", SCALE_RULE.default), **rounding}


# The types x may have: float16 and bfloat16 are widened exactly, computed as float32 and y rounded to x's type
# once (X * P is exact in float32). torchao takes float32 and bfloat16; its bfloat16 answers are the same but for
# a NaN block's NaN (ATen's vectorised float -> bfloat16 conversion writes 0xFFFF), so semantics="torchao" is
# float32 only for now.
DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Variant:
    kind: str = "fake"   # "fake" (quantize and dequantize in one), "quantize" (codes and scales), "dequantize" or
    #   "gradient" (clipped straight-through: dy where x is within its block's range)
    nvfp4: bool = False  # NVFP4's stored form (nvfp4_quantize, nvfp4_dequantize): three parts, E4M3 block scales


def _stored_nvfp4(v, rng, out_dtype):
    """nvfp4_dequantize's arguments: v quantized (axis 1), then codes of every kind sprinkled and block scales 0,
    the smallest subnormal, 448 and NaN (0x7F, 0xFF)."""
    elements, scales, ts = nvfp4_quantize(v, 1)
    codes, sb = storage.to_codes(elements).copy(), storage.to_codes(scales).copy()
    hit = rng.random(codes.shape) < 0.05
    codes[hit] = rng.integers(0, 16, int(hit.sum()))
    sb.reshape(-1)[rng.integers(0, sb.size, 5)] = np.array([0, 1, 0x7E, 0x7F, 0xFF], np.uint8).view(np.int8)
    return {"elements": storage.from_codes(codes, "float4_e2m1fn"), "scales": storage.from_codes(sb, "float8_e4m3fn"),
            "tensor_scale": ts, "axis": 1, "out_dtype": out_dtype}


_ELEM_OF_TYPE = {t: e for e, t in MXO.STORAGE.items()}
FAMILY = MXFakeQuant()
