#!/usr/bin/env python3
"""Generate the end-to-end lit tests lit_tests/e2e/<target>/<Op>.test from the NumPy oracle.

Each test compiles one op configuration with `qdqc compile` (through the artifact cache, QDQ_CACHE_DIR)
and runs it with IREE's own `iree-run-module --expected_output=...`; the expected values are computed
here, once, by `qdq_compiler.oracle.raw_ops` (TF 2.21's CPU bits), `qdq_compiler.oracle.aten` (PyTorch 2.13's)
or `qdq_compiler.oracle.onnx_ops` (the onnx reference's; storage types as their codes in i8) and pasted into the
RUN lines. The
comparison is `--equality_mode=exact` (byte equality: the sign of a zero counts, so vmvx's roundeven
sign restore and the explicit FTZ on Vulkan are checked too), except for cases whose expected output
holds a NaN: those compare in approximate mode with zero tolerances (NaN == NaN, but -0 == 0).

    python lit_tests/tools/gen_e2e.py            # (re)write the files
    python lit_tests/tools/gen_e2e.py --check    # exit 1 if any file differs (lit: e2e/oracle_sync.test)

Edit CASES below, never the generated files.
"""
from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

import ml_dtypes

from qdq_compiler import ops as R
from qdq_compiler import storage
from qdq_compiler.oracle import aten as oracle_aten
from qdq_compiler.oracle import mx as oracle_mx
from qdq_compiler.oracle import onnx_ops as oracle_onnx
from qdq_compiler.oracle import raw_ops as oracle

ORACLES = {"tf": oracle, "aten": oracle_aten, "onnx": oracle_onnx, "mx": oracle_mx}   # each namespace's oracle

E2E_DIR = Path(__file__).resolve().parent.parent / "e2e"
TARGETS = ("cpu", "vmvx", "vulkan")
F32, F64 = np.float32, np.float64

# Ties of the 8-bit signed range [-1, 127/128]: scale = 128 exactly, so x = (2k+1)/256 gives v = k + 0.5.
T = 1.0 / 256
HI8 = 127.0 / 128
SUB = 1e-40  # a float32 subnormal: TF's CPU kernels (and so the oracle) flush it to zero


@dataclass
class Case:
    name: str
    what: str                        # one line: what this case pins down
    attrs: dict
    inputs: dict                     # input name -> numpy array (the op's dtype, or int32 for num_bits)
    shape: str                       # qdqc --shape for cpu and vmvx
    vulkan_shape: str | None = None  # static shape where Vulkan cannot do the dynamic form
    dtype: str = "f32"
    targets: tuple = TARGETS
    semantics: str | None = None     # whose answer, where not the op namespace's default (qdqc --semantics)
    public: dict | None = None       # arguments of the public (oracle) call where they differ from the program's
    #   inputs: aten's host-side conversions (LSQ's [1] float zero point, rounded to the program's int32)


def a32(*v):
    return np.array(v, F32)


def bits32(b: int):
    """The float32 with bit pattern `b`."""
    return np.array(b, np.uint32).view(F32)[()]


