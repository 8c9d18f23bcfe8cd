"""``qdqc`` with bad input (issue 8.1): exit status 2 and a one-line ``qdqc: error: ...`` on stderr, no
traceback, nothing on stdout. (``qdqc cache`` is tested in test_cache.py; ``qdqc build`` with the bundle.)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qdq_compiler import cli, targets

ARGS = "FakeQuantWithMinMaxArgs"
ARGS_G = "FakeQuantWithMinMaxArgsGradient"
VARS = "FakeQuantWithMinMaxVars"
V2 = "QuantizeAndDequantizeV2"
CUDA_HERE = targets.get("cuda").availability()[0]


def qdqc(argv, capsys):
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def npy(tmp_path):
    """Write .npy files (or raw bytes) into tmp_path; returns a function name -> path."""
    def write(name, value=None, raw: bytes | None = None, pickle=False):
        p = tmp_path / name
        if raw is not None:
            p.write_bytes(raw)
        else:
            np.save(p, value, allow_pickle=pickle)
        return p
    return write


X = np.linspace(-2, 2, 9, dtype=np.float32)


def files(npy):
    return {
        "x": npy("x.npy", X),
        "x3": npy("x3.npy", X[:3]),
        "xi": npy("xi.npy", np.arange(5)),
        "x16": npy("x16.npy", X.astype(np.float16)),
        "mn": npy("mn.npy", np.float32(-1)),
        "mx": npy("mx.npy", np.float32(1)),
        "nan": npy("nan.npy", np.float32("nan")),
        "mn4": npy("mn4.npy", np.full(4, -1, np.float32)),
        "garbage": npy("garbage.npy", raw=b"this is not a .npy file"),
        "truncated": npy("truncated.npy", raw=(lambda b: b[: len(b) // 2])(_npy_bytes(X))),
        "pickled": npy("pickled.npy", np.array([1, "a"], dtype=object), pickle=True),
        "missing": Path(npy("x.npy", X)).parent / "no-such-file.npy",
        "dir": Path(npy("x.npy", X)).parent,
    }


def _npy_bytes(a):
    import io
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


# (id, argv with {placeholders} for the files above, words the message must contain)
QDQ_ERRORS = [
    ("emit-unknown-op", ["emit", "Foo"], ["unknown op 'Foo'"]),
    ("emit-num_bits-range", ["emit", ARGS, "--attr", "num_bits=99"], ["num_bits=99", "2..16"]),
    ("emit-unknown-attr", ["emit", ARGS, "--attr", "nb=3"], ["unknown attribute 'nb'"]),
    ("emit-attr-no-value", ["emit", ARGS, "--attr", "num_bits"], ["NAME=VALUE"]),
    ("emit-attr-not-int", ["emit", ARGS, "--attr", "num_bits=x"], ["num_bits", "int"]),
    ("emit-attr-not-bool", ["emit", ARGS, "--attr", "narrow_range=maybe"], ["narrow_range", "bool"]),
    ("emit-attr-not-float", ["emit", ARGS, "--attr", "min=abc"], ["min", "float"]),
    ("emit-attr-nan-range", ["emit", ARGS, "--attr", "min=nan"], ["smaller than max"]),
    ("emit-attr-of-other-op", ["emit", ARGS, "--attr", "axis=0"], ["unknown attribute 'axis'"]),
    ("emit-dtype-f16-qdq-tf-cpu", ["emit", "QuantizeAndDequantizeV2", "--dtype", "f16"], ["float16", "tf-xla"]),
    ("emit-dtype-unknown", ["emit", ARGS, "--dtype", "f8"], ["f8", "f16, bf16, f32, f64"]),
    ("emit-unknown-semantics", ["emit", ARGS, "--semantics", "tf-gpu"], ["semantics='tf-gpu'", "'tf-cpu', 'tf-xla'"]),
    ("emit-v1-under-xla", ["emit", "QuantizeAndDequantize", "--semantics", "tf-xla"], ["no XLA lowering"]),
    ("emit-dtype-f64-fq", ["emit", ARGS, "--dtype", "f64"], ["float64", "float32"]),
    ("emit-shape-letters", ["emit", ARGS, "--shape", "axb"], ["shape 'axb'"]),
    ("emit-shape-negative", ["emit", ARGS, "--shape", "-3"], ["-3"]),
    ("emit-axis-past-rank", ["emit", V2, "--attr", "axis=3", "--shape", "4"], ["axis=3"]),
    ("emit-axis-minus-2", ["emit", V2, "--attr", "axis=-2"], ["axis=-2"]),
    ("emit-round-mode", ["emit", V2, "--attr", "round_mode=UP"], ["round_mode", "HALF_UP"]),
    ("emit-pc-scalar-shape", ["emit", "FakeQuantWithMinMaxVarsPerChannel", "--shape", "scalar"], ["rank"]),
    ("compile-unknown-op", ["compile", "Foo", "-o", "{x}.vmfb"], ["unknown op"]),
    ("compile-unknown-target", ["compile", ARGS, "--target", "tpu", "-o", "{x}.vmfb"], ["unknown target 'tpu'"]),
    ("emit-unknown-tuning", ["emit", ARGS, "--tuning", "fast"], ["target 'cpu' has no tuning 'fast'", "split-columns"]),
    ("emit-tuning-of-another-target", ["emit", ARGS, "--target", "vmvx", "--tuning", "split-rows"],
     ["target 'vmvx' has no tuning 'split-rows'; its tunings: none"]),
    ("run-no-input", ["run", ARGS], ["takes 1 input (inputs), got 0 --input"]),
    ("run-too-few-inputs", ["run", VARS, "--input", "{x}", "--input", "{mn}"], ["takes 3 inputs", "got 2"]),
    ("run-too-many-inputs", ["run", ARGS, "--input", "{x}", "--input", "{x}"], ["got 2"]),
    ("run-int-input", ["run", ARGS, "--input", "{xi}"], ["int64", "float32"]),
    ("run-f16-input-qdq", ["run", "QuantizeAndDequantizeV2", "--input", "{x16}", "--input", "-1", "--input", "1"],
     ["float16", "semantics='tf-xla'"]),
    ("run-garbage-file", ["run", ARGS, "--input", "{garbage}"], ["not a .npy file (no NumPy header", "np.save"]),
    ("run-negative-inf-literal", ["run", VARS, "--input", "{x}", "--input", "-inf", "--input", "-nan",
                                  "--target", "bogus"], ["unknown target 'bogus'"]),
    ("run-truncated-file", ["run", ARGS, "--input", "{truncated}"], ["cannot read a .npy file"]),
    ("run-pickled-file", ["run", ARGS, "--input", "{pickled}"], ["cannot read a .npy file"]),
    ("run-missing-file", ["run", ARGS, "--input", "{missing}"], ["no-such-file.npy"]),
    ("run-directory", ["run", ARGS, "--input", "{dir}"], ["cannot read"]),
    ("run-grad-shape", ["run", ARGS_G, "--input", "{x}", "--input", "{x3}"], ["gradients", "[9]"]),
    ("run-vars-min-vector", ["run", VARS, "--input", "{x}", "--input", "{mn4}", "--input", "{mx}"], ["min"]),
    ("run-given-nan", ["run", V2, "--input", "{x}", "--input", "{nan}", "--input", "{mx}",
                       "--attr", "range_given=true"], ["Invalid range"]),
    ("run-num_bits", ["run", ARGS, "--input", "{x}", "--attr", "num_bits=1"], ["num_bits=1"]),
    ("run-unknown-target", ["run", ARGS, "--input", "{x}", "--target", "bogus"], ["unknown target 'bogus'"]),
    ("validate-unknown-target", ["validate", "--targets", "bogus"], ["unknown target"]),
    ("validate-unknown-op", ["validate", "--ops", "Foo"], ["unknown op"]),
    ("validate-bad-shard", ["validate", "--shard", "5/2"], ["--shard"]),
    ("validate-shard-text", ["validate", "--shard", "x"], ["--shard"]),
    ("validate-dtype", ["validate", "--dtypes", "f8"], ["f8"]),
    ("validate-semantics", ["validate", "--semantics", "tf-cpu,xla"], ["semantics='xla'"]),
    ("validate-sizes", ["validate", "--sizes", "abc"], ["--sizes"]),
    ("validate-jobs-0", ["validate", "--jobs", "0"], ["--jobs 0: must be >= 1"]),
    ("bench-repeat-0", ["bench", "--repeat", "0"], ["--repeat 0: must be >= 1"]),
    ("validate-nothing-selected", ["validate", "--ops", ARGS, "--dtypes", "f64"],
     ["no configuration to validate", "takes float16, bfloat16, float32 under tf-cpu (asked for float64)"]),
    ("diverge-v1", ["diverge", "--ops", "QuantizeAndDequantize"], ["nothing to compare", "no XLA lowering"]),
]

ARGPARSE_ERRORS = [
    ("no-command", []),
    ("unknown-command", ["frob"]),
    ("unknown-option", ["ops", "--bogus"]),
    ("compile-without-output", ["compile", ARGS]),
    ("bad-params-choice", ["emit", ARGS, "--params", "weird"]),
    ("cache-unknown-action", ["cache", "frob"]),
    ("cache-no-action", ["cache"]),
    ("run-without-op", ["run"]),
]


def _fill(argv, paths):
    return [str(a).format(**{k: str(v) for k, v in paths.items()}) for a in argv]


@pytest.mark.parametrize("id_, argv, words", QDQ_ERRORS, ids=[c[0] for c in QDQ_ERRORS])
def test_bad_input_exits_2_with_one_line(id_, argv, words, npy, capsys):
    argv = _fill(argv, files(npy))
    rc, out, err = qdqc(argv, capsys)
    assert rc == 2, (rc, out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("qdqc: error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("id_, argv", ARGPARSE_ERRORS, ids=[c[0] for c in ARGPARSE_ERRORS])
def test_usage_errors_exit_2(id_, argv, capsys):
    rc, out, err = qdqc(argv, capsys)
    assert rc == 2 and out == ""
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("qdqc") and ": error: " in last, err


@pytest.mark.parametrize("id_, argv", ARGPARSE_ERRORS, ids=[c[0] for c in ARGPARSE_ERRORS])
def test_usage_errors_are_one_line(id_, argv, capsys):
    rc, out, err = qdqc(argv, capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err


def test_unavailable_target(npy, capsys):
    if CUDA_HERE:
        pytest.skip("this machine can run cuda")
    rc, out, err = qdqc(["run", ARGS, "--input", files(npy)["x"], "--target", "cuda"], capsys)
    assert rc == 2 and out == ""
    assert err.startswith("qdqc: error: target 'cuda' cannot run here") and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv", [
    ["compile", ARGS, "-o", "/nonexistent-dir/x.vmfb"],
    ["run", ARGS, "--input", "{x}", "-o", "/nonexistent-dir/y.npy"],
], ids=["compile", "run"])
def test_unwritable_output_exits_2(argv, npy, capsys):
    argv = _fill(argv, files(npy))
    try:
        rc, out, err = qdqc(argv, capsys)
    except OSError as e:
        pytest.fail(f"traceback: {e!r}")
    assert rc == 2 and len(err.splitlines()) == 1 and "nonexistent-dir" in err


def test_emit_unknown_target(capsys):
    rc, out, err = qdqc(["emit", ARGS, "--target", "tpu"], capsys)
    assert rc == 2 and "unknown target" in err


# ------------------------------------------------------------------------------------------------
# What TF computes is computed: NaN ranges for Vars print NaN, exit 0, with a one-line warning (issue 29.7)


@pytest.mark.filterwarnings("default::qdq_compiler.errors.QDQWarning")  # pyproject ignores it suite-wide
def test_run_vars_with_nan_min_computes(npy, capsys, tmp_path):
    p = files(npy)
    rc, out, err = qdqc(["run", VARS, "--input", p["x"], "--input", p["nan"], "--input", p["mx"]], capsys)
    assert rc == 0 and "nan" in out
    assert err.startswith("qdqc: warning: ") and "min or max is NaN or infinite" in err and err.count("\n") == 1
    rc, out, err = qdqc(["run", "FakeQuantWithMinMaxVarsGradient", "--input", p["x"], "--input", p["x"],
                         "--input", p["mn"], "--input", p["mx"], "-o", tmp_path / "g.npz"], capsys)
    assert rc == 0
    z = np.load(tmp_path / "g.npz")
    assert sorted(z.files) == ["backprop_wrt_max", "backprop_wrt_min", "backprops_wrt_input"]


def test_run_oracle_target(npy, capsys, tmp_path):
    rc, out, err = qdqc(["run", ARGS, "--input", files(npy)["x"], "--target", "oracle", "-o", tmp_path / "y.npy"],
                        capsys)
    assert rc == 0
    assert np.load(tmp_path / "y.npy").dtype == np.float32


def test_version_names_qdqc_and_iree(capsys):
    from qdq_compiler import __version__
    from qdq_compiler.iree_tools import compiler_version
    rc, out, err = qdqc(["--version"], capsys)
    assert rc == 0 and err == ""
    assert out == f"qdqc {__version__} (IREE compiler {compiler_version()}, runtime {compiler_version()})\n" or \
        out.startswith(f"qdqc {__version__} (IREE compiler {compiler_version()}, runtime ")


def test_targets_says_which_run_here_and_why_not_the_others(capsys):
    from qdq_compiler import targets as T
    rc, out, err = qdqc(["targets", "--json"], capsys)
    assert rc == 0 and err == ""
    rows = json.loads(out)
    assert [r["name"] for r in rows] == list(T.TARGETS)
    for r in rows:
        ok, why = T.get(r["name"]).availability()
        assert r["available"] == ok and r["why_not"] == why and (ok or why)
    assert next(r for r in rows if r["name"] == "vulkan")["max_loop_iterations"] == 65535
    rc, out, err = qdqc(["targets"], capsys)
    assert rc == 0
    for r in rows:
        assert f"{r['name']:<9} " + ("runs here" if r["available"] else f"not here: {r['why_not']}") in out
    assert "oracle    always" in out


def test_ops_json(capsys):
    rc, out, err = qdqc(["ops", "--json"], capsys)
    assert rc == 0 and err == ""
    from qdq_compiler import ops
    assert list(json.loads(out)) == list(ops.OPS)


# ------------------------------------------------------------------------------------------------
# The real executables: exit status and stderr as a shell sees them


@pytest.mark.parametrize("argv, code", [
    (["emit", "Foo"], 2),
    (["run", ARGS, "--input", "/no/such/file.npy"], 2),
    (["emit", ARGS, "--attr", "num_bits=1"], 2),
    (["ops"], 0),
])
def test_python_dash_m(argv, code):
    proc = subprocess.run([sys.executable, "-m", "qdq_compiler", *argv], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONWARNINGS="error::RuntimeWarning"))
    assert proc.returncode == code, proc.stderr
    if code:
        assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1
        assert proc.stderr.startswith("qdqc: error: ")


def test_console_script():
    exe = Path(sys.executable).parent / "qdqc"
    if not exe.exists():
        pytest.skip("qdqc is not installed next to this Python")
    proc = subprocess.run([str(exe), "emit", "Foo"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("qdqc: error: unknown op 'Foo'")


def test_run_takes_literal_scalars(npy, capsys, tmp_path):
    """Scalar inputs need no .npy file: ``--input -1`` is a 0-d array typed like the data (issue 14.6)."""
    out = tmp_path / "y.npy"
    rc, _, err = qdqc(["run", VARS, "--input", npy("x.npy", X), "--input", "-1", "--input", "1.5", "-o", out], capsys)
    assert rc == 0, err
    from qdq_compiler.numerics import bit_equal
    from qdq_compiler.oracle import raw_ops as oracle
    want = oracle.FakeQuantWithMinMaxVars(inputs=X, min=np.float32(-1), max=np.float32(1.5))
    assert bit_equal(np.load(out), want)
    rc, _, err = qdqc(["run", "QuantizeAndDequantizeV3", "--input", npy("x.npy", X), "--input", "-1", "--input", "1",
                       "--input", "4", "-o", out, "--target", "oracle"], capsys)
    assert rc == 0, err
    assert bit_equal(np.load(out), oracle.QuantizeAndDequantizeV3(input=X, input_min=np.float32(-1),
                                                                  input_max=np.float32(1), num_bits=np.int32(4)))


@pytest.mark.parametrize("value, words", [("abc", ["--input abc", "nor is it a number"]),
                                           ("4.5", ["--input 4.5", "must be an integer"])])
def test_run_rejects_inputs_that_are_neither_files_nor_numbers(value, words, npy, capsys):
    rc, out, err = qdqc(["run", "QuantizeAndDequantizeV3", "--input", npy("x.npy", X), "--input", "-1",
                         "--input", "1", "--input", value], capsys)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert all(w in err for w in words), err


def test_compile_for_the_oracle_says_what_it_is(capsys, tmp_path):
    """'oracle' is the NumPy reference: the message says so, and does not offer it (issue 14.6)."""
    rc, _, err = qdqc(["compile", ARGS, "--target", "oracle", "-o", tmp_path / "a.vmfb"], capsys)
    assert rc == 2
    assert "'oracle' is the NumPy reference, not a compile target; compile targets: cpu," in err
    assert "unknown target" not in err


def test_every_option_has_help(capsys):
    """run's op/--attr/--input and bench's --targets/--repeat say what they take (issue 14.5)."""
    for command, options in (("run", ["op", "--attr", "--input"]), ("bench", ["--targets", "--repeat"])):
        rc, out, _ = qdqc([command, "--help"], capsys)
        assert rc == 0
        for opt in options:
            line = next(line for line in out.splitlines() if line.strip().startswith(opt))
            rest = out[out.index(line):].split("\n  ")[0] + out[out.index(line):].split("\n", 2)[1]
            assert len(rest.split()) > 2, f"{command} {opt} has no help: {line!r}"


def test_run_literal_scalars_take_the_datas_dtype(npy, capsys, tmp_path):
    """``--input -1.5`` / ``--input 2`` next to float64 data are float64 0-d arrays (issue 14.6)."""
    x64, out = X.astype(np.float64), tmp_path / "y.npy"
    rc, _, err = qdqc(["run", V2, "--input", npy("x64.npy", x64), "--input", "-1.5", "--input", "2",
                       "--attr", "range_given=true", "--target", "oracle", "-o", out], capsys)
    assert rc == 0, err
    from qdq_compiler.numerics import bit_equal
    from qdq_compiler.oracle import raw_ops as oracle
    want = oracle.QuantizeAndDequantizeV2(input=x64, input_min=np.float64(-1.5), input_max=np.float64(2),
                                          range_given=True)
    assert np.load(out).dtype == np.float64 and bit_equal(np.load(out), want)


def test_messages_count_in_the_singular_and_plural(capsys, monkeypatch):
    """'1 artifact', '2 artifacts' (issue 14.6)."""
    from qdq_compiler import compile as C
    for n, words in ((1, "removed 1 artifact from"), (2, "removed 2 artifacts from")):
        monkeypatch.setattr(C, "cache_clear", lambda n=n: n)
        rc, out, _ = qdqc(["cache", "clear"], capsys)
        assert rc == 0 and words in out, out
    rc, _, err = qdqc(["run", VARS], capsys)
    assert rc == 2 and "takes 3 inputs (inputs, min, max)" in err


def test_build_of_one_artifact_says_one_artifact(capsys, tmp_path):
    cfg = tmp_path / "one.json"
    cfg.write_text(json.dumps({"entries": [{"op": ARGS, "shape": "?"}]}))
    rc, _, err = qdqc(["build", "--config", cfg, "--out", tmp_path / "b"], capsys)
    assert rc == 0, err
    assert "manifest.json: 1 artifact (" in err and "1 artifacts" not in err


def test_help_examples_quote_shell_globs():
    """A '?' or '*' in an example command is quoted, so it runs as written in any shell (issue 14.5)."""
    import re
    for name, text in cli.EXAMPLES.items():
        for line in text.splitlines():
            assert not re.search(r"[?*\[]", re.sub(r"'[^']*'", "", line)), f"{name}: unquoted glob in {line!r}"


@pytest.mark.filterwarnings("default::qdq_compiler.errors.QDQWarning")  # pyproject ignores it suite-wide
def test_run_prints_a_qdq_warning_as_one_line(npy, capsys):
    """TF's answer, with the warning of issue 14.7 as one 'qdqc: warning:' line on stderr."""
    rc, out, err = qdqc(["run", VARS, "--input", npy("x.npy", X), "--input", "1", "--input", "-1",
                         "--target", "oracle"], capsys)
    assert rc == 0 and "0.9960785" in out
    assert err.splitlines() == ["qdqc: warning: FakeQuantWithMinMaxVars: min > max: TF (and this op) then quantize "
                                "every input to one constant (arguments min and max)"], err


