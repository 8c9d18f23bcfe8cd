"""The MX family's semantics and ops (issue 25): one ``Rules`` block per reference, ``ocp`` (the formats' own texts:
OCP MX v1.0, and NVIDIA's recipe for NVFP4) and ``torchao`` (torchao 0.18.0's bits), and the OpSpecs of
``qdq_compiler.mx``. The family's mechanics (attributes, checks, layouts, samples, the oracle's dispatch) are in
ops/mx_fake_quant.py; this module registers what each semantics answers."""
from __future__ import annotations

import numpy as np

from . import mx_numerics as MXN
from .mx_fake_quant import (AXIS_ATTR, BLOCK_SIZE, DTYPES, ELEM, ELEM_TYPE, FAMILY, OUT_DTYPE, RAGGED, ROUNDING,
                            SCALE_RULE, SEED, Variant, _oracle, check)
from .rules import Rules
from .spec import BLOCKS, RANGE, SCALAR, OpSpec, Output, attr, data, fixed, result


def _float32_only(spec, dtype):
    return ("semantics='torchao' takes float32 here (torchao's bfloat16 NaN blocks are ATen's 0xFFFF); "
            "semantics='ocp' takes float16 and bfloat16") if dtype != "float32" else ""


# How the two references differ, as the template reads it (k.arith): torchao's byte 0 divides by 2^-126 (OCP:
# 2^-127), its RCEIL takes a float32 log2 (OCP: exact), an infinity's block keeps a finite scale (OCP: NaN), a NaN
# block's elements are the NaNs its arithmetic happens to give (OCP: the canonical NaN), and NVFP4 is torchao's
# two-level recipe (2^-6 clamp, reciprocal multiplier) or NVIDIA's (templates/nvfp4_blocks.mlir.j2).
TORCHAO_ARITH = {"byte0_exp": 126, "rceil_log2_f32": True, "nonfinite_block_nan": False,
                 "canonical_nan_blocks": False, "nvfp4_recipe": "torchao"}
OCP_ARITH = {"byte0_exp": 127, "rceil_log2_f32": False, "nonfinite_block_nan": True, "canonical_nan_blocks": True,
             "nvfp4_recipe": "nvidia"}


def _keys(spec, attrs, dtype) -> list:
    """Stochastic rounding's key: the seed's low and high words, as i32 runtime parameters."""
    if attrs.get("rounding") != "stochastic":
        return []
    seed = int(attrs["seed"]) % 2 ** 64
    return [(f"key{i}", "i32", np.asarray((seed >> (32 * i)) & 0xFFFFFFFF, np.uint32).view(np.int32)[()])
            for i in range(2)]


def _nvfp4_words(c, spec, attrs):
    """NVFP4 through MXQuantize: its stored form has a third part."""
    if attrs.get("elem") == "nvfp4" and spec.variant.kind == "quantize" and not spec.variant.nvfp4:
        c.fail("elem='nvfp4' has a float32 tensor scale besides its E4M3 block scales: mx.nvfp4_quantize(x) returns "
               "(elements, scales, tensor_scale)", "elem")


def _torchao_check(c, spec, arrays, attrs):
    if attrs.get("rounding", "nearest") != "nearest":
        c.fail("semantics='torchao': torchao 0.18.0 rounds to nearest only; rounding='stochastic' is under "
               "semantics='ocp'", "rounding")
    _nvfp4_words(c, spec, attrs)
    if attrs["elem"] not in MXN.ELEMS and attrs["elem"] != "nvfp4":
        c.fail(f"semantics='torchao': torchao 0.18.0 has no {attrs['elem']} (its to_mx asserts 'unsupported'); "
               f"allowed: {', '.join(MXN.ELEMS)}, nvfp4 (semantics='ocp' takes {attrs['elem']})", "elem")
    check(c, spec, arrays, attrs)


def _ocp_check(c, spec, arrays, attrs):
    _nvfp4_words(c, spec, attrs)
    check(c, spec, arrays, attrs)


def _torchao_has(spec, attrs) -> bool:
    return attrs.get("elem", ELEM.default) in (*MXN.ELEMS, "nvfp4") and attrs.get("rounding", "nearest") == "nearest"


def _torchao_unsupported(spec) -> str:
    if spec.variant.nvfp4:
        return ("semantics='torchao': NVFP4's stored form is NVIDIA's recipe here (semantics='ocp'); torchao's "
                "fake_quantize of elem='nvfp4' is here")
    if spec.variant.kind == "gradient":
        return ("semantics='torchao': torchao 0.18.0 defines no gradient of its MX conversion here; semantics='ocp' "
                "has fake_quantize_gradient (clipped straight-through)")
    return "" if spec.variant.kind != "dequantize" else (
        "semantics='torchao': dequantize is the specification's here (torchao's to_dtype is the same product but for "
        "the bits of a NaN and, NVFP4, the order of its roundings); semantics='ocp' has it")


FAMILY.rules_by_semantics = {
    "ocp": Rules(_oracle("ocp"), "mx_fake_quant.mlir.j2", DTYPES, check=_ocp_check, arithmetic=OCP_ARITH,
                 params=_keys, contraction_free=True, short_block_reductions=True),
    "torchao": Rules(_oracle("torchao"), "mx_fake_quant.mlir.j2", ("float32",), check=_torchao_check,
                     dtype_hint=_float32_only, arithmetic=TORCHAO_ARITH, answers_variant=_torchao_has,
                     unsupported=_torchao_unsupported, contraction_free=True, short_block_reductions=True),
}