CASES: dict[str, list[Case]] = {
    "QuantizeAndDequantize": [
        Case("ties_clamp", "V1 attrs range [-1, 127/128] (scale 128): HALF_TO_EVEN ties incl. -0.5 -> -0, clamp",
             {"range_given": True, "input_min": -1.0, "input_max": HI8},
             {"input": a32(-3, -1, -3 * T, -T, -0.0, T, 3 * T, 5 * T, 0.3, HI8, 2)}, "?"),
    ],
    "QuantizeAndDequantizeV2": [
        Case("data_half_up", "range from the data (min -1, max 127/128), HALF_UP = floor(v + 0.5) at ties",
             {"round_mode": "HALF_UP"},
             {"input": a32(-1, -3 * T, -T, T, 3 * T, 5 * T, 0.5, HI8),
              "input_min": F32(0), "input_max": F32(0)}, "?"),
        Case("f64_given", "float64, given range [-1, 127/128], HALF_TO_EVEN ties and the clamp",
             {"range_given": True},
             {"input": np.array([-2, -T, T, 3 * T, 5 * T, 0.25, 1.5], F64),
              "input_min": F64(-1), "input_max": F64(HI8)}, "?", dtype="f64"),
        Case("nan_poisons_range", "a NaN in the data makes every output NaN (policy 5; Vulkan's min/max skip NaN)",
             {}, {"input": a32(-1, 0.25, np.nan, 0.5), "input_min": F32(0), "input_max": F32(0)}, "?"),
    ],
    "QuantizeAndDequantizeV3": [
        Case("signed_4bit", "num_bits as an int32 input (4): range [-1, 1] gives scale 7, lo re-derived",
             {}, {"input": a32(-2, -1, -0.5, -0.07, 0, 0.2, 0.5, 1.5),
                  "input_min": F32(-1), "input_max": F32(1), "num_bits": np.array(4, np.int32)}, "?"),
        Case("unsigned_negative_range", "unsigned, range below 0: TF's qmin * inv is -0, so every output is +0 (a folded +0 gives -0)",
             {"signed_input": False},
             {"input": a32(-3, -1.5, -1, 0, 0.5), "input_min": F32(-2), "input_max": F32(-1),
              "num_bits": np.array(8, np.int32)}, "?"),
    ],
    "QuantizeAndDequantizeV4": [
        Case("per_channel_data", "per-channel (axis 1 of 2x3x2) range from the data, HALF_TO_EVEN",
             {"axis": 1},
             {"input": np.array([[[-1, 0.3], [2, -4], [0.1, 0.2]],
                                 [[HI8, -T], [1, 3], [-0.05, 0.15]]], F32),
              "input_min": a32(0, 0, 0), "input_max": a32(0, 0, 0)}, "?x?x?", vulkan_shape="2x3x2"),
    ],
    "QuantizeAndDequantizeV4Grad": [
        Case("inclusive_mask", "gradient masked by min <= x <= max (inclusive); -6 * 0 = -0; subnormal g flushed",
             {}, {"gradients": a32(1, 2, 3, SUB, 5, -6),
                  "input": a32(-1.5, -1, 0, 0.5, 1, np.nextafter(F32(1), F32(2))),
                  "input_min": F32(-1), "input_max": F32(1)}, "?"),
    ],
    "FakeQuantWithMinMaxArgs": [
        Case("nudged_8bit", "min -1, max 1, 8 bits: nudged range, * inv, floor(v + 0.5), clamp to the nudged range",
             {"min": -1.0, "max": 1.0},
             {"inputs": a32(-2, -1, -0.9960785, -0.5, -0.0, 0.25, 0.5, 0.7, 1.0039216, 1.5)}, "?"),
    ],
    "FakeQuantWithMinMaxArgsGradient": [
        Case("inclusive_nudged_mask", "mask nudged_min <= x <= nudged_max, inclusive: x at both exact nudged bounds and one ulp above",
             {"min": -1.0, "max": 1.0},
             {"gradients": a32(1, 2, 3, 4, 5, -6, SUB),
              "inputs": a32(-1, bits32(0xBF7EFF00), 0, bits32(0x3F808081), bits32(0x3F808082), 2, 0.5)}, "?"),
    ],
    "FakeQuantWithMinMaxVars": [
        Case("nudged_divide", "min/max tensors [-1, 1], 8 bits: on-device nudge, divide by the scale",
             {}, {"inputs": a32(-2, -0.9960785, -0.5, 0, 0.25, 0.5, 0.7, 1.5),
                  "min": F32(-1), "max": F32(1)}, "?"),
        Case("narrow_4bit", "4 bits, narrow range, min -0.3 max 2.1 (zero point rounded half away from zero)",
             {"num_bits": 4, "narrow_range": True},
             {"inputs": a32(-1, -0.3, 0, 0.1, 0.4, 1, 1.55, 2.1, 3), "min": F32(-0.3), "max": F32(2.1)}, "?"),
    ],
    "FakeQuantWithMinMaxVarsGradient": [
        Case("masked_and_sums", "masked gradient plus the sums of the gradients below and above the range",
             {}, {"gradients": a32(1, 2, 4, 8, 16, 32, -64),
                  "inputs": a32(-3, -2, -1, 0, 0.5, 2, 5),
                  "min": F32(-1), "max": F32(1)}, "?"),
        Case("strict_edges", "inputs exactly at the nudged ends count neither below nor above (strict compares)",
             {}, {"gradients": a32(1, 2, 4, 8, 16, 32),
                  "inputs": a32(-1, 0, 0, 1, 2.55, 3),
                  "min": F32(0), "max": F32(2.55)}, "?"),
    ],
    "FakeQuantWithMinMaxVarsPerChannel": [
        Case("three_channels", "per-channel nudge along the last dim (min == max == 0 channel gives zeros)",
             {}, {"inputs": np.array([[-2, -1, 0.5], [0.3, 1.7, 0.25], [1, 5, -0.1]], F32),
                  "min": a32(-1, -2, 0), "max": a32(1, 2, 0)}, "?x?", vulkan_shape="3x3"),
    ],
    # PyTorch's aten ops (semantics torch-cpu): oracle.aten's answers, PyTorch 2.13's bits.
    "fake_quantize_per_tensor_affine": [
        Case("ties_nan_inf", "scale 0.25, zero point 3, [-8, 7]: nearbyint ties to even before adding the zero "
             "point; NaN takes quant_min's value, +inf quant_max's (the clamp in floating point)",
             {"quant_min": -8, "quant_max": 7},
             {"input": a32(-2.5, -0.375, -0.125, -0.0, 0.125, 0.375, 0.625, 1.1, 9, np.nan, np.inf, -np.inf),
              "scale": F32(0.25), "zero_point": np.array(3, np.int32)}, "?"),
    ],
    "fake_quantize_per_tensor_affine_cachemask": [
        Case("mask_i8", "the bool mask (i8 at the boundary): the level zp + nearbyint(x / scale) inside [0, 15]",
             {"quant_min": 0, "quant_max": 15},
             {"input": a32(-1, -0.55, -0.45, 0, 1.2, 1.55, 1.65, 3, np.nan),
              "scale": F32(0.1), "zero_point": np.array(5, np.int32)}, "?"),
    ],
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams": [
        Case("disabled", "fake_quant_enabled = 0: the input itself and a mask of ones",
             {"quant_min": -128, "quant_max": 127},
             {"input": a32(-3.3, -0.0, 0.04, 7.77), "scale": F32(0.5), "zero_point": np.array(1, np.int32),
              "fake_quant_enabled": np.array(0, np.int32)}, "?"),
    ],
    "fake_quantize_per_tensor_affine_cachemask_backward": [
        Case("select_and_times_zero", "grad where the mask is set (a subnormal kept: no multiply, no flush), "
             "grad * 0 where it is not (-6 * 0 = -0)",
             {}, {"grad": a32(1, SUB, -6, 2.5, -SUB), "mask": np.array([1, 1, 0, 0, 0], np.bool_)}, "?"),
    ],
    "fake_quantize_per_channel_affine": [
        Case("int_zero_points", "axis 1 of 2x3x2, int32 zero points: NaN and inf become INT64_MIN, so quant_min's value",
             {"axis": 1, "quant_min": -8, "quant_max": 7},
             {"input": np.array([[[-1, 0.3], [np.inf, -4], [0.1, 0.25]], [[np.nan, -0.05], [1, 3], [-0.05, 9]]], F32),
              "scale": a32(0.1, 0.5, 0.25), "zero_point": np.array([0, 2, -3], np.int32)}, "?x?x?",
             vulkan_shape="2x3x2"),
        Case("float_zero_point_fma", "float32 zero points: lrintf(fma(x, 1/scale, zp)), which the unfused "
             "x * inv + zp rounds to the other integer here; a -0 level is +0 (lavapipe folds -0 + 0)",
             {"axis": 1, "quant_min": -128, "quant_max": 127, "zero_point_dtype": "float32"},
             {"input": np.array([[-19.644527, -2.857219, -0.01]], F32),
              "scale": a32(0.47483823, 0.23221396, 0.3), "zero_point": a32(-1.1290113, -2.1957498, 0.0)}, "?x?",
             vulkan_shape="1x3", targets=("cpu", "vulkan")),   # vmvx: a reported gap (no f64 -> f32)
    ],
    "fake_quantize_per_channel_affine_cachemask": [
        Case("mask", "per-channel mask along axis 0 of 3x2, int32 zero points",
             {"axis": 0, "quant_min": 0, "quant_max": 3},
             {"input": np.array([[-0.3, 0.35], [0.2, 2.0], [1.0, -1.0]], F32),
              "scale": a32(0.1, 0.5, 1.0), "zero_point": np.array([1, 0, 2], np.int32)}, "?x?", vulkan_shape="3x2"),
    ],
    "fake_quantize_per_channel_affine_cachemask_backward": [
        Case("select_and_times_zero", "the per-channel op's backward: the same grad * mask",
             {}, {"grad": a32(-1, SUB, 3, -SUB), "mask": np.array([0, 1, 1, 0], np.bool_)}, "?"),
    ],
    "_fake_quantize_learnable_per_tensor_affine": [
        Case("rounded_zero_point", "LSQ forward: the float zero point 2.5 rounds half to even (2) on the host, "
             "then the per-tensor kernel", {"quant_min": -8, "quant_max": 7},
             {"input": a32(-2, -0.375, 0.125, 0.375, 1.5, np.nan), "scale": F32(0.25),
              "zero_point": np.array(2, np.int32)}, "?",
             public={"scale": a32(0.25), "zero_point": a32(2.5)}),
    ],
    "_fake_quantize_learnable_per_channel_affine": [
        Case("per_channel", "LSQ per-channel forward, axis 0 of 2x3 (zero points rounded to int32 on the host)",
             {"axis": 0, "quant_min": 0, "quant_max": 15},
             {"input": np.array([[-1, 0.3, 2], [0.75, 5, -0.25]], F32), "scale": a32(0.5, 0.25),
              "zero_point": np.array([2, 0], np.int32)}, "?x?", vulkan_shape="2x3",
             public={"zero_point": a32(2.5, -0.4)}),   # half to even: 2 (then clamped to [0, 15]: 2), -0 -> 0
    ],
    "_fake_quantize_learnable_per_tensor_affine_backward": [
        Case("lsq_gradients", "dX masked; dScale from fma(xq - zp, scale, -x) in range, (qmin|qmax - zp) outside; "
             "dZeroPoint -dY * scale outside; sums of exact terms (any order gives these bits)",
             {"quant_min": -8, "quant_max": 7, "grad_factor": 0.5},
             {"grad": a32(1, 2, -4, 8, 0.5, SUB), "input": a32(-3, -0.5, 0.25, 0.75, 2.5, 1),
              "scale": F32(0.25), "zero_point": F32(1)}, "?",
             public={"scale": a32(0.25), "zero_point": a32(0.7)}),   # trunc(0.7 + 0.5): 1
    ],
    "_fake_quantize_learnable_per_channel_affine_backward": [
        Case("lsq_gradients", "per-channel along axis 1 of 2x2: per-channel sums of exact terms",
             {"axis": 1, "quant_min": -8, "quant_max": 7, "grad_factor": 1.0},
             {"grad": np.array([[1, 2], [-4, 8]], F32), "input": np.array([[-3, 0.25], [0.5, 9]], F32),
              "scale": a32(0.25, 0.5), "zero_point": a32(1, 0)}, "?x?", vulkan_shape="2x2"),
    ],
    "fused_moving_avg_obs_fake_quant": [
        Case("first_call", "a FakeQuantize module's first call: the running range (inf, -inf) becomes the batch's "
             "(-1.3, 2.6); FBGEMM's qparams for [0, 255]: scale (float)(3.9 / 255), zero point 85 from the end whose "
             "error is smaller; then the per-tensor kernel",
             {"quant_min": 0, "quant_max": 255, "ch_axis": 0},
             {"input": a32(-1.3, -0.35, 0.0, 0.51, 1.2, 2.6), "observer_on": np.array(1, np.int32),
              "fake_quant_on": np.array(1, np.int32), "running_min": F32(np.inf), "running_max": F32(-np.inf),
              "scale": F32(1.0), "zero_point": np.array(0, np.int32), "averaging_const": F32(0.01)}, "?"),
        Case("per_row_symmetric", "per row (dim 0) of 2x3, symmetric: the moving average r + 0.5 * (cur - r) in "
             "float32; a row straddling 0 gets the middle zero point, a row of positives min 0 and FBGEMM's range",
             {"quant_min": -128, "quant_max": 127, "ch_axis": 0, "per_row_fake_quant": True, "symmetric_quant": True},
             {"input": np.array([[-2.0, 0.3, 1.0], [0.25, 0.5, 4.0]], F32), "observer_on": np.array(1, np.int32),
              "fake_quant_on": np.array(1, np.int32), "running_min": a32(-1.0, 0.5), "running_max": a32(1.0, 3.0),
              "scale": a32(1.0, 1.0), "zero_point": np.array([0, 0], np.int32), "averaging_const": F32(0.5)},
             "?x?", vulkan_shape="2x3"),
    ],
    # ONNX's Q/DQ (semantics onnx): the onnx reference's answers; storage types cross as their codes in i8.
    "QuantizeLinear": [
        Case("f8_ties", "float8_e4m3fn, scale 1, no saturation: ties to even (1.0625 -> 1, 1.1875 -> 1.25, 464 -> "
             "448, 3 * 2^-10 -> 2^-8 among the subnormals), 500 beyond the largest gives NaN; -0, NaN, a float32 "
             "subnormal (flushed on cpu and vmvx: the same code)",
             {"output_dtype": "float8_e4m3fn", "saturate": 0},
             {"x": a32(1.0625, 1.1875, 464, 500, -0.0, np.nan, 2 ** -10, 3 * 2 ** -10, -3, 1e-45), "y_scale": F32(1),
              "y_zero_point": np.array(0, ml_dtypes.float8_e4m3fn)}, "?"),
        Case("f8_saturate", "the same with saturate=1: 500 and inf clip to 448", {"output_dtype": "float8_e4m3fn"},
             {"x": a32(1.0625, 1.1875, 464, 500, np.inf, -np.inf), "y_scale": F32(1),
              "y_zero_point": np.array(0, ml_dtypes.float8_e4m3fn)}, "?"),
        Case("int4_ties", "int4: rint ties to even, clipped to [-8, 7], written in the low nibble (-2 is 14); +inf "
             "saturates to 7 (the operator's text; the reference's x86 int32 cast gave -8), NaN gives -8 "
             "(onnxruntime's answer)", {"output_dtype": "int4"},
             {"x": a32(2.5, 3.5, -2.5, -0.5, 0.5, 7.4, -8.6, 100, np.inf, np.nan), "y_scale": F32(1),
              "y_zero_point": np.array(0, ml_dtypes.int4)}, "?"),
        Case("tiny_scale", "a subnormal scale (tiny_scale: the exact 2^32-scaled quotient on FTZ targets; the calls "
             "set it from the scale)", {"output_dtype": "uint8", "tiny_scale": True}, {"x": a32(1e-39, 3e-39, -1e-39, 0.0), "y_scale": F32(1e-40),
                                         "y_zero_point": np.array(7, np.uint8)}, "?"),
        Case("f16_scale", "a float16 scale beside float32 x (opset 23): NumPy promotes, so the quotient is float32's "
             "(23.992432 / 0.475 = 50.5 ties to 50; onnxruntime divides in float16 and gives 51); the scale crosses "
             "as float32", {"output_dtype": "int8", "scale_dtype": "float16"},
             {"x": a32(23.992432, 1.0, -3.3, 60.0), "y_scale": F32(np.float16(0.475)), "y_zero_point": np.array(0, np.int8)},
             "?", public={"y_scale": np.float16(0.475)}),
        Case("precision_f16", "precision=FLOAT16 (opset 23): x and the scale rounded to float16 (the scale on the "
             "host), the quotient too", {"output_dtype": "int8", "precision": "float16", "scale_dtype": "float16"},
             {"x": a32(12.34567, -7.654321, 30.1, 0.15, 38.1), "y_scale": F32(np.float16(0.3)),
              "y_zero_point": np.array(0, np.int8)}, "?", public={"y_scale": F32(0.3), "precision": 10}),
    ],
    "DequantizeLinear": [
        Case("int4_axis", "int4 codes sign-extended from the nibble, minus the zero point, times the scale, per axis",
             {"x_dtype": "int4", "granularity": "axis", "axis": 1},
             {"x": np.array([[0, 1, 7], [8, 15, 9]], np.int8).astype(ml_dtypes.int4), "x_scale": a32(0.5, 0.25, 2),
              "x_zero_point": np.array([1, -8, 0], np.int8).astype(ml_dtypes.int4)}, "?x?", vulkan_shape="2x3"),
        Case("f8", "float8_e4m3fn decoded exactly (0x7F NaN, 0x80 -0, 0x01 the smallest subnormal); its zero point "
             "ignored", {"x_dtype": "float8_e4m3fn"},
             {"x": np.array([0x38, 0x7E, 0x7F, 0x80, 0x01, 0xFE], np.uint8).view(ml_dtypes.float8_e4m3fn),
              "x_scale": F32(2), "x_zero_point": np.array(0, ml_dtypes.float8_e4m3fn)}, "?"),
        Case("int32", "int32 data (a bias): float32(x), ties to even beyond 2^24, times the scale; no zero point",
             {"x_dtype": "int32"}, {"x": np.array([1, 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24) - 1, 2 ** 31 - 1, -2 ** 31,
                                                    50331651], np.int32), "x_scale": F32(0.5),
                                    "x_zero_point": np.array(0, np.int32)}, "?"),
        Case("e8m0_axis", "float8_e8m0fnu scales (opset 24) per axis, crossing as float32; output_dtype FLOAT",
             {"x_dtype": "int8", "granularity": "axis", "axis": 1, "scale_dtype": "float8_e8m0fnu"},
             {"x": np.array([[1, -2, 127], [-128, 3, 0]], np.int8), "x_scale": a32(0.25, 4, 2.0 ** -20),
              "x_zero_point": np.array([0, 1, -1], np.int8)}, "?x?", vulkan_shape="2x3",
             public={"x_scale": np.array([0.25, 4, 2.0 ** -20], ml_dtypes.float8_e8m0fnu), "output_dtype": 1}),
    ],
    # The block-scaled formats: oracle.mx's answers under OCP v1.0's text (the default) and torchao 0.18.0's bits.
    "MXFakeQuantize": [
        Case("ocp_byte0_inf", "OCP v1.0, MXFP8 E4M3, floor: row 0 below 2^-126 (byte 0): X = 2^-127 both ways, so "
             "3e-39 comes back to E4M3's precision (torchao halves it); row 1 holds +inf: no finite amax, the scale "
             "is NaN and every element of the block NaN",
             {"elem": "mxfp8_e4m3", "scale_rule": "floor", "axis": 1},
             {"x": np.concatenate([a32(3e-39, -1e-39, 5e-40, 1e-45, -0.0, *np.linspace(-2e-39, 2e-39, 27)),
                                   a32(np.inf, 1, -2, *np.linspace(-1, 1, 29))]).reshape(2, 32)}, "?x?"),
        Case("ocp_rceil_exact", "OCP, MXFP8 E4M3, rceil exactly: amax one ulp above 448 * 2^20 needs 2^21 (torchao's "
             "float32 log2 says 2^20 and clamps it to 448 * 2^20); amax 448 * 2^-3 exactly gives 2^-3",
             {"elem": "mxfp8_e4m3", "scale_rule": "rceil", "axis": 1},
             {"x": np.concatenate([a32(bits32(0x4DE00001), 3e8, -1e8, 2.5e7, *np.linspace(-4e8, 4e8, 28)),
                                   a32(56, -55, 1.1, 0.3, *np.linspace(-50, 50, 28))]).reshape(2, 32)}, "?x?"),
        Case("ocp_mxint8", "OCP, MXINT8 (n * 2^-6, emax 0), floor: row 0 X = 2^0, 1.99 -> 127/64 and -1.999 -> -127/64 "
             "(clamped, never -2), 3/128 -> 2/64 and 1/128 -> 0 (ties to even); row 1 X = 2^6, -77.7 -> -78",
             {"elem": "mxint8", "scale_rule": "floor", "axis": 1},
             {"x": np.concatenate([a32(1.5, 1.99, 1 / 128, 3 / 128, -1.999, -0.0, *np.linspace(-1, 1, 26)),
                                   a32(100, -77.7, 0.3, *np.linspace(-64, 64, 29))]).reshape(2, 32)}, "?x?"),
        Case("ocp_stochastic", "OCP, MXFP4 E2M1, floor, stochastic rounding with seed 2^64 - 1 (the key's two words "
             "baked): row 0's amax 6 (X = 2^0), each 0.3 to 0 or 0.5 and each 1.25 to 1 or 1.5 by its Threefry word "
             "(its flat index the counter); 6, 3 and -0 stay",
             {"elem": "mxfp4_e2m1", "scale_rule": "floor", "axis": 1, "rounding": "stochastic",
              "seed": 2 ** 64 - 1},
             {"x": np.concatenate([a32(6, 3, -0.0, *([0.3, 1.25] * 14), -0.3),
                                   a32(*np.linspace(-1, 1, 32))]).reshape(2, 32)}, "?x?"),
        Case("e4m3_floor", "torchao, MXFP8 E4M3, OCP's floor, blocks of 32 along the last axis: row 0's amax 480 gives "
             "byte 127 (2^0) and clamps to 448, 1.0625 ties to 1; row 1 below 2^-126 (byte 0): divided by 2^-126, "
             "multiplied back by 2^-127 (torchao: half its value), subnormal x and results built from their bits",
             {"elem": "mxfp8_e4m3", "scale_rule": "floor", "axis": 1},
             {"x": np.concatenate([a32(480, -160, 72, 1.0625, -0.0, 3, -7.25, 0.0046875, *np.linspace(-9, 9, 24)),
                                   a32(3e-39, -1e-39, 5e-40, 1e-45, -0.0, *np.linspace(-2e-39, 2e-39, 27))]
                                  ).reshape(2, 32)}, "?x?", semantics="torchao"),
        Case("e2m1_rceil_inf", "torchao, MXFP4, RCEIL: row 0's amax 7 gives d = 7/6, byte 128 (2^1): 7 -> 8, 5 -> 4, 1.5 "
             "-> 2 (ties to even); row 1 holds +inf: byte 254, x * 2^-127 (as 2^-64 * 2^-63, exact), inf saturates "
             "to 6 and comes back inf, 2^127 as itself, 3e38 as 2 * 2^127 = inf, the rest as zeros",
             {"elem": "mxfp4_e2m1", "scale_rule": "rceil", "axis": 1},
             {"x": np.concatenate([a32(7, 5, -3, 1.5, 0.75, -0.0, *np.linspace(-6, 6, 26)),
                                   a32(np.inf, 2.0 ** 127, -2.0 ** 126, 3.0e38, 1, -0.0, *np.linspace(-1, 1, 26))]
                                  ).reshape(2, 32)}, "?x?", semantics="torchao"),
        Case("nvfp4_nvidia", "NVIDIA's NVFP4 recipe (ocp): amax 24 gives s_enc = 2688 / 24 = 112, s_dec = 1 / 112 "
             "(rounded); row 0's scale e4m3(24 / 6 * 112) = 448, row 1's e4m3(0.75 / 6 * 112) = 14; x times 1 / (scale "
             "* s_dec) to FP4, back as (P * scale) * s_dec (torchao rounds pts * scale first)",
             {"elem": "nvfp4", "block_size": 16, "axis": 1},
             {"x": np.stack([a32(24, -10, 7, 3.5, 0.3, -0.0, *np.linspace(-20, 20, 10)),
                             a32(0.75, -0.5, 0.1, 0.2, *np.linspace(-0.7, 0.7, 12))])}, "?x?"),
        Case("nvfp4_two_level", "torchao, NVFP4: amax 24 makes pts = 24 / 2688; row 0's block scale 448 (E4M3), row 1's "
             "amax 0.75 gives 0.75 / 6 / pts = 14 exactly; x times (1 / pts) / scale to FP4 (3.5 ties to 4), back times "
             "pts * scale",
             {"elem": "nvfp4", "block_size": 16, "axis": 1},
             {"x": np.stack([a32(24, -10, 7, 3.5, 0.3, -0.0, *np.linspace(-20, 20, 10)),
                             a32(0.75, -0.5, 0.1, 0.2, *np.linspace(-0.7, 0.7, 12))])}, "?x?", semantics="torchao"),
        Case("e3m2_even_ragged_middle", "torchao, MXFP6 E3M2, even, blocks of 32 along the middle axis of 1x36x2 (a block of "
             "4 at the end, its own scale): amax 30 rounds to 32 (a carry: byte 128); a NaN makes its block NaN",
             {"elem": "mxfp6_e3m2", "scale_rule": "even", "axis": 1, "ragged": True},
             {"x": np.stack([np.concatenate([a32(30, -29, 0.3, 1e-3), np.linspace(-20, 20, 28, dtype=F32),
                                             a32(0.5, -0.25, 1.75, 0.1)]),
                             np.concatenate([a32(1, 2, 3, 4), np.linspace(-1, 1, 28, dtype=F32),
                                             a32(0.5, np.nan, 1.75, 0.1)])], axis=1)[None]}, "?x?x?",
             semantics="torchao"),
    ],
    "MXQuantize": [
        Case("ocp_e2m1_codes", "OCP, MXFP4 E2M1, floor: row 0's amax 7 gives X = 2^0 (byte 127): 7 saturates to code 7, "
             "-3 is 0xD, 0.25 ties to 0 and 0.75 to 1.0 (code 2), -0 is 0x8; row 1 below 2^-126: byte 0 (X = 2^-127), "
             "codes from x's bits",
             {"elem": "mxfp4_e2m1", "scale_rule": "floor", "axis": 1},
             {"x": np.concatenate([a32(7, -3, 0.25, 0.75, -0.0, *np.linspace(-6, 6, 27)),
                                   a32(3e-39, -1e-39, 5e-40, 1e-45, -0.0, *np.linspace(-2e-39, 2e-39, 27))]
                                  ).reshape(2, 32)}, "?x?"),
        Case("ocp_e5m2_rceil_ragged", "OCP, MXFP8 E5M2, rceil, blocks of 32 along the middle axis of 1x33x2 (a block of "
             "1 at the end, its own scale); a NaN makes its block's scale 255 and its codes 0",
             {"elem": "mxfp8_e5m2", "scale_rule": "rceil", "axis": 1, "ragged": True},
             {"x": np.stack([np.concatenate([a32(60000, -1, 2.5e-5, 3), np.linspace(-9, 9, 28, dtype=F32), a32(-0.5)]),
                             np.concatenate([a32(np.nan, 2, 3, 4), np.linspace(-1, 1, 28, dtype=F32), a32(1e30)])],
                            axis=1)[None]}, "?x?x?"),
    ],
    "MXDequantize": [
        Case("ocp_e4m3_specials", "OCP, MXFP8 E4M3: 0x38 (1.0) times 2^0; the NaN codes 0x7F and 0xFF give 0x7FC00000; "
             "row 1 at byte 0: 1.0 * 2^-127, a float32 subnormal kept (not flushed); row 2's scale is NaN (255)",
             {"elem": "mxfp8_e4m3", "axis": 1},
             {"elements": np.array([[0x38, 0x7F, 0xFF, 0xB8] + [0x30] * 28, [0x38, 0x01, 0x81, 0x7E] + [0] * 28,
                                    [0x38] * 32], np.uint8).view(ml_dtypes.float8_e4m3fn),
              "scales": np.array([[127], [0], [255]], np.uint8).view(ml_dtypes.float8_e8m0fnu)}, "?x?"),
        Case("ocp_mxint8_ragged", "OCP, MXINT8, blocks of 32 along the last axis of 2x34 (a block of 2 at the end): "
             "-128 is -2.0 times X, 127 is 127/64; byte 254 is 2^127 (127 * 2^121 is finite)",
             {"elem": "mxint8", "axis": 1, "ragged": True},
             {"elements": np.array([[-128, 127, 1, -1] + [5] * 30, [64] * 34], np.int8),
              "scales": np.array([[127, 254], [120, 0]], np.uint8).view(ml_dtypes.float8_e8m0fnu)}, "?x?"),
    ],
    "NVFP4Quantize": [
        Case("nvidia_recipe", "NVIDIA's NVFP4 recipe (the default, ocp): the tensor's amax 2688 gives s_enc = s_dec = 1; "
             "block 0's scale 448 (0x7E): 1000 -> 2.23 -> code 4 (2), -0 -> 0x8, 1.4 -> 0; block 1's amax 0.01 gives "
             "0.00167, an E4M3 subnormal: 2^-9 (0x01), 0.01 -> 5.12 -> 6 (code 7), -0.004 -> -2 (0xC); the tensor "
             "scale is the third result",
             {"axis": 1},
             {"x": np.stack([a32(2688, 1000, -0.0, 1.4, -12.5, *np.linspace(-9, 9, 11), 0.01, -0.004,
                                 *np.linspace(-0.005, 0.005, 14))])}, "?x?"),
        Case("nvidia_zeros", "a tensor of zeros: signed zero codes, block scales 0, the tensor scale 1 / FLT_MAX = 2^-128 "
             "(0x00200000, a subnormal made from its bits: the CPU targets flush the quotient)",
             {"axis": 1}, {"x": np.stack([np.zeros(16, F32), -np.zeros(16, F32)])}, "?x?"),
    ],
    "NVFP4Dequantize": [
        Case("nvidia_specials", "(P * S) * s_dec: 0x2 (1.0) times 448 (0x7E) times 0.5, 0xF (-6) times it, 0x8 (-0); "
             "row 1's scale 0x01 (2^-9) and 0x81 (-2^-9); row 2's 0x7F is NaN: every element 0x7FC00000",
             {"axis": 1},
             {"elements": np.array([[0x2, 0xF, 0x8, 0x7] + [0x1] * 12, [0x7, 0x3] + [0x2] * 14, [0x2] * 16],
                                   np.uint8).view(ml_dtypes.float4_e2m1fn),
              "scales": np.array([[0x7E], [0x01], [0x7F]], np.uint8).view(ml_dtypes.float8_e4m3fn),
              "tensor_scale": np.array(0.5, F32)}, "?x?"),
    ],
    "MXFakeQuantizeGradient": [
        Case("nvidia_nvfp4_clipped", "NVFP4 under NVIDIA's recipe: dy where |x| <= (6 * S_b) * s_dec; amax 2688 gives "
             "s_enc = 1, block 0's scale 448 (2688 passes, though 2688 * fl(1 / 448) is an ulp above 6); block 1's "
             "amax 25.5 gives a scale of 4 (4.25 ties to even): 25.5 passes nothing, 24 and -3 pass",
             {"elem": "nvfp4", "block_size": 16, "axis": 1},
             {"gradients": np.arange(1, 33, dtype=F32).reshape(1, 32),
              "x": np.concatenate([a32(2688, -100), np.zeros(14, F32), a32(25.5, 24, -3), np.zeros(13, F32)])[None]},
             "?x?"),
        Case("ocp_clipped_ragged", "OCP, MXFP4 E2M1, floor, clipped straight-through along the last axis of 2x34 (a "
             "block of 2 at the end): row 0's amax 7 gives X = 1 and range 6, so 7 and -6.5 pass nothing, 6 and -0.1 "
             "pass dy (-0 kept); row 1's NaN block passes nothing; its last block (amax 3, X = 0.5, range 3) passes",
             {"elem": "mxfp4_e2m1", "scale_rule": "floor", "axis": 1, "ragged": True},
             {"gradients": np.stack([a32(-0.0, 2, 3, 4, *np.linspace(-1, 1, 30)), a32(*np.linspace(1, 2, 34))]),
              "x": np.stack([a32(6, 7, -6.5, -0.1, *np.linspace(-3, 3, 28), 3, -1),
                             a32(np.nan, *np.linspace(-1, 1, 31), 3, 0.2)])}, "?x?"),
    ],
    "QuantizeDequantizeLinear": [
        Case("uint8_blocks", "uint8 in blocks of 2 along axis 1 of 2x5 (a ragged last block): each block's scale "
             "and zero point", {"output_dtype": "uint8", "granularity": "block", "block_size": 2, "axis": 1},
             {"x": np.array([[0.3, -1.2, 2.5, 7.0, -0.26], [1.0, 1.5, -3.0, 0.75, 100]], F32),
              "y_scale": np.array([[0.5, 0.25, 0.1], [1.0, 0.5, 2.0]], F32),
              "y_zero_point": np.array([[3, 128, 0], [0, 10, 250]], np.uint8)}, "?x?", vulkan_shape="2x5"),
        Case("f8_ties", "float8_e4m3fn, scale 1, no saturation, rounded to the grid in one pass (round_float): ties "
             "to even (1.0625 -> 1, 1.1875 -> 1.25, 464 -> 448, 3 * 2^-10 -> 2^-8 among the subnormals), 500 beyond "
             "the largest gives NaN; -0, NaN, -3",
             {"output_dtype": "float8_e4m3fn", "saturate": 0},
             {"x": a32(1.0625, 1.1875, 464, 500, -0.0, np.nan, 2 ** -10, 3 * 2 ** -10, -3), "y_scale": F32(1),
              "y_zero_point": np.array(0, ml_dtypes.float8_e4m3fn)}, "?"),
    ],
    "FakeQuantWithMinMaxVarsPerChannelGradient": [
        Case("per_channel_sums", "per-channel mask and below/above sums over the leading dims; a subnormal "
             "gradient is flushed inside a range, copied unflushed in a min == max == 0 channel",
             {}, {"gradients": np.array([[1, 2, 4], [8, 16, 32], [SUB, 128, SUB], [512, 1024, -2048]], F32),
                  "inputs": np.array([[-3, 0, 3], [-1, 0.5, 1], [0, -5, 0.25], [2, 1, -0.25]], F32),
                  "min": a32(-1, -2, 0), "max": a32(1, 0.5, 0)}, "?x?", vulkan_shape="4x3"),
    ],
}


