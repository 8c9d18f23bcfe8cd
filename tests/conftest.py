import os
import pytest
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiers  # noqa: E402  (tests/tiers.py, on the path just above)
# Tests share one artifact cache per run unless the caller set one.
os.environ.setdefault("QDQ_CACHE_DIR", str(Path(__file__).resolve().parent.parent / ".qdq_cache"))
# One lavapipe thread per test process (tools/run_tests.py says why), unless the caller chose.
os.environ.setdefault("LP_NUM_THREADS", "1")

# The longest tests start first (their CI times on 2 cores, in order), so that the two workers finish
# together instead of one running a long test alone at the end: pytest-xdist hands tests out in collection
# order, round robin. Order only: every test still runs.
LONGEST_FIRST = (
    "tests/test_onnx.py::test_goldens[QuantizeDequantizeLinear-cpu]",                               # 110 s (cold)
    "tests/test_compiled_goldens.py::test_compiled_matches_tf[vulkan]",                             # 67-94 s
    "tests/test_onnx.py::test_goldens[QuantizeLinear-cpu]",                                         # 71 s
    "tests/test_onnx.py::test_goldens[DequantizeLinear-cpu]",                                       # 59 s
    "tests/test_readme.py::test_readme_blocks_run_as_written",                                      # 34-52 s
    "tests/test_compiled_goldens.py::test_compiled_matches_tf[cpu]",                                # 47-57 s
    "tests/test_compiled_goldens.py::test_compiled_matches_tf[vmvx]",                               # 31-39 s
    "tests/test_onnx.py::test_goldens[",                                                            # 16-42 s each
    "tests/test_xla_goldens.py::test_compiled_matches_xla[vmvx-QuantizeAndDequantize-bfloat16-all]",  # 30 s
    "tests/test_xla_goldens.py::test_compiled_matches_xla[cpu-QuantizeAndDequantize-float32-all]",    # 29 s
    "tests/test_bench.py::test_a_vulkan_bench_opens_the_device_once_and_times_no_reopening",        # 18-35 s
    "tests/test_xla_goldens.py::test_compiled_matches_xla[vulkan-",                                 # 14-20 s each
    "tests/test_compiled_goldens.py::test_compiled_matches_tf_in_16_bit[",                          # 4-9 s each
    "tests/test_validate.py::test_cuda_compiles_one_configuration_of_every_kind",                   # 10 s
)


def pytest_configure(config):
    config.addinivalue_line("markers", "sample(every, only=None): the CI tier runs one in `every` of this test's cases "
                                       "(tests/tiers.py); the full tier runs all")


def pytest_report_header(config):
    return (f"test tier: {tiers.tier()} ({tiers.TIER_VARIABLE}; the full tier: python tools/run_tests.py --full)")


def _sampled_out(items):
    """The CI tier's sample of each test marked ``sample(every=N)`` (tests/tiers.py): the first case of each test
    function and those whose parameter id hashes to 0 mod N."""
    if tiers.full():
        return []
    first, out = set(), []
    for item in items:
        mark = item.get_closest_marker("sample")
        if mark is None:
            continue
        every = mark.kwargs.get("every", mark.args[0] if mark.args else 1)
        function = item.nodeid.split("[", 1)[0]
        param = item.nodeid[len(function):]
        if function not in first:
            first.add(function)
            continue
        if not tiers.sampled(param, mark.kwargs.get("only")):
            continue
        if not tiers.kept(param, every):
            out.append(item)
    return out


def pytest_collection_modifyitems(config, items):
    out = _sampled_out(items)
    if out:
        dropped = set(map(id, out))
        items[:] = [item for item in items if id(item) not in dropped]
        config.hook.pytest_deselected(items=out)

    def rank(item):
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))
    items.sort(key=rank)   # stable: the rest keep their order


@pytest.fixture
def no_compile(monkeypatch):
    """Bad input must be rejected before anything is rendered or compiled (test_bad_input, test_aten_bad_input)."""
    from qdq_compiler import compile as C

    def refuse(*a, **k):
        raise AssertionError("compiled for bad input")
    monkeypatch.setattr(C, "compile_mlir", refuse)
    monkeypatch.setattr(C, "cached_compile", refuse)
