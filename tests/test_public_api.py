"""The public op namespaces are ordinary source (issue 22, item 6): generated from the registry, checked in,
current, and calling them wrongly is the QDQError every other bad input gets."""
import ast
import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError, QDQTypeError, ops

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("gen_public_api", ROOT / "tools" / "gen_public_api.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("namespace,kind", [("tf", "compiled"), ("tf", "oracle"), ("aten", "compiled"),
                                            ("aten", "oracle")])
def test_generated_namespace_is_current(namespace, kind):
    gen = _generator()
    path = gen.FILES[namespace, kind]
    assert path.read_text() == gen.render(namespace, kind), \
        f"{path.relative_to(ROOT)} is stale: run python tools/gen_public_api.py"


NAMESPACE_OF = {"qdq_compiler.raw_ops": "tf", "qdq_compiler.oracle.raw_ops": "tf", "qdq_compiler.aten": "aten",
                "qdq_compiler.oracle.aten": "aten"}


@pytest.mark.parametrize("module", [q.raw_ops, q.oracle.raw_ops, q.aten, q.oracle.aten, q.api],
                         ids=lambda m: m.__name__)
def test_every_public_function_is_a_def_in_the_source(module):
    """Editors and readers can follow every name: no globals().update, no names made at import."""
    tree = ast.parse(Path(module.__file__).read_text())
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    public = {n for n in vars(module) if not n.startswith("_") and callable(getattr(module, n))
              and getattr(getattr(module, n), "__module__", None) == module.__name__}
    assert public <= defined, sorted(public - defined)
    if module is not q.api:
        names = {n for n, spec in ops.OPS.items() if spec.namespace == NAMESPACE_OF[module.__name__]}
        assert set(module.__all__) == names <= defined


def test_every_tf_wrapper_the_registry_names_exists_and_calls_its_op():
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    for spec in ops.OPS.values():
        for name in spec.tf_wrappers:
            fn = getattr(q, name)
            assert name in q.__all__ and "target" in inspect.signature(fn).parameters
            assert spec.name in (fn.__doc__ or "") or spec.name[-2:] in (fn.__doc__ or ""), name
    assert np.array_equal(q.fake_quant_with_min_max_args(x, -1.0, 1.0, target="oracle"),
                          q.oracle.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, min=-1.0, max=1.0))


def test_wrong_argument_lists_are_qdq_errors_naming_the_argument():
    x = np.zeros(4, np.float32)
    with pytest.raises(QDQError, match="unknown argument 'foo'") as info:
        q.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, foo=1)
    assert info.value.arg == "foo"
    with pytest.raises(QDQError, match="missing required input 'max'"):
        q.oracle.raw_ops.FakeQuantWithMinMaxVars(inputs=x, min=np.float32(-1))
    with pytest.raises(QDQError, match="unknown argument 'target'"):
        q.oracle.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, target="cpu")
    with pytest.raises(QDQTypeError, match="keyword arguments only"):
        q.raw_ops.FakeQuantWithMinMaxArgs(x)