# -- formatting -----------------------------------------------------------------------------------------

def _nearest_is(s: str, v) -> bool:
    """True if `v` is the float of v's type nearest to the decimal `s` (what a correct strtof gives)."""
    t = type(v)
    exact = Fraction(s)
    lo, hi = np.nextafter(v, t(-np.inf)), np.nextafter(v, t(np.inf))
    d = abs(exact - Fraction(float(v)))
    return d < abs(exact - Fraction(float(lo))) and d < abs(exact - Fraction(float(hi)))


def fmt(v) -> str:
    """A decimal that parses back to exactly `v` with strtof/strtod and with (float)strtod."""
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "-0" if np.signbit(v) else "0"
    t = type(v)
    s = np.format_float_positional(v, unique=True, trim="-")
    if len(s) > 14:
        s = np.format_float_scientific(v, unique=True, trim="-")
    if t(float(s)) == v and _nearest_is(s, v):
        return s
    return repr(float(v))  # the exact value's shortest double form: exact for both parsers


def iree_value(a: np.ndarray) -> str:
    a = np.asarray(a)
    if a.dtype == np.bool_:   # a bool crosses the boundary as i8, 0 or 1
        a = a.astype(np.int8)
    if a.dtype.name in storage.TABLE and a.dtype.name not in ("float16", "bfloat16"):   # its code, as the program takes it
        a = storage.to_codes(a)
    etype = {np.dtype(F32): "f32", np.dtype(F64): "f64", np.dtype(np.int32): "i32", np.dtype(np.int8): "i8"}[a.dtype]
    dims = "".join(f"{d}x" for d in a.shape)
    vals = " ".join(str(int(x)) if a.dtype.kind == "i" else fmt(x) for x in a.reshape(-1))
    return f"{dims}{etype}={vals}"


