"""JAX-style ``(y, vjp)`` helpers for the block-scaled formats: ``qdq_compiler.mx.fake_quantize_vjp`` and its NumPy
twin in ``qdq_compiler.oracle.mx`` (the generated namespaces bind them with ``vjp_of``).

Two gradients, as quantization-aware training uses them: ``"ste"``, straight through (dy itself), and ``"clipped"``
(the default), straight through where x lies within its block's representable range and 0 where the conversion
clamps it (the op ``MXFakeQuantizeGradient``, compiled; OCP semantics)."""
from __future__ import annotations

import numpy as np

from . import dtypes
from .errors import QDQError, QDQTypeError

GRADIENTS = ("clipped", "ste")


def _as_gradient(dy, y: np.ndarray) -> np.ndarray:
    """dy as an array of y's type and shape, or the error naming dy."""
    if isinstance(dy, (str, bytes)) or dy is None:
        raise QDQTypeError(f"dy={dy!r} must be an array of {y.dtype}", arg="dy")
    g = np.asarray(dy)
    if g.dtype.kind not in "iu" and not dtypes.is_float(g.dtype):
        raise QDQTypeError(f"dy has element type {g.dtype}; expected {y.dtype}", arg="dy")
    if g.shape != y.shape:
        raise QDQError(f"dy has shape {list(g.shape)} but the output has shape {list(y.shape)}", arg="dy")
    return g.astype(y.dtype)


def vjp_of(fake_quantize, fake_quantize_gradient):
    """``fake_quantize_vjp`` for one namespace (compiled or oracle): its two functions, bound."""
    def fake_quantize_vjp(x, elem, *, gradient="clipped", **kw):
        """(y, vjp) for ``fake_quantize(x, elem, **kw)``: vjp(dy) -> (dx,), with ``gradient`` "clipped" (dy where x
        is within its block's range max * X, 0 where it is clamped and in a block whose scale is NaN) or "ste"
        (straight through: dy)."""
        if gradient not in GRADIENTS:
            raise QDQError(f"gradient={gradient!r} is not known; allowed: {', '.join(GRADIENTS)}", arg="gradient")
        y = fake_quantize(x, elem, **kw)
        grad_kw = {k: v for k, v in kw.items() if k not in ("rounding", "seed")}   # the range is rounding's own

        def vjp(dy):
            g = _as_gradient(dy, y)
            if gradient == "ste":
                return (g,)
            return (fake_quantize_gradient(g, x, elem, **grad_kw),)
        return y, vjp
    fake_quantize_vjp.__qualname__ = "fake_quantize_vjp"
    return fake_quantize_vjp
