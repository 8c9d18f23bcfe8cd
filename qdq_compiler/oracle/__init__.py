"""The NumPy reference: TF 2.21's CPU kernels reproduced bit for bit (spec, with the project policy).

``qdq_compiler.oracle.raw_ops.<OpName>(**kwargs)`` mirrors ``tf.raw_ops.<OpName>``,
``qdq_compiler.oracle.aten.<op>(...)`` ``torch.ops.aten.<op>`` (PyTorch 2.13's CPU kernels),
``qdq_compiler.oracle.onnx_ops.<Op>(...)`` ONNX's QuantizeLinear/DequantizeLinear (the onnx reference),
``qdq_compiler.oracle.mx.fake_quantize(...)`` the block-scaled formats (torchao's reference);
``compute(call)`` runs an already validated ``Call``. The arithmetic of each op lives with its family
(``qdq_compiler/ops/``); this package is the entry point.
"""
from __future__ import annotations

import numpy as np

from ..validation import Call


def compute(call: Call) -> tuple[np.ndarray, ...]:
    """Run a validated call; returns one array per output of the op, in TF's order."""
    outs = call.spec.family.rules(call.semantics).oracle(call)
    with np.errstate(over="ignore"):   # a float32 answer beyond float16's range is inf in it: the rounding meant
        return tuple(np.asarray(o, call.result_dtype(i)) for i, o in enumerate(outs))


from . import aten, mx, onnx_ops, raw_ops  # noqa: E402  (the public namespaces, built from the registry)

__all__ = ["compute", "raw_ops", "aten", "onnx_ops", "mx"]