def attr_args(attrs: dict) -> str:
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return float(v).hex() if float(F32(v)) != v or len(repr(v)) > 12 else repr(v)
        return str(v)
    return " ".join(f"--attr {k}={val(v)}" for k, v in attrs.items())


def _render_case(op: str, case: Case, target: str, idx: int) -> list[str]:
    spec = R.get(op)
    inputs = case.inputs
    public = {k: v for k, v in case.attrs.items() if spec.namespace == "tf" or k in spec.signature}
    sem = {"semantics": case.semantics} if case.semantics else {}
    result = getattr(ORACLES[spec.namespace], spec.function_name)(**{**inputs, **public, **(case.public or {}), **sem})
    outs = result if isinstance(result, tuple) else (result,)
    if not spec.inputs_of(R.RANGE):   # per-tensor range results are 0-d in the program (aten returns them as [1])
        outs = tuple(o.reshape(()) if r.layout == R.RANGE else o for o, r in zip(outs, spec.results))
    shape = case.vulkan_shape if (target == "vulkan" and case.vulkan_shape) else case.shape
    vmfb = f"%t.{case.name}.vmfb"
    compile_cmd = f"qdqc compile {op} {attr_args(case.attrs)}".rstrip()
    compile_cmd += f" --shape '{shape}'" if "?" in shape else f" --shape {shape}"
    compile_cmd += (f" --dtype {case.dtype}" if case.dtype != "f32" else "") + f" --target {target} -o {vmfb}"
    compile_cmd += f" --semantics {case.semantics}" if case.semantics else ""
    has_nan = any(np.isnan(np.asarray(o, np.float64)).any() for o in outs
                  if np.asarray(o).dtype.name not in storage.TABLE or np.asarray(o).dtype.name in ("float16", "bfloat16"))
    mode = ("--equality_mode=approximate --expected_f32_threshold=0 --expected_f64_threshold=0 --expected_rtol=0"
            if has_nan else "--equality_mode=exact")
    run = [f"iree-run-module %{target}_device --module={vmfb} --function={op}"]
    run += [f'--input="{iree_value(inputs[i.name])}"' for i in spec.inputs]
    run += [f'--expected_output="{iree_value(o)}"' for o in outs]
    run += [mode, "| FileCheck %s"]
    lines = [f"# Case {idx} ({case.name}): {case.what}."]
    lines.append(f"# RUN: {compile_cmd}")
    lines.append(f"# RUN: {' '.join(run[:1])} \\")
    for part in run[1:-1]:
        lines.append(f"# RUN:   {part} \\")
    lines.append(f"# RUN:   {run[-1]}")
    return lines


