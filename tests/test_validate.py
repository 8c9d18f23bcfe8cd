"""`qdqc validate`: the report formats, mismatch detection, sharding, and CUDA compiling everything."""
import json
import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from qdq_compiler import semantics as SEM
from qdq_compiler import cli, goldens, oracle, ops
from qdq_compiler import dtypes as DT
from qdq_compiler.jobs import validate as V
from qdq_compiler.jobs.validate.inputs import _shape_for
from qdq_compiler.execute import artifact_for, config_for_entry
from qdq_compiler.together import compile_together


def _run(tmp_path, *extra):
    paths = {k: tmp_path / f"r.{k}" for k in ("json", "xml", "md")}
    rc = cli.main(["validate", "--no-progress", "--report", str(paths["json"]), "--junit", str(paths["xml"]),
                   "--markdown", str(paths["md"]), *extra])
    return rc, json.loads(paths["json"].read_text()), ET.parse(paths["xml"]).getroot(), paths["md"].read_text()


def test_reports_agree_and_are_well_formed(tmp_path, capsys):
    rc, report, junit, md = _run(tmp_path, "--targets", "cpu,vmvx", "--ops", "FakeQuantWithMinMaxArgs",
                                 "--sizes", "300")
    assert rc == 0
    entries = V.build_matrix(["FakeQuantWithMinMaxArgs"])
    assert report["summary"]["cells"] == len(entries) * 2 == len(report["cells"])
    assert report["summary"]["failed"] == 0
    assert {c["status"] for c in report["cells"]} == {"exact"}
    assert {e.dtype for e in entries} == {"float16", "bfloat16", "float32"}
    assert all(c["cases"] > 0 for c in report["cells"])
    assert junit.tag == "testsuite" and int(junit.get("tests")) == len(entries) * 2
    assert int(junit.get("failures")) == 0 and len(junit.findall("testcase")) == len(entries) * 2
    assert "| configuration | numeric attributes | cases (goldens + random) | goldens run | cpu | vmvx |" in md
    for e in entries:
        assert f"`{e.name}`" in md
    out = capsys.readouterr().out
    assert "cells exact" in out and "FakeQuantWithMinMaxArgs:f32:dynamic" in out


def test_both_semantics_add_where_tfs_answers_differ_to_every_report(tmp_path, capsys):
    rc, report, junit, md = _run(tmp_path, "--targets", "cpu", "--ops", "FakeQuantWithMinMaxVars", "--dtypes", "f32",
                                 "--semantics", "tf-cpu,tf-xla", "--sizes", "2000")
    assert rc == 0 and report["summary"]["semantics"] == ["tf-cpu", "tf-xla"]
    div = report["divergence"]
    assert div["semantics"] == ["tf-cpu", "tf-xla"] and div["size"] == 2000
    assert any(r["differ"] > 0 and r["example"]["tf-cpu"] != r["example"]["tf-xla"] for r in div["rows"])
    # JUnit: the validation suite as before, and the divergence as a second suite of passing testcases
    assert junit.tag == "testsuites"
    validate_suite, diverge_suite = junit.findall("testsuite")
    assert validate_suite.get("name") == "qdqc-validate" and int(validate_suite.get("failures")) == 0
    assert diverge_suite.get("name") == "qdqc-diverge" and int(diverge_suite.get("tests")) == len(div["rows"])
    first = diverge_suite.find("testcase")
    props = {p.get("name"): p.get("value") for p in first.find("properties")}
    assert int(props["differ"]) == div["rows"][0]["differ"] and "max levels" in props
    assert "## Where TF's two answers differ" in md and "| max levels |" in md
    assert "TF's two answers differ on" in capsys.readouterr().out


def test_coverage_names_the_numeric_attributes_of_every_call():
    """Attributes that are tensors (V3's num_bits, per-channel ranges) are reported like attributes."""
    v3 = next(e for e in V.build_matrix(["QuantizeAndDequantizeV3"], ["float32"])
              if e.attr.get("axis") == 1 and e.attr.get("range_given") and not e.static)
    cases = V.bound_calls(v3, (64,), seed=3)
    cov = V.entry_coverage(v3, cases)
    assert cov["structural"] == {"axis": 1, "range_given": True} and cov["goldens"] + cov["random"] == len(cases)
    assert cov["random"] == 4 and cov["goldens"] == sum(c.golden for c in cases) > 0
    random_sets = {frozenset(a["attrs"].split()) for a in cov["attribute_sets"] if a["random"]}
    assert random_sets == {frozenset({"num_bits=8", "signed_input=true", "narrow_range=false"}),
                           frozenset({"num_bits=4", "signed_input=false", "narrow_range=false"}),
                           frozenset({"num_bits=3", "signed_input=true", "narrow_range=true"}),
                           frozenset({"num_bits=16", "signed_input=true", "narrow_range=false"})}
    assert all("input_min=[" in c and " values]" in c for c in cov["random_calls"])  # per channel