def test_validate_runs_tfs_edge_cases_without_warnings(capsys):
    """The matrix runs min > max, min == max != 0 (TF's goldens) on purpose: no QDQWarning noise."""
    rc, _, err = qdqc(["validate", "--ops", "FakeQuantWithMinMaxVarsPerChannel", "--dtypes", "f32", "--targets", "cpu",
                       "--sizes", "100", "--no-progress"], capsys)
    assert rc == 0 and "warning" not in err.lower(), err


# ------------------------------------------------------------------------------------------------
# Outputs (issue 29.6): every path is checked before the work, and written whole or not at all


@pytest.mark.parametrize("argv, option", [
    (["validate", "--ops", ARGS, "--report", "/no/such/dir/r.json"], "--report"),
    (["validate", "--ops", ARGS, "--junit", "/no/such/dir/r.xml"], "--junit"),
    (["validate", "--ops", ARGS, "--markdown", "{dir}"], "--markdown"),
    (["diverge", "--ops", VARS, "--json", "/no/such/dir/d.json"], "--json"),
    (["bench", "--ops", ARGS, "--sizes", "4", "--plot", "/no/such/dir/b.png"], "--plot"),
])
def test_an_output_that_cannot_be_written_fails_before_the_work(argv, option, npy, capsys, monkeypatch):
    from qdq_compiler import execute
    monkeypatch.setattr(execute, "artifact_for", lambda cfg: pytest.fail("compiled before checking the outputs"))
    rc, out, err = qdqc(_fill(argv, files(npy)), capsys)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and f"qdqc: error: {option} " in err, err


