"""The op registry: one declarative ``OpSpec`` per TensorFlow raw op, grouped by family.

Each family module holds its specs and all of its rules (checks, oracle, template parameters, canonical
layout, sample inputs); this module only collects them. Names, defaults and allowed values follow the
TF 2.21 op definitions (spec section 1). To add an op to a family, add its ``OpSpec`` to that module's
``SPECS``; to add a family, write a module like ``fake_quant.py`` (and its template) and list it here.
"""
from __future__ import annotations

from ..errors import QDQError
from . import (aten_fake_quant, aten_learnable_grad, aten_mask_grad, aten_observer, fake_quant, fake_quant_grad,
               mx_specs, onnx_qdq, qdq, qdq_grad)
from .family import AXIS, FLAT, LAST, Family
from .spec import BLOCKS, DATA, RANGE, SCALAR, Attr, Input, OpSpec, Output

FAMILY_MODULES = (qdq, qdq_grad, fake_quant, fake_quant_grad, aten_fake_quant, aten_mask_grad, aten_learnable_grad,
                  aten_observer, onnx_qdq, mx_specs)
FAMILIES: tuple[Family, ...] = tuple(m.FAMILY for m in FAMILY_MODULES)

OPS: dict[str, OpSpec] = {}
for _module in FAMILY_MODULES:
    for _spec in _module.SPECS:
        if _spec.name in OPS:
            raise AssertionError(f"duplicate op {_spec.name}")
        OPS[_spec.name] = _spec


def get(name: str) -> OpSpec:
    """The spec of ``name``; an unknown name is a QDQError listing the known ops."""
    try:
        return OPS[name]
    except (KeyError, TypeError):
        raise QDQError(f"unknown op {name!r}; known ops: {', '.join(OPS)}", arg="op") from None


__all__ = ["OPS", "FAMILIES", "get", "OpSpec", "Attr", "Input", "Family", "FLAT", "LAST", "AXIS", "DATA", "RANGE", "BLOCKS",
           "SCALAR"]
