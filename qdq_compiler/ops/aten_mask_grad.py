"""The backward of PyTorch's cachemask fake-quant ops: ``grad * mask`` (aten's
fake_quantize_per_{tensor,channel}_affine_cachemask_backward).

ATen multiplies (``dY * mask``, the bool promoted to dY's type), so a masked-out element is ``grad * 0``: -0
for a negative gradient, NaN for a NaN or infinite one. Any float type; 16-bit types exactly, as the product
of a value and 0 or 1 is exact in float32 and rounds back to itself.
"""
from __future__ import annotations

import numpy as np

from .aten_common import ASSERT_TAIL
from .family import FLAT, Family
from .rules import Rules
from .spec import OpSpec, data, fixed, result

DTYPES = ("float16", "bfloat16", "float32", "float64")


def oracle(call):
    g, mask = call.arrays["grad"], call.arrays["mask"]
    with np.errstate(invalid="ignore"):
        return ((g * mask.astype(g.dtype)).astype(g.dtype),)


def check(c, spec, arrays, attrs):
    g, mask = arrays["grad"], arrays["mask"]
    if mask.shape != g.shape:
        c.fail(f"mask has shape {list(mask.shape)} but grad has shape {list(g.shape)}; they must be equal", "mask",
               tf=f"`mask` and `dY` are not the same size: `mask` is size {mask.size} and `dY` is size {g.size}"
               if mask.size != g.size else None)


RULES = {"torch-cpu": Rules(oracle, "aten_mask_grad.mlir.j2", DTYPES, check=check)}


class AtenMaskGrad(Family):
    name = "aten_mask_grad"
    rules_by_semantics = RULES

    def wrong_dtype_words(self, spec, input_name, dtype):
        return None   # PyTorch multiplies any dtype; a float gradient is this package's own limit

    def mismatched_dtype_words(self, spec, index, got, want):
        if spec.inputs[index].name == "mask":
            return f"Expected mask.scalar_type() == ScalarType::Bool to be true, but got false.{ASSERT_TAIL}"
        return None

    def channel_axis(self, spec, attrs, rank):
        return None

    def layout(self, spec, attrs):
        return FLAT

    def random_calls(self, spec, attrs, x, rng, special):
        calls = []
        for p in (0.5, 0.05, 0.95):
            g = special(x.copy(), 1.0)
            calls.append({"grad": g, "mask": rng.random(x.shape) < p})
        return calls

    def bench_kwargs(self, spec, attrs, shape, rng):
        return {"grad": rng.standard_normal(shape, dtype=np.float32), "mask": rng.random(shape) < 0.9}


FAMILY = AtenMaskGrad()
_INPUTS = (data("grad"), fixed("mask", "mask", "bool"))

SPECS = tuple(
    OpSpec(name, FAMILY, _INPUTS, (), (result("output"),), DTYPES,
           "grad * mask: the gradient where the forward's level was in range, grad * 0 elsewhere.", namespace="aten",
           signature=("grad", "mask"))
    for name in ("fake_quantize_per_tensor_affine_cachemask_backward",
                 "fake_quantize_per_channel_affine_cachemask_backward"))
