"""``qdq_compiler.raw_ops``: the compiled ops, named and called like ``tf.raw_ops``, plus ``target=``."""
from __future__ import annotations

from . import ops as _R
from .opfuncs import make_raw_op as _make


def _run(call, extra):
    from .execute import run
    return run(call, extra["target"])


for _spec in _R.OPS.values():
    globals()[_spec.name] = _make(_spec, _run, extra={"target": "cpu"},
                                  doc_suffix="\n\nCompiled with IREE; ``target`` picks the backend (default 'cpu').")

__all__ = list(_R.OPS)