def test_a_mismatch_fails_the_run(tmp_path, monkeypatch):
    real = oracle.compute

    def off_by_one_ulp(call):
        outs = real(call)
        first = outs[0].copy()
        if first.size:
            u = first.reshape(-1).view(f"u{first.dtype.itemsize}")
            u[0] ^= 1
        return (first,) + outs[1:]

    monkeypatch.setattr(oracle, "compute", off_by_one_ulp)
    rc, report, junit, md = _run(tmp_path, "--targets", "cpu", "--ops", "FakeQuantWithMinMaxVars", "--sizes", "64")
    assert rc == 1
    assert report["summary"]["failed"] == report["summary"]["cells"] > 0
    assert all(c["status"] == "ulp" and c["max_ulp"] >= 1 for c in report["cells"])
    assert int(junit.get("failures")) == report["summary"]["cells"]
    assert "ulp" in md
    # Issue 29.2: the first failing case, in every report, with a command that reruns it
    cell = next(c for c in report["cells"] if c["entry"].endswith(":f32:dynamic"))
    first = cell["first_failure"]
    assert first["output"] == "outputs" and first["index"] == [0] and first["differ"] == 1
    assert first["expected"] != first["got"] and re.fullmatch(r"-?[\d.e+-]+ \(0x[0-9a-f]{8}\)", first["got"])
    assert "input" in first and "num_bits=" in first["attributes"]
    assert f"First: output outputs, 1 of {first['elements']} elements differ; at index [0], input " in cell["detail"]
    assert any(cell["detail"] == t.find("failure").text for t in junit.iter("testcase"))
    assert "## Mismatches and errors" in md and f"Rerun: `{cell['first_failure']['reproduce']}`" in md
    cmd = shlex.split(first["reproduce"])
    assert cmd[:3] == ["qdqc", "run", "FakeQuantWithMinMaxVars"] and "--target" in cmd
    monkeypatch.undo()
    assert cli.main(cmd[1:] + ["-o", str(tmp_path / "rerun.npy")]) == 0
    got = np.load(tmp_path / "rerun.npy").ravel()[0]
    assert f"(0x{got.view(np.uint32):08x})" in first["got"]   # the target's answer, rerun


def test_a_device_error_is_an_error_cell_and_the_run_goes_on(tmp_path, monkeypatch):
    """A call the device fails (on an H200, CUDA refused a zero-element call) is that cell's error, with
    IREE's status made readable and the call's shape; the other cells still run (the run crashed before)."""
    from qdq_compiler import execute

    def device_fails(call, target, static=False, out=None):
        raise ValueError("Error invoking function: c/runtime/src/iree/hal/drivers/cuda/stream_command_buffer"
                         ".c:601: INVALID_ARGUMENT; CUDA error 'CUDA_ERROR_INVALID_VALUE' (1): invalid argument")

    monkeypatch.setattr(execute, "run", device_fails)
    rc, report, junit, md = _run(tmp_path, "--targets", "cpu", "--ops", "FakeQuantWithMinMaxVars",
                                 "--dtypes", "f32", "--sizes", "64")
    assert rc == 1 and len(report["cells"]) == 2
    for cell in report["cells"]:
        assert cell["status"] == "error", cell
        assert cell["detail"].startswith("Error invoking function: INVALID_ARGUMENT; CUDA error") and \
            "(data " in cell["detail"] and ", float32)" in cell["detail"] and "stream_command_buffer" not in cell["detail"]
    assert int(junit.get("errors", 0)) + int(junit.get("failures", 0)) == len(report["cells"])


def test_shards_partition_the_matrix():
    full = V.build_matrix()
    shards = [V.shard(full, i, 4) for i in range(1, 5)]
    assert sorted(e.name for s in shards for e in s) == sorted(e.name for e in full)
    assert len({e.name for e in full}) == len(full)


def test_bad_shard_and_sizes_are_clear_errors(capsys):
    assert cli.main(["validate", "--shard", "5/4"]) == 2
    assert "--shard" in capsys.readouterr().err
    assert cli.main(["validate", "--sizes", "ten"]) == 2
    assert "--sizes" in capsys.readouterr().err


