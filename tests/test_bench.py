"""``qdqc bench`` runs end to end on tiny sizes and produces the table and the JSON (no timing assertions:
timings are ratios within one run, never thresholds)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qdq_compiler import runtime
from qdq_compiler import raw_ops
from qdq_compiler.cli import main as cli_main
from qdq_compiler.jobs import bench
from qdq_compiler.jobs.bench.cases import make_inputs, select_cases
from qdq_compiler.jobs.bench.measure import check_exact, variant_functions
from qdq_compiler.oracle import raw_ops as oracle
from qdq_compiler.numerics import bit_equal

CHECK_GOALS = Path(__file__).resolve().parent.parent / "benchmarks" / "check_goals.py"
ROW_KEYS = {"case", "op", "attrs", "kind", "log2n", "elements", "variant", "target", "driver", "median_s", "min_s",
            "runs", "bytes", "gbps", "ratio_to_copy", "exact"}


def test_cli_bench_writes_table_and_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = cli_main(["bench", "--ops", "FakeQuantWithMinMaxArgs,QuantizeAndDequantizeV4Grad", "--sizes", "4,6",
                   "--repeat", "2", "--json", str(out)])
    assert rc == 0
    table = capsys.readouterr().out
    assert "x copy" in table and "GB/s" in table and "copy bandwidth" in table
    assert "FakeQuantWithMinMaxArgs" in table and "QuantizeAndDequantizeV4Grad" in table
    assert "goals" not in table and "MISS" not in table   # internal goals: benchmarks/check_goals.py
    res = json.loads(out.read_text())
    assert {"machine", "config", "results", "latency"} <= set(res)
    assert res["config"]["sizes_log2"] == [4, 6]
    rows = res["results"]
    for r in rows:
        assert ROW_KEYS <= set(r), set(ROW_KEYS) - set(r)
        assert r["median_s"] > 0 and r["gbps"] > 0 and r["ratio_to_copy"] > 0
    variants = {(r["case"], r["log2n"], r["variant"], r["target"]) for r in rows}
    for case in ("FakeQuantWithMinMaxArgs", "QuantizeAndDequantizeV4Grad"):
        for k in (4, 6):
            for v, t in (("copy", "-"), ("api", "cpu"), ("device", "cpu"), ("oracle", "-")):
                assert (case, k, v, t) in variants
    assert all(r["exact"] is True for r in rows if r["variant"] == "api")
    assert all(r["ratio_to_copy"] == 1.0 for r in rows if r["variant"] == "copy")
    assert any(lat["variant"] == "api" and lat["elements"] == 16 for lat in res["latency"])
    assert res["machine"]["copy_gbps"] > 0
    p = subprocess.run([sys.executable, str(CHECK_GOALS), str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "16-element call (us)" in p.stdout and "no results at 2^24" in p.stderr


def test_plot_without_matplotlib_is_skipped_with_a_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    res = bench.run_bench(bench.select_cases("FakeQuantWithMinMaxVars"), ["cpu"], [4], repeat=1, tf=False,
                          latency=False)
    assert not bench.plot(res, str(tmp_path / "b.png"))
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert not (tmp_path / "b.png").exists()


def test_plot_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    res = bench.run_bench(bench.select_cases("FakeQuantWithMinMaxArgs"), ["cpu"], [4, 6], repeat=1, tf=False,
                          latency=False)
    assert bench.plot(res, str(tmp_path / "b.png"))
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_gives_every_series_its_own_colour():
    matplotlib = pytest.importorskip("matplotlib")
    from qdq_compiler.jobs.bench import report
    rows = [{"variant": v, "target": t} for v in ("copy", "oracle", "tf") for t in ("-",)] + \
        [{"variant": v, "target": t} for v in ("api", "device") for t in ("cpu", "cpu-host", "vmvx", "vulkan", "cuda")]
    series = report._series(rows)
    assert series[0] == ("copy", "-") and len(series) == 13
    colors = report._colors(series, matplotlib.colormaps["turbo"])
    assert len({matplotlib.colors.to_hex(c) for c in colors.values()}) == len(series)


def test_check_goals_reads_a_bench_json(tmp_path):
    def row(case, kind, median, ratio, range_from="given", variant="api", target="cpu", op=None):
        return {"case": case, "op": op or case, "kind": kind, "range_from": range_from, "log2n": 24,
                "variant": variant, "target": target, "median_s": median, "ratio_to_copy": ratio}
    res = {"config": {"sizes_log2": [24]},
           "results": [row("A", "per-tensor", 1.0, 1.2), row("A", "per-tensor", 3.0, 3.6, variant="tf", target="-"),
                       row("B", "per-tensor", 1.0, 2.5, "data"), row("B", "per-tensor", 1.5, 2.0, "data", "tf", "-"),
                       row("C", "per-channel", 1.5, 1.4),
                       row("G", "gradient", 1.0, 1.4, op="FakeQuantWithMinMaxVarsGradient"),
                       row("H", "gradient", 1.0, 1.1, op="QuantizeAndDequantizeV4Grad")],
           "latency": [{"case": "A", "variant": "api", "target": "cpu", "median_us": 31.0}]}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(res))
    p = subprocess.run([sys.executable, str(CHECK_GOALS), str(path)], capture_output=True, text=True)
    assert p.returncode == 0 and not p.stderr, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("goals (issue 13) at 2^24")
    got = [(ln.split()[0], ln.split()[1]) for ln in lines[1:]]
    assert got == [("met", "given"), ("met", "faster"), ("MISS", "range"), ("MISS", "faster"), ("MISS", "given"),
                   ("met", "gradient"), ("MISS", "gradient"), ("MISS", "16-element")]
    assert "goal >= 2" in lines[2] and "3.00" in lines[2]
    assert subprocess.run([sys.executable, str(CHECK_GOALS), str(path), "--strict"]).returncode == 1


def test_bench_rejects_bad_arguments():
    assert cli_main(["bench", "--sizes", "x"]) == 2
    assert cli_main(["bench", "--ops", "NoSuchOp", "--sizes", "4"]) == 2
    assert cli_main(["bench", "--targets", "nosuch", "--sizes", "4"]) == 2
    assert cli_main(["bench", "--frameworks", "jax", "--sizes", "4"]) == 2
    assert bench.parse_frameworks("none") == () and bench.parse_frameworks("torch,tf,torch") == ("torch", "tf")


def test_every_default_case_builds_valid_inputs():
    from qdq_compiler.oracle import compute
    from qdq_compiler.validation import bind
    for case in bench.CASES:
        kw = bench.make_inputs(case, 1 << 8)   # the public arguments, converted as the namespace's functions do
        compute(bind(case.op, case.spec.family.public_arguments(case.spec, dict(kw)), semantics=case.semantics))


# -- the runtime's zero-copy paths (what the benchmark's api variant exercises) ----------------------

def test_large_results_are_views_that_keep_their_buffer():
    x = np.linspace(-3, 3, 1 << 15, dtype=np.float32)
    want = oracle.FakeQuantWithMinMaxArgs(inputs=x)
    ys = [raw_ops.FakeQuantWithMinMaxArgs(inputs=x) for _ in range(3)]
    base = ys[0]
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    assert isinstance(base, runtime._Keep)            # zero-copy: the array owns the IREE buffer
    for _ in range(5):                                # more calls: the pool must not reuse a live buffer
        raw_ops.FakeQuantWithMinMaxArgs(inputs=-x)
    for y in ys:
        assert bit_equal(y, want) and y.flags.writeable
    ys[0][:] = 0                                       # results are independent arrays
    assert bit_equal(ys[1], want)


def test_unaligned_and_readonly_inputs():
    buf = np.linspace(-3, 3, (1 << 15) + 1, dtype=np.float32)
    x = buf[1:]                                        # 4-byte aligned: copied to aligned memory first
    assert x.ctypes.data % 16
    assert bit_equal(raw_ops.FakeQuantWithMinMaxArgs(inputs=x), oracle.FakeQuantWithMinMaxArgs(inputs=x))
    r = buf[:-1].copy()
    r.setflags(write=False)
    assert bit_equal(raw_ops.FakeQuantWithMinMaxArgs(inputs=r), oracle.FakeQuantWithMinMaxArgs(inputs=r))


def test_out_argument_writes_in_place():
    from qdq_compiler.execute import run
    from qdq_compiler.validation import bind
    x = np.linspace(-3, 3, 1 << 14, dtype=np.float32).reshape(128, 128)
    call = bind("FakeQuantWithMinMaxVarsGradient", dict(gradients=np.ones_like(x), inputs=x, min=np.float32(-1),
                                                        max=np.float32(1)))
    out = np.empty_like(x)
    got = run(call, "cpu", out=out)
    assert got[0] is out
    for g, w in zip(got, oracle.FakeQuantWithMinMaxVarsGradient(gradients=np.ones_like(x), inputs=x,
                                                               min=np.float32(-1), max=np.float32(1))):
        assert bit_equal(g, w)


def test_local_task_gives_the_same_bits(monkeypatch):
    monkeypatch.setenv("QDQ_TASK_THRESHOLD", "1024")   # every input of >= 1 KiB runs on local-task
    x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32) * 3
    for op, kw in [("FakeQuantWithMinMaxArgs", dict(inputs=x)),
                   ("QuantizeAndDequantizeV4", dict(input=x, input_min=np.float32(0), input_max=np.float32(0))),
                   ("FakeQuantWithMinMaxVarsPerChannel", dict(inputs=x.reshape(-1, 64), min=np.full(64, -1, np.float32),
                                                              max=np.full(64, 2, np.float32)))]:
        assert bit_equal(getattr(raw_ops, op)(**kw), getattr(oracle, op)(**kw)), op


def test_bench_module_runs_as_a_script(tmp_path):
    out = tmp_path / "b.json"
    p = subprocess.run([sys.executable, "-m", "qdq_compiler", "bench", "--ops", "FakeQuantWithMinMaxArgs",
                        "--sizes", "4", "--repeat", "1", "--json", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["results"]


def _stand_in(tmp_path, monkeypatch, package: str, python_env: str, source: str):
    """A stand-in framework package for the bench's child process (this Python, the package first on its path);
    its calls write to the returned log (STAND_IN_LOG)."""
    fake = tmp_path / "site" / package
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(source)
    log = tmp_path / f"{package}.log"
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    monkeypatch.setenv(python_env, sys.executable)
    return log


def test_pytorch_is_timed_in_a_process_of_its_own(tmp_path, monkeypatch):
    """PyTorch runs in a child process (torch_child.py, by QDQ_BENCH_TORCH_PYTHON or this Python) on as many
    threads as there are cores, its nearest op on the case's data and 8-bit range; its rows are "torch" (NumPy
    round trip) and "torch-op" (the op alone on a resident tensor). A stand-in "torch" package (NumPy's
    fake quantization, every call logged) proves the wiring without PyTorch."""
    from qdq_compiler.jobs.bench import torch_process
    log = _stand_in(tmp_path, monkeypatch, "torch", torch_process.TORCH_PYTHON_ENV,
        "import json, os, numpy as np\n"
        "__version__ = 'stand-in'\n"
        "_threads = [1]\n"
        "def set_num_threads(n): _threads[0] = n\n"
        "def get_num_threads(): return _threads[0]\n"
        "class _T:\n"
        "    def __init__(self, a): self.a = np.asarray(a)\n"
        "    def numpy(self): return self.a\n"
        "def from_numpy(a): return _T(a)\n"
        "def _log(*v): open(os.environ['STAND_IN_LOG'], 'a').write(json.dumps(v) + '\\n')\n"
        "def _fq(x, s, z): return (np.clip(np.round(x / s) + z, 0, 255) - z) * s\n"
        "def fake_quantize_per_tensor_affine(t, s, z, qmin, qmax):\n"
        "    _log('per-tensor', s, z, qmin, qmax)\n"
        "    return _T(_fq(t.a, s, z))\n"
        "def fake_quantize_per_channel_affine(t, s, z, axis, qmin, qmax):\n"
        "    _log('per-channel', len(s.a), axis, qmin, qmax)\n"
        "    return _T(_fq(t.a, s.a, z.a))\n")
    cases = bench.select_cases("FakeQuantWithMinMaxArgs,FakeQuantWithMinMaxVarsPerChannel,"
                               "QuantizeAndDequantizeV4Grad")
    res = bench.run_bench(cases, ["cpu"], [8], repeat=2, tf=False, torch=True, latency=False)
    torch_rows = [r for r in res["results"] if r["variant"].startswith("torch")]
    assert {(r["case"], r["variant"]) for r in torch_rows} == {(c, v) for c in ("FakeQuantWithMinMaxArgs",
            "FakeQuantWithMinMaxVarsPerChannel") for v in ("torch", "torch-op")}   # V4Grad: none
    assert all(r["own_process"] and r["runs"] == 2 and r["torch_threads"] == os.cpu_count() for r in torch_rows)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    per_tensor = next(c for c in calls if c[0] == "per-tensor")
    assert per_tensor[1] == pytest.approx(3.5 / 255) and per_tensor[2:] == [109, 0, 255]   # Args [-1.5, 2]
    assert next(c for c in calls if c[0] == "per-channel")[1:] == [bench.cases.CHANNELS, 1, 0, 255]
    assert res["machine"]["torch"] == "stand-in" and res["config"]["torch"] is True
    table = bench.format_table(res)
    assert f"PyTorch stand-in ({os.cpu_count()} threads)" in table
    side = table[table.index("side by side"):]
    assert "torch" in side and "ours faster" in side
    line = next(s for s in side.splitlines() if s.startswith("FakeQuantWithMinMaxArgs 2^8"))
    assert line.rstrip().endswith("x")
    monkeypatch.setenv(torch_process.TORCH_PYTHON_ENV, str(tmp_path / "no-python"))
    assert "is not an executable Python" in torch_process.measure("per-tensor", np.zeros(4, np.float32), -1, 1,
                                                                  1)["error"]


def test_a_vulkan_bench_opens_the_device_once_and_times_no_reopening(monkeypatch):
    """Issue 29.11: the Vulkan device closes after 1 s idle; the bench keeps it open, so no timed call
    pays for reopening it (tens of ms at 2^10)."""
    from qdq_compiler import device_sessions as D
    from qdq_compiler import targets as T
    ok, why = T.get("vulkan").availability()
    if not ok:
        pytest.skip(f"target vulkan unavailable: {why}")
    monkeypatch.setenv("QDQ_DEVICE_IDLE_S", "0.05")   # closes at once when idle
    D.close("vulkan")
    before = D.opened.get("vulkan", 0)
    # 10 calls a latency batch, not 200: every call's time is what a device reopened between batches would
    # show, and 1,000 Vulkan calls took 35-48 s of CI beside the other worker.
    res = bench.run_bench(bench.select_cases("FakeQuantWithMinMaxArgs"), ["vulkan"], [4, 6], repeat=3, tf=False,
                          torch=False, latency=True, latency_calls=10)
    assert D.opened.get("vulkan", 0) == before + 1
    assert {r["variant"] for r in res["results"] if r["target"] == "vulkan"} == {"api", "device"}


def test_cases_under_each_semantics_named_and_without_frameworks():
    """`qdqc bench --semantics tf-cpu,tf-xla` times every case under both (issue 22: tf-xla beside tf-cpu);
    TF runs under tf-xla as XLA (issue 30), except where XLA has no kernel; PyTorch beside tf-cpu only."""
    cases = bench.select_cases("FakeQuantWithMinMaxVars,FakeQuantWithMinMaxVarsPerChannel", ("tf-cpu", "tf-xla"))
    names = [c.name for c in cases]
    assert names == ["FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVars@tf-xla",
                     "FakeQuantWithMinMaxVarsPerChannel@tf-xla"]
    xla = [c for c in cases if c.semantics == "tf-xla"]
    assert all(c.tf and c.torch is None for c in xla) and xla[1].compare_to == "FakeQuantWithMinMaxVars@tf-xla"
    assert not bench.select_cases("QuantizeAndDequantizeV4Grad", ("tf-xla",))[0].tf   # no XLA kernel
    assert bench.select_cases("QuantizeAndDequantize", ("tf-xla",)) == []   # V1 has no XLA lowering
    mx = [c.name for c in bench.select_cases("MXFakeQuantize", ("ocp", "torchao"))]   # torchao: no stochastic rounding
    assert "MXFakeQuantize[mxfp4_e2m1,stochastic]" in mx and "MXFakeQuantize[mxfp4_e2m1,stochastic]@torchao" not in mx
    rows = bench.measure_case(xla[0], 6, ["cpu"], 1, frameworks=())
    assert {r["variant"] for r in rows} >= {"api", "device", "oracle"}
    assert [r["exact"] for r in rows if r["variant"] == "api"] == [True]   # checked against the tf-xla oracle


def test_tensorflow_is_timed_in_a_process_of_its_own(tmp_path, monkeypatch):
    """TF runs in a child process (tf_child.py, by QDQ_BENCH_TF_PYTHON or this Python), on resident tensors,
    eagerly for tf-cpu and in jit_compile=True for tf-xla; its rows are "tf" (NumPy round trip) and "tf-op".
    Here a stand-in "tensorflow" package (raw_ops.FakeQuantWithMinMaxVars = NumPy's clip, a tf.function that
    records jit_compile) proves the wiring without TensorFlow."""
    from qdq_compiler.jobs.bench import tf_process
    log = _stand_in(tmp_path, monkeypatch, "tensorflow", tf_process.TF_PYTHON_ENV,
        "import numpy as np, os\n"
        "__version__ = 'stand-in'\n"
        "class _T:\n"
        "    def __init__(self, v): self.v = np.asarray(v)\n"
        "    def numpy(self): return self.v\n"
        "def constant(v): return _T(v)\n"
        "class config:\n"
        "    class threading:\n"
        "        n = [0]\n"
        "        @staticmethod\n"
        "        def set_intra_op_parallelism_threads(k): config.threading.n[0] = k\n"
        "        @staticmethod\n"
        "        def get_intra_op_parallelism_threads(): return config.threading.n[0]\n"
        "def function(f, jit_compile=False):\n"
        "    open(os.environ['STAND_IN_LOG'], 'a').write(str(jit_compile))\n"
        "    return f\n"
        "class raw_ops:\n"
        "    @staticmethod\n"
        "    def FakeQuantWithMinMaxVars(inputs, min, max, num_bits=8, narrow_range=False):\n"
        "        return _T(np.clip(inputs.v, min.v, max.v))\n")
    case = bench.select_cases("FakeQuantWithMinMaxVars", ("tf-cpu", "tf-xla"))
    for c, jit in zip(case, ("", "True")):
        log.write_text("")
        logged = []
        rows = bench.measure_case(c, 6, ["cpu"], 2, frameworks=("tf",), log=logged.append)
        tf_rows = {r["variant"]: r for r in rows if r["variant"].startswith("tf")}
        assert set(tf_rows) == {"tf", "tf-op"}, logged
        assert all(r["own_process"] and r["runs"] == 2 and r["tf_threads"] == os.cpu_count() for r in tf_rows.values())
        assert tf_rows["tf"]["driver"] == ("xla" if jit else "eager") and log.read_text() == jit
    monkeypatch.setenv(tf_process.TF_PYTHON_ENV, str(tmp_path / "no-python"))
    assert "is not an executable Python" in tf_process.measure("FakeQuantWithMinMaxVars", "tf-cpu", {}, (), 1)["error"]


def test_a_case_name_with_a_comma_can_be_selected():
    """Case names carry their attributes in brackets, some with a comma; --ops splits outside brackets only."""
    got = [c.name for c in bench.select_cases("QuantizeAndDequantizeV4[from data,axis],FakeQuantWithMinMaxArgs")]
    assert got == ["QuantizeAndDequantizeV4[from data,axis]", "FakeQuantWithMinMaxArgs"]


@pytest.mark.parametrize("name", ["_fake_quantize_learnable_per_tensor_affine_backward",
                                  "_fake_quantize_learnable_per_channel_affine_backward[axis=1]"])
def test_exactness_check_frees_a_sums_order_and_nothing_else(name):
    """check_exact: another summation order's rounding is exact (policy 6: measured on CUDA, whose sums run in
    another order than PyTorch's), a sum off by more than its bound is not, nor is any other changed bit."""
    case = next(c for c in select_cases(None, semantics=("torch-cpu",)) if c.name == name)
    kw = make_inputs(case, 1 << 10)
    want = variant_functions(case, kw, [], frameworks=())[("oracle", "-")]()
    ulp = lambda a: np.nextafter(a, np.float32(np.inf)).astype(a.dtype)
    assert check_exact(case, want, want, kw)
    assert check_exact(case, (want[0], ulp(want[1]), want[2]), want, kw)
    assert not check_exact(case, (want[0], (want[1] * np.float32(1.01) + 1).astype(np.float32), want[2]), want, kw)
    assert not check_exact(case, (ulp(want[0]), want[1], want[2]), want, kw)