def test_a_failed_write_names_the_file_and_leaves_nothing_behind(npy, capsys, tmp_path, monkeypatch):
    import errno
    import qdq_compiler.outputs as O

    def full_disk(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(O.os, "replace", full_disk)
    target = tmp_path / "y.npy"
    rc, out, err = qdqc(["run", ARGS, "--input", files(npy)["x"], "--target", "oracle", "-o", target], capsys)
    assert rc == 2 and err == f"qdqc: error: cannot write {target}: No space left on device\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".qdqc-", "y"))) == []


def test_outputs_are_written_with_the_usual_suffix_and_mode(npy, capsys, tmp_path):
    rc, out, err = qdqc(["run", ARGS, "--input", files(npy)["x"], "--target", "oracle", "-o", tmp_path / "y"], capsys)
    assert rc == 0 and err == f"wrote {tmp_path / 'y.npy'}\n"
    assert (tmp_path / "y.npy").stat().st_mode & 0o777 == 0o644   # as the cache and bundles (fileio)
    assert np.load(tmp_path / "y.npy").shape == (9,)


def test_run_reads_a_bfloat16_npy_and_types_literals_like_it(npy, capsys, tmp_path):
    """Issue 29.3: np.save stores bfloat16 as |V2; it used to be refused, and beside a literal, a traceback."""
    import ml_dtypes
    xb = np.linspace(-2, 2, 9).astype(ml_dtypes.bfloat16)
    path = npy("xb.npy", xb)
    assert np.load(path).dtype.kind == "V"   # what np.save writes
    rc, out, err = qdqc(["run", VARS, "--input", path, "--input", "-1", "--input", "1", "--semantics", "tf-xla",
                         "-o", tmp_path / "yb.npy"], capsys)
    assert rc == 0 and "bfloat16" in err and "view(ml_dtypes.bfloat16)" in err
    got = np.load(tmp_path / "yb.npy").view(ml_dtypes.bfloat16)
    import qdq_compiler as q
    want = q.oracle.raw_ops.FakeQuantWithMinMaxVars(inputs=xb, min=ml_dtypes.bfloat16(-1), max=ml_dtypes.bfloat16(1),
                                                    semantics="tf-xla")
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_ctrl_c_exits_130_with_one_line_wherever_it_lands():
    """Issue 29.5: a Ctrl-C inside IREE's argument packing came out as a ValueError traceback with status 1. Issue
    47.2: one during the first imports (``import ml_dtypes``, before the handler existed) as a traceback and -2.
    The signal lands during the imports (after 0.15 and 0.3 s of the child's CPU: the handler is in place at about
    0.06 s, the command line's imports take 0.25 s or more) and during the run (2 and 4 s), with two busy loops
    beside it, as this 2-core machine often is. Python's own start-up, before the package runs, is not ours."""
    import signal
    import time
    argv = [sys.executable, "-m", "qdq_compiler", "validate", "--ops", "QuantizeAndDequantizeV4", "--targets", "cpu",
            "--semantics", "tf-cpu,tf-xla", "--sizes", "1000,300000", "--no-progress"]

    def cpu_seconds(pid):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def wait(p, cpu=None, wall=None):
        start = time.monotonic()
        while p.poll() is None and time.monotonic() - start < 30:
            used = cpu_seconds(p.pid)
            if cpu is not None and (used is None or used >= cpu):
                return
            if wall is not None and time.monotonic() - start >= wall and (used or 0) >= 0.15:
                return
            time.sleep(0.005)

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    delivered = []
    try:
        for when in ({"cpu": 0.15}, {"cpu": 0.3}, {"wall": 2.0}, {"wall": 4.0}):
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wait(p, **when)
            if p.poll() is not None:   # finished before the signal: nothing to interrupt
                p.communicate()
                continue
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=120)
            delivered.append(when)
            assert p.returncode == 130 and err.strip().splitlines() == ["qdqc: interrupted"], (when, p.returncode, err)
    finally:
        for b in busy:
            b.kill()
            b.wait()
    assert {"cpu": 0.15} in delivered and len(delivered) >= 3, delivered