def test_a_run_that_compared_nothing_fails_and_says_why(tmp_path, capsys):
    """Issue 29.1: compile-only cells are "compiled", not "exact", and a run with no cell compared exits 1."""
    from qdq_compiler import targets as T
    ok, why = T.get("cuda").availability()
    if ok:
        pytest.skip("cuda runs here: the compile-only path needs a machine without it")
    rc, report, junit, md = _run(tmp_path, "--targets", "cuda", "--ops", "FakeQuantWithMinMaxArgs", "--dtypes", "f32",
                                 "--sizes", "64")
    assert rc == 1
    s = report["summary"]
    assert s["compared"] == 0 and s["exact"] == 0 and s["compiled_only"] == s["cells"] == 2
    out, err = capsys.readouterr()
    assert "0 of 0 cells exact" in out and "2 compiled, not run: cuda" in out and "targets skipped: cuda" in out
    assert "nothing was compared with the oracle" in err and why in err


def test_a_selection_with_no_configuration_is_an_error_naming_what_the_ops_take(capsys):
    assert cli.main(["validate", "--ops", "QuantizeAndDequantize", "--dtypes", "f16"]) == 2
    err = capsys.readouterr().err
    assert "no configuration to validate: QuantizeAndDequantize takes float32, float64 under tf-cpu (asked for " \
           "float16)" in err
    assert cli.main(["diverge", "--ops", "QuantizeAndDequantize"]) == 2
    assert "nothing to compare: QuantizeAndDequantize (V1) has no XLA lowering" in capsys.readouterr().err
    assert cli.main(["validate", "--ops", "FakeQuantWithMinMaxArgs", "--dtypes", "f32", "--shard", "3/3"]) == 2
    assert "shard 3/3 is empty: the matrix has 2 configurations" in capsys.readouterr().err


def test_cuda_compiles_one_configuration_of_every_kind():
    """No GPU here: CUDA is compiled for one configuration of each family x dtype class (float32, float64,
    16-bit) x semantics, chosen so that across each family every shape kind (dynamic, static), reduction
    (or none) and layout (per-tensor, per-axis) the matrix has is compiled at least once (a second where one
    group cannot hold them all: MX's static and dynamic).
    The whole sweep is one command away: qdqc validate --targets cuda --semantics tf-cpu,tf-xla
    (compile-only here; all 230 ran exact on an H200, benchmarks/results/validate_cuda_h200.md)."""
    width = {"float16": "16-bit", "bfloat16": "16-bit"}
    groups, seen = {}, set()
    every = tuple(SEM.names())
    for e in V.build_matrix(None, None, every):
        spec, a = ops.get(e.op), e.attr
        traits = {("static", e.static), ("reduces", spec.family.reduces(spec, a)), ("per-axis", a.get("axis", -1) != -1)}
        groups.setdefault((spec.family.name, width.get(e.dtype, e.dtype), e.semantics), []).append((e, traits))
    entries = []
    for (family, _, _), candidates in groups.items():
        # the candidate that brings this family the most traits not compiled yet
        e, traits = max(candidates, key=lambda c: len({(family, t) for t in c[1]} - seen))
        seen |= {(family, t) for t in traits}
        entries.append(e)
    wanted = {(ops.get(e.op).family.name, t) for e in V.build_matrix(None, None, every)
              for t in [("static", e.static), ("reduces", ops.get(e.op).family.reduces(ops.get(e.op), e.attr)),
                        ("per-axis", e.attr.get("axis", -1) != -1)]}
    for family, trait in sorted(wanted - seen):   # a family with one group (MX: one dtype, one semantics): a second
        e, traits = next(c for (f, _, _), cands in groups.items() if f == family for c in cands if trait in c[1])
        seen |= {(family, t) for t in traits}
        entries.append(e)
    assert seen == wanted, sorted(wanted - seen)
    assert {ops.get(e.op).family.name for e in entries} == {f.name for f in ops.FAMILIES}
    work = [config_for_entry(e, "cuda", _shape_for(e, 4096) if e.static else None) for e in entries]
    compile_together(work, jobs=2)   # many to a module, as qdqc validate compiles (a group that fails: alone below)
    with ThreadPoolExecutor(max_workers=2) as pool:
        arts = list(pool.map(artifact_for, work))
    assert len(arts) == len(entries) >= len(groups)
    assert all(a.vmfb[:16] and len(a.vmfb) > 1000 for a in arts)


def test_vmvx_reduces_over_16_bit_data_with_its_inputs_widened_on_the_host(tmp_path):
    """IREE 3.13's vmvx fails at run time on a reduction fed by the in-program i16 widening; its 16-bit
    programs that reduce take float32 inputs (Limits.narrow_reductions) and are exact."""
    rc, report, junit, md = _run(tmp_path, "--targets", "vmvx", "--ops", "FakeQuantWithMinMaxVarsGradient",
                                 "--dtypes", "bf16", "--sizes", "64")
    assert rc == 0
    (cell,) = report["cells"]
    assert cell["status"] == "exact" and cell["cases"] > 0


