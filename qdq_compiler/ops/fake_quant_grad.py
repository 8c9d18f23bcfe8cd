"""The gradients of FakeQuantWithMinMax{Args,Vars,VarsPerChannel}: specs and rules.

TF 2.21 (spec 4.2): the incoming gradient masked by the nudged range (inclusive); Vars and PerChannel
also return the sums of the gradients strictly below / above it (their order is free: project policy
6), and pass the gradient through where min == max == 0.
"""
from __future__ import annotations

import numpy as np

from ..numerics import F32, Nudged, flush
from .fake_quant import (ARGS_ATTRS, ATTR, CHANNEL, DTYPES, SCALAR, VARS_ATTRS, VARS_INPUTS, FakeQuantBase,
                         Variant, nudged_params, rules, widened)
from . import fake_quant_xla as xla
from .spec import OpSpec, data, per_channel_result, result


def fake_quant_grad(g, x, n: Nudged, *, with_sums: bool, zero_special: bool):
    """Masked gradient (inclusive nudged bounds) and, for Vars/PerChannel, the strict-side sums."""
    xf = flush(x)
    gf = flush(g)
    inside = ((xf >= n.nudged_min) & (xf <= n.nudged_max)).astype(F32)
    with np.errstate(all="ignore"):
        dx = flush(gf * inside)
    if not with_sums:
        return (dx,)
    below = (xf < n.nudged_min).astype(F32)
    above = (xf > n.nudged_max).astype(F32)
    axes = tuple(range(x.ndim - np.ndim(n.nudged_min)))  # every dim but the channel (all for per-tensor)
    with np.errstate(all="ignore"):
        # The summation order is free (project policy 6); float64 accumulation keeps it near exact.
        dmin = flush(np.sum(flush(gf * below), axis=axes, dtype=np.float64).astype(F32))
        dmax = flush(np.sum(flush(gf * above), axis=axes, dtype=np.float64).astype(F32))
    if zero_special and n.zero_range.any():
        dx = np.where(n.zero_range, g, dx).astype(F32)   # pass-through is a copy: raw bits, no flush
        dmin = np.where(n.zero_range, F32(0), dmin).astype(F32)
        dmax = np.where(n.zero_range, F32(0), dmax).astype(F32)
    return dx, np.asarray(dmin, F32), np.asarray(dmax, F32)


def oracle_cpu(call):
    with_sums, arrays = call.spec.variant.range_from != ATTR, widened(call)
    outs = fake_quant_grad(arrays["gradients"], arrays["inputs"], nudged_params(call, arrays),
                           with_sums=with_sums, zero_special=with_sums)
    return tuple(o.astype(call.dtype) for o in outs)


def oracle_xla(call):
    arrays = widened(call)
    outs = xla.fake_quant_grad(arrays["gradients"], arrays["inputs"], xla.nudged(call, arrays),
                               with_sums=call.spec.variant.range_from != ATTR)
    return tuple(o.astype(call.dtype) for o in outs)


class FakeQuantGrad(FakeQuantBase):
    name = "fake_quant_grad"
    rules_by_semantics = rules(oracle_cpu, oracle_xla, "fake_quant_grad.mlir.j2")


FAMILY = FakeQuantGrad()

_GRAD = (data("gradients", "grad"),)
_SUMS = ("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max")
_RESULTS = (result(_SUMS[0]), per_channel_result(_SUMS[1]), per_channel_result(_SUMS[2]))

SPECS = (
    OpSpec("FakeQuantWithMinMaxArgsGradient", FAMILY, (data("gradients", "grad"), data("inputs")),
           ARGS_ATTRS, (result("backprops"),), DTYPES, "Gradients masked by the nudged range (inclusive).",
           variant=Variant(ATTR), gradient_of="FakeQuantWithMinMaxArgs",
           tf_wrappers=("fake_quant_with_min_max_args_gradient",)),
    OpSpec("FakeQuantWithMinMaxVarsGradient", FAMILY, _GRAD + VARS_INPUTS, VARS_ATTRS, _RESULTS, DTYPES,
           "Masked input gradient plus the sums of gradients below/above the nudged range.",
           variant=Variant(SCALAR), sum_outputs=_SUMS[1:], sums_of="gradients",
           gradient_of="FakeQuantWithMinMaxVars",
           tf_wrappers=("fake_quant_with_min_max_vars_gradient",)),
    OpSpec("FakeQuantWithMinMaxVarsPerChannelGradient", FAMILY, _GRAD + VARS_INPUTS, VARS_ATTRS, _RESULTS, DTYPES,
           "Per-channel gradient; min/max sums over every dimension but the last.",
           variant=Variant(CHANNEL), sum_outputs=_SUMS[1:], sums_of="gradients",
           gradient_of="FakeQuantWithMinMaxVarsPerChannel",
           tf_wrappers=("fake_quant_with_min_max_vars_per_channel_gradient",)),
)
