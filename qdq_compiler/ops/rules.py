"""``Rules``: what one family does under one semantics, registered beside the family's other rules.

A semantics is a reference whose bits the programs reproduce (TF's CPU kernels, its XLA lowering, next
PyTorch's CPU kernels). Where two references compute the same op differently, the family registers one
``Rules`` per semantics, the way JAX registers a primitive's lowering per platform
(``mlir.register_lowering(prim, rule, platform=...)``). Generic code asks ``spec.family.rules(name)``
and reads the block; it never compares semantics names, and neither do the families.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import Checker


def _no_check(c: Checker, spec, arrays: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> None:
    return None


def _supported(spec) -> str:
    return ""


def _no_hint(spec, dtype: str) -> str:
    return ""


def _no_params(spec, attrs, dtype: str) -> list:
    return []


def _no_fma(spec, attrs, dtype: str) -> bool:
    return False


def _any_variant(spec, attrs) -> bool:
    return True


@dataclass(frozen=True)
class Rules:
    """One family's behaviour under one semantics.

    oracle(call)                      the NumPy reference: one array per output, in the op's order
    template                          the Jinja2 template (templates/) that lowers the op
    dtypes                            the element types the ops take
    check(c, spec, arrays, attrs)     the op's own checks (after the generic type and attribute checks)
    unsupported(spec)                 why an op has no answer here ('' when it has one)
    answers_variant(spec, attrs)      whether one structural variant has an answer here (default: all)
    dtype_hint(spec, dtype)           how to run a dtype refused here ('' when nothing can)
    params(spec, attrs, dtype)        (name, MLIR type, exact value) of each parameter computed on the host
    arithmetic                        the template's arithmetic policy (``k.arith.<name>``): named choices
                                      where references compute one op differently (how a clamp picks, how an
                                      inverse is formed, ...), so that a family has one template
    round_each_op                     16-bit types: every operation's result is rounded to the storage type
                                      (macro rnd), not only the op's outputs
    contraction_free                  the template has no multiply-add for a CPU to contract (checked by
                                      tests/test_cpu_level.py on the compiled dispatches)
    short_block_reductions            the program reduces many short blocks (MX's 16 or 32 elements) and
                                      rewrites each block's elements: the target's code generation for such
                                      programs (Target.short_block_flags) applies
    fused_multiply_add(spec, attrs, dtype)  whether the program rounds multiply-adds once (macro fma): the
                                      target then says how (Target.multiply_add), and the choice is part of
                                      the configuration (OpConfig.fma) and so of the cache key
    """
    oracle: Callable
    template: str
    dtypes: tuple[str, ...]
    check: Callable = _no_check
    unsupported: Callable = _supported
    dtype_hint: Callable = _no_hint
    params: Callable = _no_params
    fused_multiply_add: Callable = _no_fma
    arithmetic: Mapping[str, Any] = field(default_factory=dict)
    round_each_op: bool = False
    contraction_free: bool = False   # no float multiply feeds an add in the template: a CPU's FMA unit cannot change
    #   its bits, so it may compile at the host's widest level (Target.contraction_free_level: AVX-512 on x86-64)
    short_block_reductions: bool = False
    answers_variant: Callable = _any_variant   # (spec, structural attrs) -> whether this semantics answers them
    #   (onnxruntime has no float4 kernel): the validation matrix leaves out the rest
