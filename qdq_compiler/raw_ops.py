"""``qdq_compiler.raw_ops``: the compiled ops, named and called like ``tf.raw_ops``, plus ``target=``."""
from __future__ import annotations

from . import ops as _R
from .opfuncs import make_raw_op as _make


def _run(call, extra):
    global _execute_run
    if _execute_run is None:  # imported on the first call: importing raw_ops loads no compiler machinery
        from .execute import run as _execute_run
    return _execute_run(call, extra["target"])


_execute_run = None


for _spec in _R.OPS.values():
    globals()[_spec.name] = _make(_spec, _run, extra={"target": "cpu"},
                                  doc_suffix="\n\nCompiled with IREE; ``target`` picks the backend (default 'cpu').")

__all__ = list(_R.OPS)