def test_machine_load_marks_a_case_timed_beside_other_work():
    """Other processes' CPU is the machine's non-idle time less this process's own, per wall second; a case run
    beside more than BUSY_CORES of it is marked, in the JSON and with a '*' and a footnote in the table."""
    from qdq_compiler.jobs.bench import machine_load as ML
    from qdq_compiler.jobs.bench.report import format_table
    a = ML.Sample(wall=0.0, busy_s=10.0, steal_s=1.0, own_s=2.0, load=0.5)
    quiet = ML.between(a, ML.Sample(wall=1.0, busy_s=11.5, steal_s=1.0, own_s=3.5, load=1.4))
    assert quiet["others_cores"] == 0.0 and quiet["steal_cores"] == 0.0 and not quiet["busy"]
    busy = ML.between(a, ML.Sample(wall=1.0, busy_s=11.9, steal_s=1.1, own_s=3.5, load=1.9))
    assert busy["others_cores"] == 0.4 and busy["steal_cores"] == 0.1 and busy["busy"]
    assert busy["load_before"] == 0.5 and busy["load_after"] == 1.9
    assert not ML.between(a, ML.Sample(1.0, None, None, 3.0, None))["busy"]   # no /proc/stat: unknown, unmarked
    live = ML.between(ML.sample(), ML.sample())
    assert set(live) == {"seconds", "others_cores", "steal_cores", "load_before", "load_after", "busy"}

    def row(variant, load):
        return {"case": "A", "log2n": 24, "variant": variant, "target": "cpu", "driver": "local-task", "median_s": 0.01,
                "min_s": 0.005, "p90_s": 0.012, "gbps": 10.0, "ratio_to_copy": 2.0, "exact": None, "machine_load": load}
    res = {"machine": {"machine": "x86_64", "cpus": 2, "numpy": "2"}, "config": {},
           "results": [row("copy", busy), row("device", busy)], "latency": []}
    table = format_table(res)
    assert "10.000 ms*" in table and "5.000 ms" in table and "2.40" in table   # p90 / min
    assert "more than 0.25 of a core on average (up to 0.50 here): 1 case(s)" in table
    res["results"] = [row("copy", quiet), row("device", quiet)]
    assert "*" not in format_table(res)
