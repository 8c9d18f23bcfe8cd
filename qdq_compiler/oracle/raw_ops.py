"""``qdq_compiler.oracle.raw_ops``: one function per op, named and called like ``tf.raw_ops``."""
from __future__ import annotations

from .. import ops as _ops
from ..opfuncs import make_raw_op as _make


def _run(call, _extra):
    from . import compute
    return compute(call)


for _spec in _ops.OPS.values():
    globals()[_spec.name] = _make(_spec, _run, doc_suffix="\n\nNumPy reference (TF 2.21 CPU bits).")

__all__ = list(_ops.OPS)