def test_default_targets_are_cpu_and_all_adds_every_available_one():
    from qdq_compiler import targets as T
    from qdq_compiler.errors import QDQError
    assert V.select_targets(None) == (["cpu"], {}, [])
    run, skipped, compile_only = V.select_targets(["all"])
    assert run[0] == "cpu" and compile_only == []
    assert set(run) | set(skipped) == set(T.TARGETS) - {"cpu-host"}
    assert set(run) == {n for n in T.TARGETS if n != "cpu-host" and T.get(n).availability()[0]}
    assert all(why for why in skipped.values())
    # A target named explicitly but missing here is still compiled (its compile failure is not hidden).
    missing = [n for n in T.TARGETS if not T.get(n).availability()[0]]
    if missing:
        assert V.select_targets(["cpu", missing[0]])[2] == [missing[0]]
    with pytest.raises(QDQError, match="'all' stands alone") as e:
        V.select_targets(["all", "cpu"])
    assert e.value.arg == "targets"


def test_16_bit_fakequant_cells_run_tfs_edge_cases_too():
    """Issue 29.10: FakeQuant's float16/bfloat16 cells ran 6 random cases and no TF case; under tf-cpu they now
    take goldens/half/ (TF's float32 kernel on the exact value of the rounded 16-bit inputs, each result
    rounded once): as many cases as the float32 cells, less the Args ranges float16 cannot hold."""
    for dt in ("f16", "bf16"):
        for op in ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVarsPerChannelGradient"):
            (entry,) = [e for e in V.build_matrix([op], [DT.get(dt).name]) if not e.static]
            cases = V.bound_calls(entry, (64,), seed=1)
            goldens = [c for c in cases if c.golden]
            assert len(goldens) >= 180, (entry.name, len(goldens))
            for c in goldens:
                x = c.call.arrays[ops.get(op).data_input]
                assert x.dtype == DT.get(dt).np
            specials = np.concatenate([np.asarray(c.call.arrays[ops.get(op).data_input], np.float32).ravel()
                                       for c in goldens])
            assert np.isnan(specials).any() and (specials == 0).any()   # TF's edge values among them


V4GRAD = "QuantizeAndDequantizeV4Grad"


def test_every_cell_says_how_many_golden_cases_it_ran(tmp_path, capsys):
    """Issue 47.4: per cell, the reference golden cases it ran, in the table and every report; a configuration
    that ran none says why (a static shape, or no golden file by design: V4Grad has no XLA kernel)."""
    rc, report, junit, md = _run(tmp_path, "--targets", "cpu", "--ops", V4GRAD, "--dtypes", "f32",
                                 "--semantics", "tf-cpu,tf-xla", "--sizes", "64")
    assert rc == 0
    f32 = [c for c in goldens.load(V4GRAD)["cases"] if "outputs" in c["expect"] and not c.get("deviation")
           and c["inputs"]["input"]["dtype"] == "float32"]
    want = {f"{V4GRAD}[axis=-1]:f32:dynamic": sum(c["attrs"].get("axis", -1) == -1 for c in f32),
            f"{V4GRAD}[axis=1]:f32:dynamic": sum(c["attrs"].get("axis", -1) >= 0 for c in f32)}
    assert list(want.values()) == [106, 21]
    entries = V.build_matrix([V4GRAD], ["float32"], ("tf-cpu", "tf-xla"))
    assert {c["entry"]: c["goldens"] for c in report["cells"]} == {e.name: want.get(e.name, 0) for e in entries}
    assert len(entries) == 8 and report["summary"]["goldens_run"] == 127
    assert "127 golden cases run" in report["summary"]["text"]
    cov = {e["entry"]: e for e in report["entries"]}
    assert cov[f"{V4GRAD}[axis=-1]:f32:dynamic"]["golden_file"] == f"goldens/{V4GRAD}.json"
    assert cov[f"{V4GRAD}[axis=-1]:f32:dynamic"]["no_goldens"] == ""
    xla_why = goldens.WITHOUT["tf-xla"][V4GRAD]
    assert cov[f"{V4GRAD}[axis=1]:f32:dynamic@tf-xla"]["no_goldens"] == xla_why and xla_why.startswith("TF has no XLA")
    assert cov[f"{V4GRAD}[axis=1]:f32:dynamic@tf-xla"]["golden_file"] is None
    static_why = "a static configuration runs random inputs at its one shape only"
    assert {n for n, e in cov.items() if e["no_goldens"] == static_why} == {e.name for e in entries if e.static}
    # the text table: a goldens column, and why the zeros
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[2].split() == ["configuration", "goldens", "cpu"]
    assert next(line for line in lines if line.startswith(f"{V4GRAD}[axis=1]:f32:dynamic ")).split()[1:] == ["21", "exact"]
    assert next(line for line in lines if line.startswith(f"{V4GRAD}[axis=1]:f32:dynamic@tf-xla ")).split()[1:] == \
        ["0", "exact"]
    assert f"0 goldens in 4 configurations ({V4GRAD}[axis=-1]:f32:static, ...): {static_why}" in lines
    assert f"0 goldens in 2 configurations ({V4GRAD}[axis=-1]:f32:dynamic@tf-xla, ...): {xla_why}" in lines
    # Markdown: the column, and the same reasons
    assert "| configuration | numeric attributes | cases (goldens + random) | goldens run | cpu |" in md
    assert f"| `{V4GRAD}[axis=-1]:f32:dynamic` | - | 106 + 1 | 106 | exact |" in md
    assert f"- 0 goldens in 2 configurations ({V4GRAD}[axis=-1]:f32:dynamic@tf-xla, ...): {xla_why}" in md
    assert f"(goldens: `goldens/{V4GRAD}.json`)" in md
    # JUnit: each testcase's properties
    props = {t.get("name"): {p.get("name"): p.get("value") for p in t.find("properties")} for t in junit.iter("testcase")}
    assert props[f"{V4GRAD}[axis=1]:f32:dynamic"]["goldens run"] == "21"
    assert props[f"{V4GRAD}[axis=1]:f32:dynamic"]["golden file"] == f"goldens/{V4GRAD}.json"
    assert props[f"{V4GRAD}[axis=1]:f32:dynamic@tf-xla"]["goldens run"] == "0"
    assert props[f"{V4GRAD}[axis=1]:f32:dynamic@tf-xla"]["no goldens"] == xla_why