_DEFAULTS = (("block_size", None), ("axis", -1), ("scale_rule", "floor"), ("rounding", "nearest"), ("seed", 0))
# NVFP4's stored form: its own two ops (three parts; E4M3 block scales), elem and block_size fixed
NVFP4_ELEM = attr("elem", str, "nvfp4", ("nvfp4",), doc="the element format: NVFP4 (FP4 E2M1)")
NVFP4_BLOCK = attr("block_size", int, 16, (16,), doc="NVFP4's blocks of 16")
SPECS = (
    OpSpec("MXFakeQuantize", FAMILY, (data("x"),), (ELEM, BLOCK_SIZE, AXIS_ATTR, SCALE_RULE, ROUNDING, SEED, RAGGED),
           (result("y"),), DTYPES,
           "x quantized to an MX format block by block along axis (one E8M0 scale per block, chosen by scale_rule; "
           "NVFP4: an E4M3 scale per 16 and a tensor scale) and dequantized, in x's type.", namespace="mx",
           signature=("x", "elem", "block_size", "axis", "scale_rule", "rounding", "seed"),
           public_defaults=_DEFAULTS, public_name="fake_quantize",
           variant=Variant()),
    OpSpec("MXQuantize", FAMILY, (data("x"),), (ELEM, BLOCK_SIZE, AXIS_ATTR, SCALE_RULE, ROUNDING, SEED, ELEM_TYPE,
                                                 RAGGED),
           (result("elements", "attr:elem_type"), Output("scales", BLOCKS, "float8_e8m0fnu")), DTYPES,
           "x in an MX format: (elements, scales), the element codes (ml_dtypes, one per byte; MXINT8: int8) and one "
           "float8_e8m0fnu scale per block along axis, chosen by scale_rule.", namespace="mx",
           signature=("x", "elem", "block_size", "axis", "scale_rule", "rounding", "seed"),
           public_defaults=_DEFAULTS, public_name="quantize",
           variant=Variant("quantize")),
    OpSpec("MXDequantize", FAMILY, (fixed("elements", "data", "attr:elem_type"),
                                    fixed("scales", "scale", "float8_e8m0fnu", RANGE, 1.0)),
           (ELEM, BLOCK_SIZE, AXIS_ATTR, ELEM_TYPE, OUT_DTYPE, RAGGED), (result("y"),), DTYPES,
           "y = X * P: the elements (their type names the format) times their block's E8M0 scale, in out_dtype.",
           namespace="mx", signature=("elements", "scales", "block_size", "axis", "out_dtype"),
           public_defaults=(("block_size", 32), ("axis", -1), ("out_dtype", "float32")), public_name="dequantize",
           variant=Variant("dequantize")),
    OpSpec("MXFakeQuantizeGradient", FAMILY, (data("gradients", "grad"), data("x")),
           (ELEM, BLOCK_SIZE, AXIS_ATTR, SCALE_RULE, RAGGED), (result("backprops"),), DTYPES,
           "fake_quantize's clipped straight-through gradient: gradients where x lies within its block's representable "
           "range (|x| <= the largest element times X), 0 elsewhere and in a block whose scale is NaN.",
           namespace="mx", signature=("gradients", "x", "elem", "block_size", "axis", "scale_rule"),
           public_defaults=_DEFAULTS[:3], public_name="fake_quantize_gradient", gradient_of="MXFakeQuantize",
           variant=Variant("gradient")),
    OpSpec("NVFP4Quantize", FAMILY, (data("x"),), (NVFP4_ELEM, NVFP4_BLOCK, AXIS_ATTR, RAGGED),
           (result("elements", "float4_e2m1fn"), Output("scales", BLOCKS, "float8_e4m3fn"),
            Output("tensor_scale", SCALAR, "float32")), DTYPES,
           "x in NVFP4: (elements, scales, tensor_scale), the FP4 E2M1 codes (float4_e2m1fn), one float8_e4m3fn "
           "scale per 16 along axis and the float32 tensor scale; dequantized, (element * scale) * tensor_scale.",
           namespace="mx", signature=("x", "axis"), public_defaults=(("axis", -1),), public_name="nvfp4_quantize",
           variant=Variant("quantize", nvfp4=True)),
    OpSpec("NVFP4Dequantize", FAMILY, (fixed("elements", "data", "float4_e2m1fn"),
                                       fixed("scales", "scale", "float8_e4m3fn", RANGE, 1.0),
                                       fixed("tensor_scale", "scale", "float32", SCALAR, 1.0)),
           (NVFP4_ELEM, NVFP4_BLOCK, AXIS_ATTR, OUT_DTYPE, RAGGED), (result("y"),), DTYPES,
           "y = (element * scale) * tensor_scale, rounded once to out_dtype: NVFP4's stored form (nvfp4_quantize's) "
           "back.", namespace="mx", signature=("elements", "scales", "tensor_scale", "axis", "out_dtype"),
           public_defaults=(("axis", -1), ("out_dtype", "float32")), public_name="nvfp4_dequantize",
           variant=Variant("dequantize", nvfp4=True)),
)