def render(op: str, target: str) -> str:
    header = [
        f"# GENERATED by lit_tests/tools/gen_e2e.py from the oracle ({ORACLES[R.get(op).namespace].__name__}); edit CASES there,",
        "# then run it to rewrite this file (e2e/oracle_sync.test fails while a file is stale).",
        f"# {op} on `{target}`: compiled with `qdqc compile` (baked attributes), run by iree-run-module, every",
        "# output compared with the oracle byte for byte (--equality_mode=exact: the sign of zero counts;",
        "# approximate with zero tolerances where a NaN is expected).",
    ]
    if target == "vulkan":
        header.append("# REQUIRES: vulkan")
    body = []
    for i, case in enumerate((c for c in CASES[op] if target in c.targets), 1):
        body.append("")
        body += _render_case(op, case, target, i)
    footer = ["", "# CHECK: [SUCCESS] all function outputs matched their expected values."]
    return "\n".join(header + body + footer) + "\n"


# Every op runs end to end on cpu; on vmvx and vulkan only the ops whose cases meet a quirk of that target
# (targets.Quirks), so that a target's file says why it exists. Every golden case runs on every target in
# pytest (tests/test_compiled_goldens.py), and `qdqc validate --targets all` runs the whole matrix.
QUIRK_TARGETS = {
    # vmvx's roundeven gives +0 for -0.5 (roundeven_drops_zero_sign): the ties case checks -0.5 -> -0.
    "QuantizeAndDequantize": ("cpu", "vmvx"),
    # the data range with a NaN (Vulkan's min/max skip NaN; bounded reductions on lavapipe), float64.
    "QuantizeAndDequantizeV2": TARGETS,
    # unsigned, range below 0: qmin * inv is -0, which vmvx folds to +0 from a constant (folds_mul_by_zero).
    "QuantizeAndDequantizeV3": TARGETS,
    # vmvx's ordered GE is true for NaN (ordered_ge_true_for_nan); the sums as reductions.
    "FakeQuantWithMinMaxVarsGradient": TARGETS,
    # a subnormal gradient flushed where the target keeps denormals (keeps_denormals: Vulkan).
    "FakeQuantWithMinMaxVarsPerChannelGradient": ("cpu", "vulkan"),
    # a kept subnormal gradient: a multiply by 1 would flush it on cpu and vmvx; grad * 0 from a runtime 0
    # (vmvx folds a product with a constant 0 to +0: folds_mul_by_zero).
    "fake_quantize_per_tensor_affine_cachemask_backward": TARGETS,
    # lavapipe folds -0 + 0 to -0 (the level's sign is cleared with integer ops); the FMA everywhere.
    "fake_quantize_per_channel_affine": TARGETS,
    # FBGEMM's double steps (vmvx: float64 through integer ops), the min/max reductions (Vulkan: bounded).
    "fused_moving_avg_obs_fake_quant": TARGETS,
    # the generated storage conversions on every target: FTZ (cpu, vmvx: the tiny-scale path) or not (Vulkan)
    "QuantizeLinear": TARGETS,
    "DequantizeLinear": TARGETS,
    # subnormal x and results built from bits (FTZ on cpu and vmvx), and a block reduction along the middle axis
    # behind a barrier on Vulkan (unfused_middle_reductions)
    "MXFakeQuantize": TARGETS,
    # the codes and scales cross as i8 containers; byte 0's subnormal products built from bits (FTZ on cpu, vmvx)
    "MXQuantize": TARGETS,
    "MXDequantize": TARGETS,
    "MXFakeQuantizeGradient": TARGETS,
    # NVFP4's zero tensor scale 2^-128 made from its bits (FTZ on cpu and vmvx; Vulkan keeps subnormals)
    "NVFP4Quantize": TARGETS,
    "NVFP4Dequantize": TARGETS,
}


def files() -> dict[Path, str]:
    assert set(CASES) == set(R.OPS), f"CASES must cover every op: missing {set(R.OPS) - set(CASES)}"
    return {E2E_DIR / target / f"{op}.test": render(op, target)
            for target in TARGETS for op in CASES if target in QUIRK_TARGETS.get(op, ("cpu",))}


def stale_files(wanted) -> list[Path]:
    """Generated op files on disk that CASES no longer asks for (the hand-written ones are not op names)."""
    return sorted(p for t in TARGETS for p in (E2E_DIR / t).glob("*.test") if p.stem in CASES and p not in wanted)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk; write nothing")
    args = ap.parse_args(argv)
    stale = []
    wanted = files()
    for path in stale_files(wanted):
        if args.check:
            stale.append(path)
            print(f"{path}: generated for an op and target CASES no longer covers")
        else:
            path.unlink()
            print(f"removed {path}")
    for path, text in wanted.items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if args.check:
            stale.append(path)
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       str(path), "regenerated", n=1))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"{len(stale)} generated e2e test(s) out of date with the oracle or CASES; "
              f"run: python lit_tests/tools/gen_e2e.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