def test_ctrl_c_during_an_import_waits_until_the_import_is_done(tmp_path):
    """A KeyboardInterrupt raised inside an import can unwind through a native module's initialisation, and
    nanobind (IREE's bindings) then aborts the process (status -6, 'terminate called after throwing an instance
    of nanobind::python_error', once in CI). The handler lets the import finish, then interrupts: 130."""
    # The module's last line says it ran to the end (still inside the import, so never cut short); once the
    # import is done the interrupt may land anywhere, as it would on the command line.
    (tmp_path / "slow_module.py").write_text(
        "import os, signal, sys, time\nos.kill(os.getpid(), signal.SIGINT)\nt = time.time()\n"
        "while time.time() - t < 0.3:\n    pass\nsys.stdout.write('module ran to its end\\n')\nsys.stdout.flush()\n")
    code = ("import sys, time\nfrom qdq_compiler.cli_interrupt import run_interruptible\n"
            "def cmd():\n    import slow_module\n    time.sleep(5)\n    return 0\nsys.exit(run_interruptible(cmd))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 130 and p.stdout == "module ran to its end\n", (p.returncode, p.stdout, p.stderr)
    assert p.stderr.strip().splitlines() == ["qdqc: interrupted"]


def test_cache_dir_puts_this_commands_cache_there(capsys, tmp_path):
    """Issue 29.10: --cache-dir (QDQ_CACHE_DIR for one command), and the caller's environment is kept."""
    before = os.environ.get("QDQ_CACHE_DIR")
    rc, out, err = qdqc(["--cache-dir", tmp_path / "c", "compile", ARGS, "-o", tmp_path / "a.vmfb"], capsys)
    assert rc == 0 and any((tmp_path / "c").rglob("*.vmfb"))
    assert os.environ.get("QDQ_CACHE_DIR") == before
    rc, out, err = qdqc(["--cache-dir", tmp_path / "c", "cache", "info"], capsys)
    assert rc == 0 and str(tmp_path / "c") in out
    rc, out, _ = qdqc(["cache", "--help"], capsys)
    assert "QDQ_CACHE_DIR or --cache-dir" in out
    for command, option in (("validate", "--seed"), ("diverge", "--seed"), ("build", "--config"), ("build", "--out")):
        rc, out, _ = qdqc([command, "--help"], capsys)
        line = next(line for line in out.splitlines() if line.strip().startswith(option))
        assert len(out[out.index(line):].split("\n  ")[0].split()) > 3, f"{command} {option} has no help"
