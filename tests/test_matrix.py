"""The validation matrix as pytest items, one per configuration x target (spread with `pytest -n auto`).

A target missing on the machine is skipped with the reason, never silently. The golden inputs are
checked per target by test_compiled_goldens.py; here each cell runs random inputs under several
attribute sets: dynamic shapes at 1000 elements, static shapes (f32) at 4096.
"""
import pytest

from qdq_compiler import ops, targets
from qdq_compiler.config import layout_of
from qdq_compiler.jobs import validate as V

from targets_util import RUN_TARGETS, require
import tiers

# tf-cpu in float32/float64 every cell; the 16-bit FakeQuant cells one configuration in six (each is also
# run on every target by tests/test_semantics.py for all 65536 patterns, and by `qdqc validate`); tf-xla is
# checked against TF's XLA goldens by tests/test_xla_goldens.py.
_ALL = V.build_matrix()
ENTRIES = [e for e in _ALL if e.dtype in ("float32", "float64")] + \
    [e for e in _ALL if e.dtype not in ("float32", "float64")][::6]


def _static_kind(entry):
    spec = ops.get(entry.op)
    return spec.family.name, spec.family.reduces(spec, entry.attr), layout_of(spec, entry.attr)


# Static shapes compile an artifact per shape and share the dynamic programs' templates: every static cell
# runs on cpu; on the other targets one per family x (reduces or not) x layout (flat, last, axis), the forms
# whose lowering differs (loop bounds, reductions in blocks). Every static cell on every target: `qdqc
# validate --targets all` (its matrix has them all).
_STATIC_SAMPLE = set({_static_kind(e): e for e in reversed(ENTRIES) if e.static}.values())


CELLS = [(e, t) for e in ENTRIES for t in RUN_TARGETS if not (e.static and t != "cpu" and e not in _STATIC_SAMPLE)]
IDS = [f"{e.name}-{t}" for e, t in CELLS]
# The CI tier runs one cell in 3 (tests/tiers.py); the full tier every one.
EVERY = 3
KEPT = {c for c, i in zip(CELLS, IDS) if i in tiers.kept_ids(IDS, EVERY)}


@pytest.fixture(scope="module", autouse=True)
def _compiled_together():
    """The cells' artifacts, many to a module, before the cells run: as `qdqc validate` compiles them
    (jobs/validate/run.precompile). Under xdist each worker asks for the same modules, and the cache's lock lets
    one compile each while the other waits and loads it."""
    from qdq_compiler.jobs.validate.run import precompile
    here = [t for t in RUN_TARGETS if targets.get(t).availability()[0]]
    for static, sizes in ((True, (4096,)), (False, (1000,))):
        entries = [e for e in ENTRIES if e.static == static]
        cases = {e.name: V.bound_calls(e, sizes, 7, goldens=False) for e in entries}
        for t in here:
            mine = [e for e in entries if (e, t) in KEPT]
            precompile(mine, [t], sizes, 1, "off", {e.name: cases[e.name] for e in mine})


@pytest.mark.sample(every=EVERY)
@pytest.mark.parametrize("entry,target", CELLS, ids=IDS)
def test_configuration_is_exact(entry, target):
    require(target)
    sizes = (4096,) if entry.static else (1000,)
    cell = V.run_cell(entry, target, sizes, seed=7, goldens=False)
    assert cell.status in ("exact", "skipped"), f"{cell.status}: {cell.detail}"
    assert cell.status == "skipped" or cell.cases > 0
