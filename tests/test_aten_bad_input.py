"""Bad input to PyTorch's fake-quant ops (``qdq_compiler.aten``; TF's ops are in test_bad_input.py).

Every bad input is a ``QDQError`` (a ``ValueError``; type and dtype problems are ``QDQTypeError``, also a
``TypeError``) raised before anything is compiled: the message starts with "<op>: ", names the argument
(``e.arg``), is one line, and is the same on target "oracle", "cpu" and "vmvx" (and in ``oracle.aten``). Where
PyTorch 2.13 refuses the same input, its words follow "(PyTorch: " (aten/src/ATen/native/quantized/
FakeQuantPer{Tensor,Channel}Affine.cpp, cpu/kernels/QuantizedOpKernels.cpp, c10's dimension wrapping and
``Scalar::to<T>``); where PyTorch computes, or refuses elsewhere (its Python argument parser), the message
quotes nothing PyTorch does not say. qdq_compiler's own limits (quantisation ranges beyond 2^24, zero points
beyond int32) quote no PyTorch words.

Not errors: a zero, negative, NaN or infinite scale (PyTorch divides by any scale) is a ``QDQWarning``, and
the compiled result is the oracle's, bit for bit; so is a float per-channel zero point outside the range
(PyTorch checks only integer ones).

Every aten op of the registry has cases, the learnable (LSQ) ops included. Cases marked xfail(strict) are
package bugs found while writing these tests: each reason says what is wrong.
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, QDQTypeError, QDQWarning, ops as registry
from qdq_compiler.numerics import bit_equal

from aten_names import FO, LC, LCB, LT, LTB, PC, PCB, PCM, PT, PTB, PTM, TQ
from checks import as_tuple, describe_diff

F = np.float32
I32 = np.int32
BF16 = ml_dtypes.bfloat16
X = np.array([-1.26, -0.35, -0.05, 0.0, 0.05, 0.15, 0.25, 1.3], F)
X2 = X.reshape(2, 4)
S4 = np.full(4, 0.1, F)
Z4 = np.zeros(4, I32)
T1 = np.array([0.1], F)       # a per-tensor qparam as a one-element tensor
Z1 = np.array([0], I32)
ON = np.array([1])            # fake_quant_enabled (PyTorch: an int64 tensor)

ATEN_OPS = {n for n, s in registry.OPS.items() if s.namespace == "aten"}
TARGETS = ("oracle", "cpu", "vmvx")

ANY = object()   # not checked (the argument, or PyTorch's words: its Python argument parser's own message)

# PyTorch's words
RANGE_ORDER = "`quant_min` should be less than or         equal to `quant_max`."
ZP_RANGE = "`zero_point` must be between `quant_min` and `quant_max`."
AXIS_NEG = "`axis` must be between 0 and number of dimensions of input"
SAME_DIMS = "scale and zero-point need to have the same dimensions"
CONSISTENT = "dimensions of scale and zero-point are not consistent with input tensor"
INT_OVERFLOW = "value cannot be converted to type int without overflow"
FLOAT_OVERFLOW = "value cannot be converted to type float without overflow"
MASK_BOOL = "Expected mask.scalar_type() == ScalarType::Bool to be true, but got false."


def not_scalar(n):
    return f"a Tensor with {n} elements cannot be converted to Scalar"


def dim_range(rank, got):
    return f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {got})"


class Bad(NamedTuple):
    id: str
    op: str
    args: tuple
    kwargs: dict
    arg: object           # e.arg (and named in the message), or ANY
    type_error: bool      # QDQTypeError (a TypeError too), else a plain QDQError
    pytorch: object       # PyTorch's words after "(PyTorch: "; None: no "(PyTorch: " at all; ANY: not checked
    words: tuple          # further words the message must contain
    absent: tuple         # words the message must not contain
    xfail: str | None     # a package bug: why the case fails today
    crash: bool           # ... and it is no QDQError at all (so not the same error on every target either)


def bad(id, op, args, arg, type_error=False, pytorch=None, words=(), absent=(), xfail=None, crash=False, **kwargs):
    return Bad(id, op, args, kwargs, arg, type_error, pytorch, tuple(words), tuple(absent), xfail, crash)


XFAIL_SIGNATURE_ARG = ("aten_arguments (opfuncs.py) raises the signature's QDQTypeError with arg=None: the error "
                       "does not name the argument in e.arg")
XFAIL_INT_INPUT = ("the PyTorch words name the dtype as NumPy does ('int64'), not as PyTorch's AT_DISPATCH does "
                   "('Long', 'Int', ...); the per-channel ops' dispatch is also named differently in PyTorch")
XFAIL_INT_GRAD = ("PyTorch computes dY * mask for an integer or bool dY (mul_cpu is implemented for them); the "
                  "package's refusal is its own limit but quotes PyTorch words ('\"mul_cpu\" not implemented for "
                  "...') that PyTorch never says")


def _per_tensor_cases(op):
    """The cases every per-tensor forward op shares (the tensor-qparams op takes tensor qparams)."""
    tq = op == TQ
    sc, zp = (T1, Z1) if tq else (0.1, 0)

    def a(input=X, scale=sc, zero_point=zp, qmin=-128, qmax=127, enabled=ON):
        return (input, scale, zero_point, enabled, qmin, qmax) if tq else (input, scale, zero_point, qmin, qmax)

    p = {PT: "pt", PTM: "ptm", TQ: "tq"}[op]
    cases = [
        # -- quantisation range
        bad(f"{p}-quant_min-gt-quant_max", op, a(zero_point=Z1 if tq else 4, qmin=5, qmax=4), "quant_min",
            pytorch=RANGE_ORDER, words=["quant_min=5", "quant_max=4"]),
        bad(f"{p}-quant_max-beyond-2^24", op, a(qmin=0, qmax=2**24 + 1), "quant_max", words=["2^24"]),
        bad(f"{p}-quant_min-beyond-minus-2^24", op, a(qmin=-2**24 - 1, qmax=0), "quant_min", words=["2^24"]),
        bad(f"{p}-range-spans-more-than-2^24", op, a(qmin=-2**23, qmax=2**23 + 1), "quant_max", words=["2^24"]),
        bad(f"{p}-quant_min-huge", op, a(qmin=-2**70, qmax=0), "quant_min", pytorch=ANY),
        bad(f"{p}-quant_min-float", op, a(qmin=-128.0), "quant_min", True, pytorch=ANY),
        bad(f"{p}-quant_max-string", op, a(qmax="127"), "quant_max", True, pytorch=ANY),
        bad(f"{p}-quant_max-none", op, a(qmax=None), "quant_max", True, pytorch=ANY),
        bad(f"{p}-quant_min-bool", op, a(qmin=True), "quant_min", True, pytorch=ANY),
        # -- per-tensor qparams: one element
        bad(f"{p}-scale-2-elements", op, a(scale=np.array([0.1, 0.2], F)), "scale", pytorch=not_scalar(2)),
        bad(f"{p}-scale-0-elements", op, a(scale=np.zeros(0, F)), "scale", pytorch=not_scalar(0)),
        bad(f"{p}-zero_point-2-elements", op, a(zero_point=np.zeros(2, I32)), "zero_point", pytorch=not_scalar(2)),
        bad(f"{p}-scale-string", op, a(scale="0.1"), "scale", True, pytorch=ANY),
        bad(f"{p}-scale-none", op, a(scale=None), "scale", True, pytorch=ANY),
        bad(f"{p}-zero_point-string", op, a(zero_point="0"), "zero_point", True, pytorch=ANY),
        # -- zero points that are no int32
        bad(f"{p}-zero_point-nan-tensor", op, a(zero_point=np.array([np.nan], F)), "zero_point",
            pytorch=INT_OVERFLOW),
        bad(f"{p}-zero_point-beyond-int32-tensor", op, a(zero_point=np.array([2**40]), qmin=0, qmax=2**24),
            "zero_point", pytorch=INT_OVERFLOW, words=["int32"]),
        # -- the input
        bad(f"{p}-input-string", op, a(input="abc"), "input", True, pytorch=ANY),
        bad(f"{p}-input-none", op, a(input=None), "input", True, pytorch=ANY),
        bad(f"{p}-input-list-of-strings", op, a(input=["a", "b"]), "input", True, pytorch=ANY),
        bad(f"{p}-input-int64", op, a(input=np.arange(4)), "input", True, words=["int64"],
            pytorch="\"fake_quantize_tensor_cachemask_kernel_type_handling\" not implemented for 'Long'"),
        bad(f"{p}-input-bool", op, a(input=np.ones(3, bool)), "input", True, words=["bool"],
            pytorch="\"fake_quantize_tensor_cachemask_kernel_type_handling\" not implemented for 'Bool'"),
        bad(f"{p}-input-complex64", op, a(input=np.ones(3, np.complex64)), "input", True, words=["complex64"],
            pytorch="\"fake_quantize_tensor_cachemask_kernel_type_handling\" not implemented for 'ComplexFloat'"),
        # -- the argument list
        bad(f"{p}-missing-quant_max", op, a()[:-1], "quant_max", True, pytorch=ANY,
            words=["missing a required argument: 'quant_max'"]),
        bad(f"{p}-too-many-positional", op, a() + (1,), ANY, True, pytorch=ANY, words=["too many positional"]),
        bad(f"{p}-unknown-keyword", op, a(), "foo", True, pytorch=ANY, words=["'foo'"],
            foo=1),
        bad(f"{p}-scale-twice", op, a()[:2], "scale", True, pytorch=ANY, words=["'scale'"], scale=0.1),
    ]
    if not tq:   # the tensor-qparams op checks no zero point (PyTorch 2.13, measured)
        cases += [
            bad(f"{p}-zero_point-above-quant_max", op, a(zero_point=200), "zero_point", pytorch=ZP_RANGE,
                words=["zero_point=200"]),
            bad(f"{p}-zero_point-below-quant_min", op, a(zero_point=-129), "zero_point", pytorch=ZP_RANGE),
            bad(f"{p}-zero_point-bool", op, a(zero_point=True), "zero_point", True, pytorch=ANY),
            bad(f"{p}-zero_point-nan", op, a(zero_point=math.nan), "zero_point", pytorch=ANY),
            bad(f"{p}-zero_point-inf", op, a(zero_point=-math.inf), "zero_point", pytorch=ANY),
            # a Python int is PyTorch's int64: beyond int32 it is out of [quant_min, quant_max] (ranges <= 2^24),
            # and PyTorch says so; no int conversion overflows
            bad(f"{p}-zero_point-beyond-int32", op, a(zero_point=2**31, qmin=0, qmax=2**24), "zero_point",
                pytorch=ANY, words=["int32"], absent=[INT_OVERFLOW]),
        ]
    else:
        cases += [
            bad(f"{p}-fake_quant_enabled-2-elements", op, a(enabled=np.ones(2, I32)), "fake_quant_enabled",
                pytorch=not_scalar(2)),
            bad(f"{p}-fake_quant_enabled-string", op, a(enabled="1"), "fake_quant_enabled", True, pytorch=ANY),
            bad(f"{p}-fake_quant_enabled-nan", op, a(enabled=np.array([np.nan])), "fake_quant_enabled",
                pytorch=INT_OVERFLOW),
            bad(f"{p}-scale-beyond-float32-tensor", op, a(scale=np.array([1e300])), "scale",
                pytorch=FLOAT_OVERFLOW),
            bad(f"{p}-input-int32", op, a(input=np.arange(4, dtype=I32)), "input", True, words=["int32"],
                pytorch="\"fake_quantize_tensor_cachemask_kernel_type_handling\" not implemented for 'Int'"),
        ]
    return cases


def _per_channel_cases(op):
    def a(input=X2, scale=S4, zero_point=Z4, axis=1, qmin=-128, qmax=127):
        return (input, scale, zero_point, axis, qmin, qmax)

    p = {PC: "pc", PCM: "pcm"}[op]
    x0 = F(0.5)
    one, zero1 = np.full(1, 0.1, F), np.zeros(1, I32)
    return [
        # -- quantisation range and zero points
        bad(f"{p}-quant_min-gt-quant_max", op, a(qmin=5, qmax=4), "quant_min", pytorch=RANGE_ORDER),
        bad(f"{p}-quant_max-beyond-2^24", op, a(qmin=0, qmax=2**24 + 1), "quant_max", words=["2^24"]),
        bad(f"{p}-range-spans-more-than-2^24", op, a(qmin=-2**24, qmax=1), "quant_max", words=["2^24"]),
        bad(f"{p}-zero_point-above-quant_max", op, a(zero_point=np.array([0, 0, 0, 300], I32)), "zero_point",
            pytorch=ZP_RANGE, words=["300"]),
        bad(f"{p}-zero_point-below-quant_min", op, a(zero_point=np.array([-1, 0, 0, 0], I32), qmin=0, qmax=255),
            "zero_point", pytorch=ZP_RANGE),
        bad(f"{p}-zero_point-beyond-int32", op, a(zero_point=[2**31] * 4), "zero_point", pytorch=ANY,
            words=["int32"]),
        # -- axis
        bad(f"{p}-axis-negative", op, a(axis=-1), "axis", pytorch=AXIS_NEG),
        bad(f"{p}-axis-past-rank", op, a(axis=2), "axis", pytorch=dim_range(2, 2)),
        bad(f"{p}-axis-far-past-rank", op, a(axis=7), "axis", pytorch=dim_range(2, 7)),
        # size(axis) comes first in PyTorch: below -rank it is c10's dimension error, not the axis check's
        bad(f"{p}-axis-below-minus-rank", op, a(axis=-3), "axis", pytorch=dim_range(2, -3)),
        bad(f"{p}-axis-on-0d-input", op, a(input=x0, scale=one, zero_point=zero1, axis=0), "axis",
            pytorch="Dimension specified as 0 but tensor has no dimensions", absent=["0..-1"]),
        bad(f"{p}-axis-float", op, a(axis=1.0), "axis", True, pytorch=ANY),
        bad(f"{p}-axis-huge", op, a(axis=2**70), "axis", pytorch=ANY),
        # -- scale and zero point shapes
        bad(f"{p}-lengths-differ", op, a(zero_point=np.zeros(3, I32)), "zero_point", pytorch=SAME_DIMS),
        bad(f"{p}-length-not-input-dim", op, a(scale=np.full(3, 0.1, F), zero_point=np.zeros(3, I32)), "scale",
            pytorch=CONSISTENT, words=["expected 4"]),
        bad(f"{p}-length-of-another-axis", op, a(axis=0), "scale", pytorch=CONSISTENT),
        bad(f"{p}-scale-2d", op, a(scale=S4.reshape(1, 4)), "scale", pytorch="scale should be a 1-D tensor"),
        bad(f"{p}-scale-0d", op, a(scale=F(0.1)), "scale", pytorch="scale should be a 1-D tensor"),
        bad(f"{p}-zero_point-2d", op, a(zero_point=Z4.reshape(1, 4)), "zero_point",
            pytorch="zero point should be a 1-D tensor"),
        # -- dtypes
        bad(f"{p}-zero_point-int64", op, a(zero_point=np.zeros(4, np.int64)), "zero_point", True,
            pytorch="Zero-point must be Int32, Float or Half, found Long"),
        bad(f"{p}-zero_point-float64", op, a(zero_point=np.zeros(4)), "zero_point", True,
            pytorch="Zero-point must be Int32, Float or Half, found Double"),
        bad(f"{p}-zero_point-bfloat16", op, a(zero_point=np.zeros(4, BF16)), "zero_point", True,
            pytorch="Zero-point must be Int32, Float or Half, found BFloat16"),
        bad(f"{p}-scale-float64", op, a(scale=S4.astype(np.float64)), "scale", True,
            pytorch="Scale must be Float or BFloat16, found Double"),
        bad(f"{p}-scale-float16", op, a(scale=S4.astype(np.float16)), "scale", True,
            pytorch="Scale must be Float or BFloat16, found Half"),
        bad(f"{p}-scale-int32", op, a(scale=np.ones(4, I32)), "scale", True,
            pytorch="Scale must be Float or BFloat16, found Int"),
        # PyTorch's check lets a bfloat16 scale through (its CPU kernel then reads it as float): refusing it is
        # right, but not with PyTorch's words, which say it is allowed
        bad(f"{p}-scale-bfloat16", op, a(scale=S4.astype(BF16)), "scale", True, pytorch=ANY,
            absent=["Scale must be Float or BFloat16, found BFloat16"]),
        bad(f"{p}-scale-string", op, a(scale="a"), "scale", True, pytorch=ANY),
        bad(f"{p}-zero_point-string", op, a(zero_point="a"), "zero_point", True, pytorch=ANY),
        bad(f"{p}-input-string", op, a(input="abc"), "input", True, pytorch=ANY),
        bad(f"{p}-input-int32", op, a(input=np.arange(8, dtype=I32).reshape(2, 4)), "input", True,
            words=["int32"],
            pytorch="\"fake_quantize_channel_cachemask_cpu_type_handling\" not implemented for 'Int'"),
        # -- the argument list
        bad(f"{p}-missing-quant_max", op, a()[:-1], "quant_max", True, pytorch=ANY,
            words=["missing a required argument: 'quant_max'"]),
        bad(f"{p}-too-many-positional", op, a() + (1,), ANY, True, pytorch=ANY, words=["too many positional"]),
        bad(f"{p}-unknown-keyword", op, a(), "bar", True, pytorch=ANY, words=["'bar'"], bar=0),
    ]


def _backward_cases(op):
    p = {PTB: "ptb", PCB: "pcb"}[op]
    m = X > 0
    return [
        bad(f"{p}-mask-smaller", op, (X, m[:7]), "mask",
            pytorch="`mask` and `dY` are not the same size: `mask` is size 7 and `dY` is size 8"),
        bad(f"{p}-mask-larger", op, (X[:3], m), "mask",
            pytorch="`mask` and `dY` are not the same size: `mask` is size 8 and `dY` is size 3"),
        bad(f"{p}-mask-0d", op, (X, np.bool_(True)), "mask",
            pytorch="`mask` and `dY` are not the same size: `mask` is size 1 and `dY` is size 8"),
        # same size, other shape: PyTorch broadcasts dY * mask; refused here (a gradient has the input's shape)
        bad(f"{p}-mask-other-shape", op, (X, m.reshape(2, 4)), "mask", pytorch=ANY, words=["[2, 4]", "[8]"]),
        bad(f"{p}-mask-float32", op, (X, m.astype(F)), "mask", True, pytorch=MASK_BOOL),
        bad(f"{p}-mask-int8", op, (X, m.astype(np.int8)), "mask", True, pytorch=MASK_BOOL),
        bad(f"{p}-mask-string", op, (X, "a"), "mask", True, pytorch=ANY),
        bad(f"{p}-grad-string", op, ("a", m), "grad", True, pytorch=ANY),
        bad(f"{p}-grad-none", op, (None, m), "grad", True, pytorch=ANY),
        bad(f"{p}-grad-int64", op, (np.arange(8), m), "grad", True, words=["int64"]),
        bad(f"{p}-grad-bool", op, (m, m), "grad", True, words=["bool"]),
        bad(f"{p}-missing-mask", op, (X,), "mask", True, pytorch=ANY,
            words=["missing a required argument: 'mask'"]),
        bad(f"{p}-too-many-positional", op, (X, m, 1), ANY, True, pytorch=ANY, words=["too many positional"]),
        bad(f"{p}-torch-name-dY", op, (), "grad", True, pytorch=ANY, words=["'grad'"], dY=X, mask=m),
    ]




def _learnable_cases():
    """The LSQ ops (a float zero point; PyTorch rounds and clamps it first, so only a NaN one is out of range)."""
    z1, s4, z4 = np.array([0.0], F), S4, np.zeros(4, F)
    g, g2 = np.ones(8, F), np.ones((2, 4), F)

    def lt(input=X, scale=T1, zero_point=z1, qmin=-128, qmax=127):
        return (input, scale, zero_point, qmin, qmax)

    def lc(input=X2, scale=s4, zero_point=z4, axis=1, qmin=-128, qmax=127):
        return (input, scale, zero_point, axis, qmin, qmax)

    def ltb(grad=g, input=X, scale=T1, zero_point=z1, qmin=-128, qmax=127):
        return (grad, input, scale, zero_point, qmin, qmax)

    def lcb(grad=g2, input=X2, scale=s4, zero_point=z4, axis=1, qmin=-128, qmax=127):
        return (grad, input, scale, zero_point, axis, qmin, qmax)

    return [
        # -- forward, per tensor: element 0 of the scale and zero point tensors
        bad("lt-quant_min-gt-quant_max", LT, lt(qmin=5, qmax=4), "quant_min", pytorch=RANGE_ORDER),
        bad("lt-quant_max-beyond-2^24", LT, lt(qmin=0, qmax=2**24 + 1), "quant_max", words=["2^24"]),
        bad("lt-scale-0d", LT, lt(scale=F(0.1)), "scale", pytorch="select() cannot be applied to a 0-dim tensor."),
        bad("lt-scale-0-elements", LT, lt(scale=np.zeros(0, F)), "scale",
            pytorch="select(): index 0 out of range for tensor of size [0] at dimension 0"),
        bad("lt-zero_point-nan", LT, lt(zero_point=np.array([np.nan], F)), "zero_point", pytorch=ZP_RANGE,
            words=["nan"]),
        bad("lt-scale-string", LT, lt(scale="a"), "scale", True, pytorch=ANY, absent=["select()"]),
        bad("lt-input-string", LT, lt(input="abc"), "input", True, pytorch=ANY),
        bad("lt-input-int64", LT, lt(input=np.arange(4)), "input", True, words=["int64"],
            pytorch="\"fake_quantize_tensor_cachemask_kernel_type_handling\" not implemented for 'Long'"),
        bad("lt-grad_factor-string", LT, lt() + ("a",), "grad_factor", True, pytorch=ANY),
        bad("lt-missing-quant_max", LT, lt()[:-1], "quant_max", True, pytorch=ANY,
            words=["missing a required argument: 'quant_max'"]),
        # -- forward, per channel
        bad("lc-quant_min-gt-quant_max", LC, lc(qmin=5, qmax=4), "quant_min", pytorch=RANGE_ORDER),
        bad("lc-axis-past-rank", LC, lc(axis=2), "axis", pytorch=dim_range(2, 2)),
        bad("lc-axis-negative", LC, lc(axis=-1), "axis", pytorch=AXIS_NEG),
        bad("lc-lengths-differ", LC, lc(zero_point=np.zeros(3, F)), "zero_point", pytorch=SAME_DIMS),
        bad("lc-length-not-input-dim", LC, lc(scale=S4[:3], zero_point=z4[:3]), "scale", pytorch=CONSISTENT),
        bad("lc-scale-float64", LC, lc(scale=S4.astype(np.float64)), "scale", True,
            pytorch="Scale must be Float or BFloat16, found Double"),
        bad("lc-input-int32", LC, lc(input=np.arange(8, dtype=I32).reshape(2, 4)), "input", True,
            pytorch="\"fake_quantize_channel_cachemask_cpu_type_handling\" not implemented for 'Int'"),
        bad("lc-too-many-positional", LC, lc() + (1.0, 2), ANY, True, pytorch=ANY, words=["too many positional"]),
        # -- backward, per tensor
        bad("ltb-grad-size", LTB, ltb(grad=g[:7]), "grad", pytorch="`X` and `dY` are not the same size"),
        bad("ltb-range-without-0", LTB, ltb(qmin=1, qmax=127), "quant_min",
            pytorch="`quant_min` should be less than or         equal to `quant_max`, and the quantization range "
                    "should include 0."),
        bad("ltb-grad-float64", LTB, ltb(grad=g.astype(np.float64)), "grad", True, pytorch=ANY),
        bad("ltb-zero_point-int32", LTB, ltb(zero_point=np.array([0], I32)), "zero_point", True, pytorch=ANY),
        bad("ltb-grad-string", LTB, ltb(grad="a"), "grad", True, pytorch=ANY),
        bad("ltb-unknown-keyword", LTB, ltb(), "foo", True, pytorch=ANY, words=["'foo'"], foo=1),
        # -- backward, per channel
        bad("lcb-grad-shape", LCB, lcb(grad=g), "grad", pytorch="`X` and `dY` are not the same size"),
        bad("lcb-range-without-0", LCB, lcb(qmin=1, qmax=127), "quant_min",
            pytorch="Expecting `quant_min` <= 0 and `quant_max` >= 0"),
        bad("lcb-axis-past-rank", LCB, lcb(axis=2), "axis", pytorch=dim_range(2, 2)),
        bad("lcb-axis-negative", LCB, lcb(axis=-1), "axis", pytorch=AXIS_NEG),
        bad("lcb-lengths-differ", LCB, lcb(zero_point=np.zeros(3, F)), "zero_point", pytorch=SAME_DIMS),
        bad("lcb-length-not-input-dim", LCB, lcb(scale=S4[:3], zero_point=z4[:3]), "scale", pytorch=CONSISTENT),
        bad("lcb-scale-2d", LCB, lcb(scale=S4.reshape(1, 4)), "scale", pytorch="scale should be a 1-D tensor"),
        bad("lcb-0d-input", LCB, lcb(grad=F(1), input=F(1), scale=S4[:1], zero_point=z4[:1], axis=0), "axis",
            pytorch="Dimension specified as 0 but tensor has no dimensions", crash=True),
        bad("lcb-zero_point-int32", LCB, lcb(zero_point=Z4), "zero_point", True, pytorch=ANY),
        bad("lcb-missing-quant_max", LCB, lcb()[:-1], "quant_max", True, pytorch=ANY,
            words=["missing a required argument: 'quant_max'"]),
    ]


def obs(x=X, on=ON, fq=ON, rmin=None, rmax=None, scale=T1, zp=Z1, c=0.01, qmin=0, qmax=255, ch_axis=0, per_row=False,
        sym=False):
    """fused_moving_avg_obs_fake_quant's positional arguments (per tensor: a 0-d running range, as PyTorch's)."""
    rmin = np.array(np.inf, F) if rmin is None else rmin
    rmax = np.array(-np.inf, F) if rmax is None else rmax
    return (x, on, fq, rmin, rmax, scale, zp, c, qmin, qmax, ch_axis, per_row, sym)


def _observer_cases():
    r2, s2, z2 = np.full(2, np.inf, F), np.full(2, 0.1, F), np.zeros(2, I32)
    row = dict(x=X2, rmin=r2, rmax=-r2, scale=s2, zp=z2, per_row=True)
    return [
        bad("fo-quant_min-gt-quant_max", FO, obs(qmin=5, qmax=4), "quant_min", pytorch=RANGE_ORDER),
        bad("fo-ch_axis-per-row", FO, obs(**row, ch_axis=1), "ch_axis",
            pytorch="Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0"),
        bad("fo-ch_axis-past-rank", FO, obs(ch_axis=1), "ch_axis",
            pytorch="Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()"),
        bad("fo-0d-input", FO, obs(x=F(0.5)), "ch_axis",
            pytorch="Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()"),
        bad("fo-per-row-lengths", FO, obs(**{**row, "scale": S4, "zp": Z4}), "scale", pytorch=CONSISTENT),
        bad("fo-per-row-rank-1", FO, obs(**{**row, "x": X}), "input", pytorch=dim_range(1, 1)),
        bad("fo-per-tensor-state-2", FO, obs(scale=s2), "scale", pytorch=not_scalar(2)),
        bad("fo-running-float64", FO, obs(rmin=np.array(np.inf)), "running_min", True,
            pytorch="expected scalar type Float but found Double"),
        bad("fo-observer_on-empty", FO, obs(on=np.zeros(0)), "observer_on", pytorch=not_scalar(0)),
        bad("fo-zero_point-float32", FO, obs(zp=np.array([0.0], F)), "zero_point", True, words=["allowed: int32"]),
        bad("fo-missing-ch_axis", FO, obs()[:-3], "ch_axis", True, pytorch=ANY,
            words=["missing a required argument: 'ch_axis'"]),
    ]


BAD = ([c for op in (PT, PTM, TQ) for c in _per_tensor_cases(op)]
       + [c for op in (PC, PCM) for c in _per_channel_cases(op)]
       + [c for op in (PTB, PCB) for c in _backward_cases(op)]
       + _learnable_cases()
       + _observer_cases()
       + [  # float64 inputs are a vmvx gap: a bad one is still the input's error on every target
           bad("float64-quant_min-gt-quant_max", PT, (X.astype(np.float64), 0.1, 0, 5, 4), "quant_min",
               pytorch=RANGE_ORDER),
           bad("float64-float-zero-point-axis-past-rank", PC, (X2.astype(np.float64), S4, S4, 2, -128, 127),
               "axis", pytorch=dim_range(2, 2)),
           bad("float16-input-scale-float16", PC, (X2.astype(np.float16), S4.astype(np.float16), Z4, 1, -128,
                                                   127), "scale", True,
               pytorch="Scale must be Float or BFloat16, found Half"),
       ])


def _param(case, same_error=False):
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail and (case.crash or not same_error) \
        else []
    return pytest.param(case, id=case.id, marks=marks)




def call(entry, case):
    if entry == "oracle.aten":
        return getattr(q.oracle.aten, case.op)(*case.args, **case.kwargs)
    return getattr(q.aten, case.op)(*case.args, **case.kwargs, target=entry)


def assert_clean(info, case: Bad):
    e = info.value
    msg = str(e)
    assert isinstance(e, QDQError) and isinstance(e, ValueError), repr(e)
    assert isinstance(e, QDQTypeError) == case.type_error, f"{type(e).__name__}: {msg}"
    assert isinstance(e, TypeError) == case.type_error
    assert msg.startswith(f"{case.op}: "), msg
    if case.arg is not ANY:
        assert e.arg == case.arg, f"arg={e.arg!r}: {msg}"
        assert case.arg in msg, msg
    if case.pytorch is None:
        assert "(PyTorch: " not in msg, msg
    elif case.pytorch is not ANY:
        assert f"(PyTorch: {case.pytorch}" in msg, msg
    for w in case.words:
        assert w in msg, f"{w!r} not in {msg!r}"
    for w in case.absent:
        assert w not in msg, f"{w!r} in {msg!r}"
    assert "\n" not in msg
    assert not any("/iree/" in str(entry.path) for entry in info.traceback)
    # raised afresh: no NumPy or Python exception chained in a traceback ("during handling ...")
    cause = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    assert cause is None or isinstance(cause, (OverflowError, ValueError, TypeError)), repr(cause)


def test_every_aten_op_is_covered():
    """PyTorch's ops here; TF's in test_bad_input.py."""
    assert {c.op for c in BAD} == ATEN_OPS


def test_case_ids_are_unique():
    assert len({c.id for c in BAD}) == len(BAD)


@pytest.mark.parametrize("entry", TARGETS + ("oracle.aten",))
@pytest.mark.parametrize("case", [_param(c) for c in BAD])
def test_bad_input_is_a_clear_error(entry, case, no_compile):
    with pytest.raises(QDQError) as info:
        call(entry, case)
    assert_clean(info, case)


@pytest.mark.parametrize("case", [_param(c, same_error=True) for c in BAD])
def test_bad_input_same_error_on_every_target(case, no_compile):
    """The same class and message on every target; ``oracle.aten`` too, but for the signature's own list of
    arguments (it takes no ``target``)."""
    seen = set()
    for entry in TARGETS:
        with pytest.raises(QDQError) as info:
            call(entry, case)
        seen.add((type(info.value), str(info.value)))
    assert len(seen) == 1, seen
    with pytest.raises(QDQError) as info:
        call("oracle.aten", case)
    ((cls, msg),) = seen
    if "arguments are: " in msg:
        msg = msg.replace("target, ", "")
    assert (type(info.value), str(info.value)) == (cls, msg)


def test_inputs_are_not_modified_by_a_refusal(no_compile):
    zp = np.array([0, 0, 0, 300], I32)
    x = X2.copy()
    with pytest.raises(QDQError):
        q.aten.fake_quantize_per_channel_affine(x, S4, zp, 1, -128, 127)
    assert bit_equal(x, X2) and zp.tolist() == [0, 0, 0, 300]


# ------------------------------------------------------------------------------------------------
# The target and semantics keywords


@pytest.mark.parametrize("op", sorted(ATEN_OPS & set(q.aten.__all__)))
def test_bad_target_or_semantics_is_a_clear_error(op, no_compile):
    fz, fz4 = np.zeros(1, F), np.zeros(4, F)
    args = {PT: (X, 0.1, 0, -128, 127), PTM: (X, 0.1, 0, -128, 127), TQ: (X, T1, Z1, ON, -128, 127),
            PC: (X2, S4, Z4, 1, -128, 127), PCM: (X2, S4, Z4, 1, -128, 127), PTB: (X, X > 0), PCB: (X, X > 0),
            LT: (X, T1, fz, -128, 127), LC: (X2, S4, fz4, 1, -128, 127), LTB: (X, X, T1, fz, -128, 127),
            LCB: (X2, X2, S4, fz4, 1, -128, 127), FO: obs()}[op]
    getattr(q.oracle.aten, op)(*args)   # valid
    fn = getattr(q.aten, op)
    for kw, arg in (({"target": "tpu"}, "target"), ({"target": None}, "target"),
                    ({"semantics": "bogus"}, "semantics"), ({"semantics": "tf-cpu"}, "semantics")):
        with pytest.raises(QDQError) as info:
            fn(*args, **kw)
        msg = str(info.value)
        assert info.value.arg == arg and "\n" not in msg
        assert msg.startswith(f"{op}: "), msg
        assert "TF 2.21" not in msg and "TensorFlow" not in msg, msg


# ------------------------------------------------------------------------------------------------
# Not errors: what PyTorch computes, the package computes too (cpu and oracle bit for bit)


BAD_SCALES = [0.0, -0.0, -0.1, math.nan, math.inf, -math.inf]
XS = np.array([-1.26, -0.35, -0.05, -0.0, 0.0, 0.05, 0.15, 0.25, 1.3, 300.0, np.nan, np.inf, -np.inf], F)


def _both(op, args):
    """(compiled cpu result, oracle result, the QDQWarning messages of each call)."""
    out, said = [], []
    for fn in (lambda: getattr(q.aten, op)(*args, target="cpu"), lambda: getattr(q.oracle.aten, op)(*args)):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            out.append(as_tuple(fn()))
        said.append([str(w.message) for w in record if issubclass(w.category, QDQWarning)])
    return out[0], out[1], said


def _assert_bits(op, got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert bit_equal(g, w), f"{op}: {describe_diff(g, w)}"


@pytest.mark.parametrize("scale", BAD_SCALES, ids=[repr(s) for s in BAD_SCALES])
@pytest.mark.parametrize("op", [PT, PTM, TQ])
def test_non_positive_or_non_finite_scale_warns_and_computes_per_tensor(op, scale):
    args = (XS, np.array([scale], F), np.array([3], I32), ON, -8, 7) if op == TQ else (XS, scale, 3, -8, 7)
    got, want, said = _both(op, args)
    for msgs in said:
        assert len(msgs) == 1 and msgs[0].startswith(f"{op}: ") and "scale" in msgs[0], msgs
    _assert_bits(op, got, want)


@pytest.mark.parametrize("zp_dtype", ["int32", "float32", "float16"])
@pytest.mark.parametrize("op", [PC, PCM])
def test_non_positive_or_non_finite_scale_warns_and_computes_per_channel(op, zp_dtype):
    x = np.resize(XS, (2, 6, 3))
    scale = np.array(BAD_SCALES, F)
    zp = np.array([0, 1, -1, 2, 0, 3]).astype(zp_dtype)
    got, want, said = _both(op, (x, scale, zp, 1, -8, 7))
    for msgs in said:
        assert len(msgs) == 1 and "scale has 6 value(s)" in msgs[0], msgs
    _assert_bits(op, got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error", QDQWarning)   # a good scale does not warn
        getattr(q.oracle.aten, op)(x, np.full(6, 0.25, F), zp, 1, -8, 7)


@pytest.mark.parametrize("zp_dtype", ["float32", "float16"])
def test_float_per_channel_zero_point_outside_the_range_computes(zp_dtype):
    """PyTorch checks the range of an integer zero point only (``if (!isFloatingType(...))``)."""
    zp = np.array([300.0, -200.5, 7.5, np.nan]).astype(zp_dtype)
    for op in (PC, PCM):
        got, want, said = _both(op, (X2, S4, zp, 1, -8, 7))
        assert said == [[], []]
        _assert_bits(op, got, want)


def test_per_tensor_tensor_qparams_zero_point_outside_the_range():
    """torch.ops.aten's overload resolution takes one-element tensors into the default overload (``.item()``, a float
    truncated toward zero), which checks the zero point; only the tensor-qparams cachemask op checks none."""
    for zp in (np.array([300], I32), np.array(-3.7, F), np.array([[256]], np.int64)):
        with pytest.raises(QDQError, match="`zero_point` must be between `quant_min` and `quant_max`"):
            q.aten.fake_quantize_per_tensor_affine(X, T1, zp, 0, 255, target="oracle")
    got = q.aten.fake_quantize_per_tensor_affine(X, T1, np.array([255.9], F), 0, 255, target="oracle")
    assert bit_equal(got, q.aten.fake_quantize_per_tensor_affine(X, 0.1, 255, 0, 255, target="oracle"))
    off = q.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(X, T1, np.array([300], I32), ON, 0, 255,
                                                                          target="oracle").output
    assert bit_equal(off, np.full(X.shape, F(255 - 300) * F(0.1), F))   # every level above 255: clamped
