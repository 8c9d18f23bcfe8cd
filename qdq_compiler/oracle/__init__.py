"""The NumPy reference: TF 2.21's CPU kernels reproduced bit for bit (spec, with the project policy).

``qdq_compiler.oracle.raw_ops.<OpName>(**kwargs)`` mirrors ``tf.raw_ops.<OpName>``;
``compute(call)`` runs an already validated ``Call``.
"""
from __future__ import annotations

import numpy as np

from .. import registry as R
from ..validation import Call
from . import fake_quant as _fq
from . import qdq as _qdq


def _qdq_family(call: Call):
    s, a, arr = call.spec, call.attrs, call.arrays
    x = arr["input"]
    num_bits = int(arr["num_bits"]) if s.num_bits_input else a["num_bits"]
    if s.range_from == "attr":
        lo, hi = np.asarray(a["input_min"], np.float32), np.asarray(a["input_max"], np.float32)
    else:
        lo, hi = arr["input_min"], arr["input_max"]
    y = _qdq.qdq_forward(
        x, lo.astype(x.dtype), hi.astype(x.dtype), signed=a["signed_input"], num_bits=num_bits,
        narrow=a.get("narrow_range", False), range_given=a["range_given"],
        half_up=a.get("round_mode") == "HALF_UP", axis=call.per_channel_axis())
    return (y,)


def _qdq_grad_family(call: Call):
    arr = call.arrays
    return _qdq.qdq_v4_grad(arr["gradients"], arr["input"], arr["input_min"], arr["input_max"],
                            axis=call.per_channel_axis())


def nudged_params(call: Call) -> _fq.Nudged:
    """The nudged range of a FakeQuant call: from the attrs (Args) or the min/max tensors."""
    s, a = call.spec, call.attrs
    if s.range_from == "attr":
        mn, mx = np.float32(a["min"]), np.float32(a["max"])
    else:
        mn, mx = call.arrays["min"], call.arrays["max"]
    return _fq.nudge(mn, mx, a["num_bits"], a["narrow_range"])


def _fake_quant_family(call: Call):
    n = nudged_params(call)
    zero_special = call.spec.range_from != "attr"
    return (_fq.fake_quant(call.arrays["inputs"], n, divides=call.spec.divides, zero_special=zero_special),)


def _fake_quant_grad_family(call: Call):
    n = nudged_params(call)
    with_sums = call.spec.range_from != "attr"
    return _fq.fake_quant_grad(call.arrays["gradients"], call.arrays["inputs"], n,
                               with_sums=with_sums, zero_special=with_sums)


_FAMILIES = {
    R.QDQ: _qdq_family,
    R.QDQ_GRAD: _qdq_grad_family,
    R.FAKE_QUANT: _fake_quant_family,
    R.FAKE_QUANT_GRAD: _fake_quant_grad_family,
}


def compute(call: Call) -> tuple[np.ndarray, ...]:
    """Run a validated call; returns one array per output of the op, in TF's order."""
    outs = _FAMILIES[call.spec.family](call)
    return tuple(np.asarray(o, call.dtype) for o in outs)


from . import raw_ops  # noqa: E402  (the public namespace, built from the registry)

__all__ = ["compute", "raw_ops", "nudged_params"]
