"""Build ``raw_ops``-style callables from the op registry, for the oracle and for compiled targets alike."""
from __future__ import annotations

import collections
import functools
import inspect
from typing import Any, Callable

from . import ops as R
from .semantics import DEFAULT as DEFAULT_SEMANTICS
from .validation import Call, bind


@functools.lru_cache(maxsize=None)
def result_type(op: str):
    """The namedtuple of a multi-output op, with TF's output names (None for single-output ops)."""
    spec = R.get(op)
    if len(spec.outputs) == 1:
        return None
    return collections.namedtuple(op, spec.outputs)


def pack(op: str, outputs):
    """Outputs as TF returns them: one array, or a namedtuple with TF's names."""
    rt = result_type(op)
    return outputs[0] if rt is None else rt(*outputs)


def signature(spec: R.OpSpec, extra: tuple[inspect.Parameter, ...] = ()) -> inspect.Signature:
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter(i.name, kw) for i in spec.inputs]
    params += [inspect.Parameter(a.name, kw, default=a.default) for a in spec.attrs]
    params += [inspect.Parameter("name", kw, default=None)]
    return inspect.Signature(params + list(extra))


def make_raw_op(spec: R.OpSpec, run: Callable[[Call, dict], Any], extra: dict[str, Any] | None = None,
                doc_suffix: str = "") -> Callable:
    """A keyword-only function named like the TF raw op: validate, then ``run(call, extra_kwargs)``."""
    extra = {**dict(extra or {}), "semantics": DEFAULT_SEMANTICS}

    name = spec.name
    packer = result_type(name)

    def raw_op(**kwargs):
        ex = {k: kwargs.pop(k, v) for k, v in extra.items()}
        call = bind(name, kwargs, semantics=ex.pop("semantics"))
        out = run(call, ex)
        return out[0] if packer is None else packer(*out)

    raw_op.__name__ = raw_op.__qualname__ = spec.name
    xparams = tuple(inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v) for k, v in extra.items())
    raw_op.__signature__ = signature(spec, xparams)
    attrs = ", ".join(f"{a.name}={a.default!r}" for a in spec.attrs)
    raw_op.__doc__ = (f"{spec.doc}\n\nInputs: {', '.join(spec.input_names)}. Attributes: {attrs}.\n"
                      f"Outputs: {', '.join(spec.outputs)}.{doc_suffix}\n``semantics``: whose answer, 'tf-cpu' "
                      f"(TF 2.21's CPU kernels, the default) or 'tf-xla' (its XLA lowering, jit_compile=True).")
    return raw_op
