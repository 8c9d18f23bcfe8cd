"""What the generated op namespaces (``raw_ops``, ``aten``, their ``oracle`` twins; tools/gen_public_api.py) call:
the framework's argument errors, the bound call run on a target or on the oracle, and the outputs packed as the
framework returns them (one array, or a namedtuple with its names)."""
from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import re

from . import ops as R
from .errors import QDQError, QDQTypeError
from .validation import bind


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


def tf_arguments(fn):
    """Wrap a generated raw op so that a wrong argument list is the QDQError ``validation.bind`` gives
    (naming the argument and the allowed ones, in TF's words where it has them), not Python's TypeError.
    A right one costs two set comparisons."""
    params = inspect.signature(fn).parameters
    ordered = tuple(params)
    names = frozenset(ordered)
    required = frozenset(n for n, p in params.items() if p.default is inspect.Parameter.empty)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        if args or not (required <= kwargs.keys() <= names):
            _argument_error(fn.__name__, args, kwargs, ordered)
        return fn(**kwargs)
    return checked


def _argument_error(op: str, args, kwargs, names: tuple):
    if args:
        raise QDQTypeError(f"{op} takes keyword arguments only, as tf.raw_ops.{op} does (got {len(args)} "
                           f"positional); arguments are: {', '.join(n for n in names if n != 'name')}")
    own = {"target", "semantics"} & set(names)   # this namespace's own keywords; anything else is the op's to judge
    bind(op, {k: v for k, v in kwargs.items() if k not in own})   # raises the unknown/missing argument's error
    raise QDQTypeError(f"{op}: arguments {sorted(kwargs)} do not fit {list(names)}")  # (bind always raised)


def aten_arguments(fn):
    """Wrap a generated aten op: positional calls as on ``torch.ops.aten``, or torch's keywords; a wrong argument
    list is a QDQTypeError naming the arguments, not Python's TypeError from inside."""
    sig = inspect.signature(fn)
    names = [n for n in sig.parameters]
    positional = [n for n, p in sig.parameters.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    required = [n for n in positional if sig.parameters[n].default is inspect.Parameter.empty]
    known = frozenset(names)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        # the common right call, in a few set operations; anything else through Signature.bind's words
        n = len(args)
        if n <= len(positional) and known.issuperset(kwargs) and not kwargs.keys() & set(positional[:n]) \
                and all(r in kwargs for r in required[n:]):
            return fn(*args, **kwargs)
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            quoted = re.search(r"'(\w+)'", str(e))   # the argument Python's message names, if any
            raise QDQTypeError(f"{fn.__name__}: {e}; arguments are: {', '.join(names)}",
                               arg=quoted.group(1) if quoted else None) from None
        return fn(*args, **kwargs)
    return checked


# ONNX's ops take their inputs positionally (or by ONNX's names) and their attributes by name: the same check;
# so do the MX functions (x and the element format positionally, the rest by name).
onnx_arguments = aten_arguments
mx_arguments = aten_arguments

_execute_run = None


def run_compiled(op: str, arguments: dict):
    """Validate and run ``op`` with a generated function's ``arguments`` (its locals: the op's inputs and
    attributes, ``name``, ``target``, ``semantics``). The executor is imported on the first call: importing
    the namespace loads no compiler machinery."""
    global _execute_run
    if _execute_run is None:
        from .execute import run as _execute_run
    kwargs = dict(arguments)
    target, semantics = kwargs.pop("target"), kwargs.pop("semantics")
    spec = R.get(op)
    if spec.namespace == "tf":
        return pack(op, _execute_run(bind(op, kwargs, semantics=semantics), target))
    # the framework's argument kinds (a Python float scale, 1-element tensors...) and result shapes
    with _naming(op):
        call = bind(op, spec.family.public_arguments(spec, kwargs), semantics=semantics)
        return pack(op, spec.family.public_results(spec, call, _execute_run(call, target)))


def run_oracle(op: str, arguments: dict):
    """Validate and compute ``op`` with the NumPy reference (``arguments`` as for run_compiled, no target)."""
    from .oracle import compute
    kwargs = dict(arguments)
    semantics = kwargs.pop("semantics")
    spec = R.get(op)
    if spec.namespace == "tf":
        return pack(op, compute(bind(op, kwargs, semantics=semantics)))
    with _naming(op):
        call = bind(op, spec.family.public_arguments(spec, kwargs), semantics=semantics)
        return pack(op, spec.family.public_results(spec, call, compute(call)))


@contextlib.contextmanager
def _naming(op: str):
    """A call's argument errors that name no op (an unknown target or semantics) start with the op's name, as
    every other error of the call does."""
    try:
        yield
    except (QDQTypeError, QDQError) as e:
        if e.op is not None or type(e) not in (QDQError, QDQTypeError):
            raise
        named = type(e)(str(e), op=op, arg=e.arg, reference=e.reference)   # str(e) holds the framework's words
        named.tf_message = e.tf_message
        raise named from None