def test_mx_configurations_run_no_golden_case_and_say_why():
    """OCP MX is a text and torchao's goldens are per block (tests/test_mx*.py): 0 by design, with the reason."""
    for sem in ("ocp", "torchao"):
        entry = next(e for e in V.build_matrix(["MXFakeQuantize"], ["float32"], (sem,)) if not e.static)
        cov = V.entry_coverage(entry, V.bound_calls(entry, (64,), seed=0))
        assert cov["goldens"] == 0 and cov["random"] > 0 and cov["golden_file"] is None
        assert cov["no_goldens"] == goldens.WITHOUT[sem]["*"] == goldens.none_because("MXFakeQuantize", sem)


def test_a_missing_golden_file_is_an_error_naming_it(tmp_path, monkeypatch, capsys, no_compile):
    """A wheel without the ONNX goldens said "64 of 64 cells exact", having run none: a declared golden file that
    is missing is an error naming it, before anything compiles; the files still there are read as before."""
    from qdq_compiler.errors import QDQError
    copy = tmp_path / "goldens"
    shutil.copytree(goldens.DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    gone = [copy / "onnx" / "QuantizeLinear.json", copy / "half" / "FakeQuantWithMinMaxVars.json"]
    for f in gone:
        f.unlink()
    monkeypatch.setattr(goldens, "DIR", copy)
    assert cli.main(["validate", "--no-progress", "--ops", "QuantizeLinear", "--semantics", "onnx", "--dtypes", "f32",
                     "--sizes", "64"]) == 2
    assert f"qdqc: error: golden file missing: {gone[0]} (declared in qdq_compiler/goldens" in capsys.readouterr().err
    # where a cluster worker binds the calls, and a 16-bit file (half/)
    for op, sem, dt, f in (("QuantizeLinear", "onnx", "float32", gone[0]),
                           ("FakeQuantWithMinMaxVars", "tf-cpu", "float16", gone[1])):
        entry = next(e for e in V.build_matrix([op], [dt], (sem,)) if not e.static)
        with pytest.raises(QDQError, match=re.escape(f"golden file missing: {f} ")) as e:
            V.bound_calls(entry, (16,), seed=0)
        assert e.value.arg == "goldens"
    # onnxruntime's copy is still there, and read from the copy
    entry = next(e for e in V.build_matrix(["QuantizeLinear"], ["float32"], ("ort-cpu",)) if not e.static)
    cases = V.bound_calls(entry, (16,), seed=0)
    assert V.entry_coverage(entry, cases)["golden_file"] == "goldens/onnx/ort/QuantizeLinear.json"
    assert sum(c.golden for c in cases) > 0
