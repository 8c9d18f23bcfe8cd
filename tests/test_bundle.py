"""Deployment bundles (issue 6): build, verify on load, run (Python and iree-run-module), reproducibility."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import BundleError, QDQError, QDQTypeError, ops as registry
from qdq_compiler.targets import cpu as cpu_probe
from qdq_compiler.jobs import bundle as B
from qdq_compiler.numerics import bit_equal

from checks import as_tuple, describe_diff, sum_bound
from targets_util import RUN_TARGETS, require

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qat_bundle.toml"
EXAMPLE_TARGETS = ["cpu", "vmvx", "vulkan"]
# x86-64-v2's features: what the portable cpu build needs (and all a machine of that level has).
X86_64_V2 = {"cmov", "crc32", "cx16", "cx8", "fxsr", "mmx", "popcnt", "sahf", "sse", "sse2", "sse3", "sse4.1",
             "sse4.2", "ssse3", "x87"}


@pytest.fixture(scope="session")
def example_bundle(tmp_path_factory):
    """The example bundle, built once per test run (a lock keeps parallel pytest workers from racing)."""
    shared = tmp_path_factory.getbasetemp()
    shared = shared.parent if shared.name.startswith("popen-gw") else shared
    out = shared / "qat_bundle"
    with open(shared / "qat_bundle.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / B.MANIFEST).is_file():
            B.build_bundle(EXAMPLE, out, targets=EXAMPLE_TARGETS)
    return out


def _inputs(entry, rng, batch=5):
    """Random inputs of the entry's signature ('?' dims get ``batch``), ranges valid for the op."""
    spec = registry.get(entry.op)
    out = {}
    for d in entry.function["inputs"]:
        shape = [batch if s is None else s for s in d["shape"]]
        role = next(i.role for i in spec.inputs if i.name == d["name"])
        dt = np.dtype(d["dtype"])
        if role in ("data", "grad"):
            out[d["name"]] = (rng.standard_normal(shape) * 3).astype(dt)
        elif role == "min":
            out[d["name"]] = (-np.abs(rng.standard_normal(shape)) - 0.5).astype(dt)
        elif role == "max":
            out[d["name"]] = (np.abs(rng.standard_normal(shape)) + 0.5).astype(dt)
    return out


def _assert_matches_oracle(entry, kwargs, got):
    spec = registry.get(entry.op)
    want = as_tuple(getattr(q.oracle.raw_ops, entry.op)(**kwargs, **entry.attrs))
    got = as_tuple(got)
    assert len(got) == len(want) == len(spec.outputs)
    for name, g, w in zip(spec.outputs, got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{entry.name}.{name}: {describe_diff(g, w)}"
        if name in spec.sum_outputs and not bit_equal(g, w):  # policy 6: summation order is free
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            assert np.all(diff <= sum_bound(kwargs, name, w)), f"{entry.name}.{name}: {describe_diff(g, w)}"
        else:
            assert bit_equal(g, w), f"{entry.name}.{name} on {entry.target}: {describe_diff(g, w)}"


def _copy(bundle: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "b"
    shutil.copytree(bundle, dst)
    return dst


def _edit_manifest(path: Path, fn):
    m = json.loads((path / B.MANIFEST).read_text())
    fn(m)
    (path / B.MANIFEST).write_text(json.dumps(m))


# -- the manifest -------------------------------------------------------------------------------


def test_manifest_records_every_artifact(example_bundle):
    m = json.loads((example_bundle / B.MANIFEST).read_text())
    assert m["schema"] == B.SCHEMA and m["schema_version"] == B.SCHEMA_VERSION
    names = ["weight_fq", "weight_fq_grad", "act_fq", "act_fq_grad", "relu6_fq", "relu6_fq_grad",
             "qdq_tensor", "qdq_axis"]
    assert sorted((a["name"], a["target"]) for a in m["artifacts"]) == \
        sorted((n, t) for n in names for t in EXAMPLE_TARGETS)
    assert sorted(p.name for p in example_bundle.glob("*.vmfb")) == sorted(a["file"] for a in m["artifacts"])
    from qdq_compiler.compile import compiler_version
    for a in m["artifacts"]:
        data = (example_bundle / a["file"]).read_bytes()
        assert a["sha256"] == hashlib.sha256(data).hexdigest() and a["size"] == len(data)
        assert a["iree_compiler_version"] == compiler_version()
        assert a["build_time"].endswith("Z")
        assert f"--iree-hal-target-backends={a['backend']}" in a["compiler_flags"]
        assert a["function"]["name"] == a["op"]
        assert [i["name"] for i in a["function"]["inputs"]] == list(registry.get(a["op"]).input_names)
        assert a["bit_exact"] is True
    act = next(a for a in m["artifacts"] if a["name"] == "act_fq_grad" and a["target"] == "cpu")
    assert act["attrs"] == {"narrow_range": False, "num_bits": 8}
    assert act["function"]["inputs"][0] == {"name": "gradients", "dtype": "float32", "shape": [None, 64],
                                            "type": "tensor<?x64xf32>"}
    assert [o["name"] for o in act["function"]["outputs"]] == \
        ["backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"]
    assert act["function"]["outputs"][1]["shape"] == []
    assert "--iree-llvmcpu-target-cpu=x86-64-v2" in act["compiler_flags"]
    assert act["cpu"]["tuned"] is False and set(act["cpu"]["required_features"]) == X86_64_V2
    relu = next(a for a in m["artifacts"] if a["name"] == "relu6_fq" and a["target"] == "vmvx")
    assert relu["attrs"] == {"max": 6.0, "min": 0.0, "narrow_range": False, "num_bits": 8}
    assert [i["name"] for i in relu["function"]["inputs"]] == ["inputs"]  # attributes are baked


# -- loading: verified, and matching the oracle ------------------------------------------------------


@pytest.mark.parametrize("target", EXAMPLE_TARGETS)
def test_bundle_loads_and_matches_oracle(example_bundle, target):
    if target not in RUN_TARGETS:
        pytest.skip(f"{target} not in QDQ_TEST_TARGETS")
    require(target)
    b = q.load_bundle(example_bundle, target=target)
    assert b.target == target and len(b) == 8 and b.bit_exact
    rng = np.random.default_rng(6)
    for entry in b:
        for batch in (1, 7):
            kwargs = _inputs(entry, rng, batch)
            _assert_matches_oracle(entry, kwargs, entry(**kwargs))
    # TF's output names on multi-output ops
    kw = _inputs(b["act_fq_grad"], rng)
    assert b.act_fq_grad(**kw).backprop_wrt_min.shape == ()


def test_default_target_is_the_first_that_runs(example_bundle):
    assert q.load_bundle(example_bundle).target == "cpu"
    assert q.load_bundle(example_bundle / B.MANIFEST, target="vmvx").target == "vmvx"


def test_entry_validates_inputs(example_bundle):
    b = q.load_bundle(example_bundle, target="vmvx")
    x = np.ones((2, 64), np.float32)
    with pytest.raises(QDQTypeError):  # dtype differs from the artifact's
        b.act_fq(inputs=x.astype(np.float64), min=np.float64(-1), max=np.float64(1))
    with pytest.raises(QDQError, match=r"shape \[2, 32\].*\?x64"):  # a static dim differs
        b.act_fq(inputs=np.ones((2, 32), np.float32), min=np.float32(-1), max=np.float32(1))
    with pytest.raises(QDQError, match="shape"):  # rank differs
        b.act_fq(inputs=np.ones(64, np.float32), min=np.float32(-1), max=np.float32(1))
    with pytest.raises(QDQError, match="min"):  # the op's own checks (min must be a scalar)
        b.act_fq(inputs=x, min=np.zeros(2, np.float32), max=np.float32(1))
    with pytest.raises(QDQError, match="input_min"):  # given range must be ordered
        b.qdq_tensor(input=x, input_min=np.float32(2), input_max=np.float32(1))
    with pytest.raises(QDQError, match="missing required input"):
        b.act_fq(inputs=x)
    with pytest.raises(QDQError, match="baked"):  # attributes are fixed in the artifact
        b.relu6_fq(inputs=x, num_bits=4)
    np.testing.assert_array_equal(b.relu6_fq(inputs=x, num_bits=8, min=0, max=6.0), b.relu6_fq(inputs=x))
    assert b.relu6_fq(inputs=[[0.5] * 64]).dtype == np.float32  # lists take the entry's dtype
    with pytest.raises(KeyError, match="no entry"):
        b["nope"]


# -- refusing bad bundles ------------------------------------------------------------------------


def test_flipped_byte_is_detected(example_bundle, tmp_path):
    d = _copy(example_bundle, tmp_path)
    f = d / "act_fq.cpu.vmfb"   # the loaded target's files are verified (see test_damaged_cpu_artifact_...)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01
    f.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"act_fq\.cpu\.vmfb does not match the manifest"):
        q.load_bundle(d, target="cpu")
    with pytest.raises(ValueError):  # BundleError is a ValueError
        q.load_bundle(d)


def test_missing_and_mismatched_files_are_refused(example_bundle, tmp_path):
    d = _copy(example_bundle, tmp_path)
    (d / "qdq_axis.cpu.vmfb").unlink()
    with pytest.raises(BundleError, match=r"qdq_axis\.cpu\.vmfb is missing"):
        q.load_bundle(d, target="cpu")
    # A different artifact under a listed name, with the manifest's hash updated to match: the
    # function and signature check catches it.
    d2 = _copy(example_bundle, tmp_path / "2")
    shutil.copy(d2 / "act_fq.cpu.vmfb", d2 / "relu6_fq.cpu.vmfb")
    data = (d2 / "relu6_fq.cpu.vmfb").read_bytes()

    def fix(m):
        a = next(a for a in m["artifacts"] if a["file"] == "relu6_fq.cpu.vmfb")
        a["sha256"], a["size"] = hashlib.sha256(data).hexdigest(), len(data)
    _edit_manifest(d2, fix)
    with pytest.raises(BundleError, match=r"relu6_fq\.cpu\.vmfb.*FakeQuantWithMinMaxArgs"):
        q.load_bundle(d2, target="cpu")
    with pytest.raises(BundleError, match="not a bundle"):
        q.load_bundle(tmp_path / "nowhere")


def test_incompatible_runtime_and_target_are_refused(example_bundle, tmp_path):
    with pytest.raises(BundleError, match="no 'cuda' artifacts"):
        q.load_bundle(example_bundle, target="cuda")
    d = _copy(example_bundle, tmp_path)

    def old_compiler(m):
        for a in m["artifacts"]:
            a["iree_compiler_version"] = "2.9.0"
    _edit_manifest(d, old_compiler)
    with pytest.raises(BundleError, match="compiled by IREE 2.9.0"):
        q.load_bundle(d, target="vmvx")
    _edit_manifest(d, lambda m: m.update(schema_version=99))
    with pytest.raises(BundleError, match="schema_version 99.*newer"):
        q.load_bundle(d)

    def escape(m):
        m["schema_version"] = 1
        m["artifacts"][0]["file"] = "../escape.vmfb"
    _edit_manifest(d, escape)
    with pytest.raises(BundleError, match="plain names"):
        q.load_bundle(d)


def test_portable_cpu_build_needs_only_x86_64_v2(example_bundle):
    q.load_bundle(example_bundle, target="cpu", host_cpu_features=X86_64_V2)
    with pytest.raises(BundleError, match="needs sse4.1, sse4.2"):
        q.load_bundle(example_bundle, target="cpu", host_cpu_features=X86_64_V2 - {"sse4.1", "sse4.2"})
    # With target=None, a machine that cannot run the cpu build falls back to the next target.
    assert q.load_bundle(example_bundle, host_cpu_features=set()).target == "vmvx"


# -- IREE's own tool, no Python --------------------------------------------------------------------


@pytest.mark.parametrize("target,name", [("cpu", "act_fq_grad"), ("vmvx", "weight_fq"), ("vulkan", "qdq_axis")])
def test_iree_run_module_runs_an_artifact(example_bundle, tmp_path, target, name):
    if target not in RUN_TARGETS:
        pytest.skip(f"{target} not in QDQ_TEST_TARGETS")
    require(target)
    tool = cpu_probe.runtime_tool("iree-run-module")
    if tool is None:
        pytest.skip("iree-run-module not found (pip install iree-base-runtime)")
    m = json.loads((example_bundle / B.MANIFEST).read_text())
    art = next(a for a in m["artifacts"] if a["name"] == name and a["target"] == target)
    entry = q.load_bundle(example_bundle, target=target)[name]
    kwargs = _inputs(entry, np.random.default_rng(3), batch=9)
    cmd = [tool, f"--device={art['driver']}", f"--module={example_bundle / art['file']}",
           f"--function={art['function']['name']}"]
    for d in art["function"]["inputs"]:
        np.save(tmp_path / f"{d['name']}.npy", kwargs[d["name"]])
        cmd.append(f"--input=@{tmp_path / (d['name'] + '.npy')}")
    outs = [tmp_path / f"out_{o['name']}.npy" for o in art["function"]["outputs"]]
    cmd += [f"--output=@{p}" for p in outs]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    _assert_matches_oracle(entry, kwargs, tuple(np.load(p) for p in outs))


# -- reproducibility -------------------------------------------------------------------------------


def test_two_builds_are_byte_identical(example_bundle, tmp_path, monkeypatch):
    """A fresh compile gives the example bundle's bytes again; build_time is the manifest's only variable."""
    import dataclasses
    cfg = B.parse_config(EXAMPLE)
    sub = dataclasses.replace(cfg, entries=tuple(e for e in cfg.entries if e.name == "act_fq_grad"))
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))  # empty: compiles afresh, and fills it
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")         # 2026-01-01T00:00:00Z
    r1 = B.build_bundle(sub, tmp_path / "one")
    assert r1.compiled == 3 and r1.cached == 0
    example = {(a["name"], a["target"]): a for a in json.loads((example_bundle / B.MANIFEST).read_text())["artifacts"]}
    for a in r1.manifest["artifacts"]:
        assert (tmp_path / "one" / a["file"]).read_bytes() == (example_bundle / a["file"]).read_bytes(), a["file"]
        want = dict(example[a["name"], a["target"]], build_time=a["build_time"])
        assert a == want
    # With SOURCE_DATE_EPOCH the whole bundle is byte-identical, manifest included.
    B.build_bundle(sub, tmp_path / "two")
    for f in ["manifest.json"] + [a["file"] for a in r1.manifest["artifacts"]]:
        assert (tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes(), f
    # Without it the build time is now, and it is all that differs.
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    r3 = B.build_bundle(sub, tmp_path / "three")
    m1, m3 = r1.manifest, json.loads((tmp_path / "three" / B.MANIFEST).read_text())
    assert m1["build_time"] == "2026-01-01T00:00:00Z" != m3["build_time"] and r3.cached == 3
    strip = lambda m: {**m, "build_time": None,  # noqa: E731
                       "artifacts": [{**a, "build_time": None} for a in m["artifacts"]]}
    assert strip(m1) == strip(m3)


# -- tuned CPU builds ------------------------------------------------------------------------------


@pytest.mark.skipif(not cpu_probe.is_x86_64(), reason="the cpu target compiles for x86-64")
def test_tuned_cpu_build(tmp_path):
    cfg = {"targets": ["cpu"], "entries": [{"op": "FakeQuantWithMinMaxArgs", "attrs": {"min": -1.0, "max": 1.0}}]}
    r = B.build_bundle(cfg, tmp_path / "host", target_cpu="host")
    cpu = r.manifest["targets"]["cpu"]["cpu"]
    assert cpu["requested"] == "host" and cpu["name"] != "host" and cpu["tuned"]
    flags = r.manifest["artifacts"][0]["compiler_flags"]
    assert f"--iree-llvmcpu-target-cpu={cpu['name']}" in flags
    # the host's own feature list (a VM may mask features its CPU name implies), then FMA off
    feature_flag = next(f for f in flags if f.startswith("--iree-llvmcpu-target-cpu-features="))
    assert feature_flag.endswith(",-fma,-fma4")
    assert r.manifest["artifacts"][0]["bit_exact"] is True
    assert "fma" not in cpu["required_features"] and not any(f.startswith("avx512") for f in cpu["required_features"])
    b = q.load_bundle(tmp_path / "host", target="cpu")  # built here: runs here
    x = np.linspace(-2, 2, 1001, dtype=np.float32)
    assert bit_equal(b.FakeQuantWithMinMaxArgs(inputs=x),
                     q.oracle.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, min=-1.0, max=1.0))
    # A machine without the tuned CPU's features is refused, naming what it lacks.
    if "avx2" in cpu["required_features"]:
        with pytest.raises(BundleError, match=r"needs .*avx2.*which this CPU lacks"):
            q.load_bundle(tmp_path / "host", target="cpu", host_cpu_features=X86_64_V2)
    # A named CPU with FMA kept: recorded as not bit-exact, and it needs FMA.
    r = B.build_bundle(cfg, tmp_path / "hsw", target_cpu="haswell,+fma")
    art = r.manifest["artifacts"][0]
    assert art["bit_exact"] is False and art["cpu"]["name"] == "haswell" and "fma" in art["cpu"]["required_features"]
    with pytest.raises(BundleError, match="fma"):
        q.load_bundle(tmp_path / "hsw", target="cpu", host_cpu_features=X86_64_V2 | {"avx", "avx2"})
    with pytest.raises(QDQError, match="not a CPU LLVM knows"):
        B.build_bundle(cfg, tmp_path / "bad", target_cpu="no-such-cpu")


# -- config and command line -----------------------------------------------------------------------


@pytest.mark.parametrize("cfg,match", [
    ({"entries": [{"op": "Nope"}]}, "unknown op"),
    ({"entries": [{"op": "FakeQuantWithMinMaxArgs", "attr": {}}]}, "unknown key 'attr'"),
    ({"entries": [{"op": "FakeQuantWithMinMaxArgs", "attrs": {"num_bits": 1}}]}, "num_bits=1"),
    ({"entries": [{"op": "FakeQuantWithMinMaxArgs"}, {"op": "FakeQuantWithMinMaxArgs"}]}, "distinct 'name'"),
    ({"entries": [{"op": "FakeQuantWithMinMaxArgs", "dtype": "f64"}]}, "dtype"),
    ({"entries": [{"op": "FakeQuantWithMinMaxVarsPerChannel", "shape": "scalar"}]}, "rank"),
    ({"targets": ["cpu-host"], "entries": [{"op": "FakeQuantWithMinMaxArgs"}]}, "target_cpu"),
    ({"targets": ["tpu"], "entries": [{"op": "FakeQuantWithMinMaxArgs"}]}, "unknown target"),
    ({"entries": []}, "non-empty"),
    ({"entries": [{"op": "FakeQuantWithMinMaxArgs", "targets": ["vmvx"]}]}, "not one of the bundle's targets"),
    ({"entries": [{"op": "FakeQuantWithMinMaxArgs", "params": "runtime"}]}, "params='runtime'; allowed: 'baked', "
                                                                           "'arguments'"),
])
def test_config_errors(cfg, match):
    with pytest.raises(QDQError, match=match):
        B.parse_config(cfg)


def test_an_entry_with_arguments_takes_its_numeric_attributes_per_call(tmp_path):
    """params = "arguments": TF's num_bits, min and max are arguments of each call (the config's values the
    defaults), the plain signature (results returned, no caller storage), the oracle's bits for each; a structural
    attribute stays baked."""
    cfg = {"targets": ["cpu", "vmvx"], "entries": [
        {"name": "fq", "op": "FakeQuantWithMinMaxArgs", "attrs": {"min": -1.0, "max": 1.0}, "params": "arguments"}]}
    r = B.build_bundle(cfg, tmp_path / "b")
    rec = r.manifest["artifacts"][0]
    assert rec["params"] == "arguments" and len(rec["function"]["inputs"]) > 1
    from qdq_compiler.jobs.bundle.signature import check_module
    module = check_module((tmp_path / "b" / rec["file"]).read_bytes(), rec["function"], rec["file"])
    assert "hal.buffer" not in module.lookup_function("FakeQuantWithMinMaxArgs").reflection["iree.abi.declaration"]
    x = np.linspace(-3, 3, 257, dtype=np.float32)
    for target in ("cpu", "vmvx"):
        fq = q.load_bundle(tmp_path / "b", target=target).fq
        assert fq.arguments >= {"min", "max", "num_bits", "narrow_range"}
        for kw in ({}, {"num_bits": 4}, {"min": -2.5, "max": 0.5, "narrow_range": True}):
            want = q.oracle.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, **{"min": -1.0, "max": 1.0, **kw})
            assert np.array_equal(fq(inputs=x, **kw).view(np.uint32), want.view(np.uint32)), (target, kw)


def test_example_config_parses():
    cfg = B.parse_config(EXAMPLE)
    assert cfg.targets == tuple(EXAMPLE_TARGETS) and len(cfg.entries) == 8
    ops = {e.op for e in cfg.entries}
    assert {"FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannelGradient",
            "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsGradient", "QuantizeAndDequantizeV2"} <= ops
    axes = sorted(e.attrs["axis"] for e in cfg.entries if e.op == "QuantizeAndDequantizeV2")
    assert axes == [-1, 3]


def test_cli_build_from_json(tmp_path, capsys):
    from qdq_compiler.cli import main
    cfg = tmp_path / "b.json"
    cfg.write_text(json.dumps({"targets": ["cpu", "vmvx"], "entries": [
        {"name": "fq", "op": "FakeQuantWithMinMaxArgs", "attrs": {"num_bits": 4}, "shape": "?"}]}))
    assert main(["build", "--config", str(cfg), "--out", str(tmp_path / "dist"), "--targets", "vmvx"]) == 0
    assert "1 artifact (" in capsys.readouterr().err
    b = q.load_bundle(tmp_path / "dist")
    assert b.target == "vmvx" and b.names() == ["fq"]
    # Building into an existing bundle replaces it, files of the old one included.
    assert main(["build", "--config", str(cfg), "--out", str(tmp_path / "dist")]) == 0
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["fq.cpu.vmfb", "fq.vmvx.vmfb", "manifest.json"]
    assert main(["build", "--config", str(cfg), "--out", str(tmp_path / "dist"), "--targets", "cpu"]) == 0
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["fq.cpu.vmfb", "manifest.json"]
    # A directory that is not a bundle is not overwritten; errors exit 2 with one line.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("x")
    assert main(["build", "--config", str(cfg), "--out", str(tmp_path / "other")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["build", "--config", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "d")]) == 2
    (tmp_path / "b.yaml").write_text("targets: [cpu]\n")   # issue 29.9: it was parsed as TOML
    assert main(["build", "--config", str(tmp_path / "b.yaml"), "--out", str(tmp_path / "d")]) == 2
    assert "unknown format '.yaml'; write the config as .toml or .json" in capsys.readouterr().err
    assert main(["build", "--config", str(cfg), "--out", str(tmp_path / "d"), "--targets", "vmvx",
                 "--target-cpu", "host"]) == 2


# -- issue 14 item 8: a damaged artifact blocks only its own target ------------------------------------


def test_damaged_cpu_artifact_does_not_block_vmvx(example_bundle, tmp_path):
    d = _copy(example_bundle, tmp_path)
    f = d / "act_fq.cpu.vmfb"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01
    f.write_bytes(bytes(data))
    (d / "qdq_axis.cpu.vmfb").write_bytes((d / "qdq_axis.cpu.vmfb").read_bytes()[:100])  # truncated
    # vmvx: its own files verify, so it loads and is bit-exact with the oracle.
    b = q.load_bundle(d, target="vmvx")
    assert b.target == "vmvx" and len(b) == 8
    rng = np.random.default_rng(14)
    for entry in b:
        kwargs = _inputs(entry, rng, batch=3)
        _assert_matches_oracle(entry, kwargs, entry(**kwargs))
    # cpu: refused, naming each damaged file.
    with pytest.raises(BundleError, match=r"'cpu' artifacts: .*act_fq\.cpu\.vmfb does not match the manifest"
                                          r".*qdq_axis\.cpu\.vmfb does not match the manifest") as e:
        q.load_bundle(d, target="cpu")
    assert "vmvx" not in str(e.value)
    # target=None picks cpu (the first that runs here) and refuses it rather than silently falling back.
    with pytest.raises(BundleError, match=r"act_fq\.cpu\.vmfb"):
        q.load_bundle(d)
    # verify_bundle, the whole-bundle check, still checks every file whatever its target.
    with pytest.raises(BundleError, match=r"act_fq\.cpu\.vmfb does not match the manifest"
                                          r".*qdq_axis\.cpu\.vmfb does not match the manifest"):
        B.verify_bundle(d)
    assert B.verify_bundle(example_bundle)["vmvx"] == ""


def test_damaged_manifest_is_refused_for_every_target(example_bundle, tmp_path):
    targets = ["cpu", "vmvx", "vulkan", None]
    # Not JSON any more (truncated).
    d = _copy(example_bundle, tmp_path / "truncated")
    text = (d / B.MANIFEST).read_text()
    (d / B.MANIFEST).write_text(text[: len(text) // 2])
    for t in targets:
        with pytest.raises(BundleError, match="not a readable JSON manifest"):
            q.load_bundle(d, target=t)
        with pytest.raises(BundleError, match="not a readable JSON manifest"):
            B.verify_bundle(d)
    # Valid JSON, but the record of a cpu artifact is broken: refused for vmvx too.
    d = _copy(example_bundle, tmp_path / "record")

    def break_cpu_record(m):
        a = next(a for a in m["artifacts"] if a["file"] == "act_fq.cpu.vmfb")
        del a["sha256"]
    _edit_manifest(d, break_cpu_record)
    for t in targets:
        with pytest.raises(BundleError, match=r"artifacts\[\d+\] lacks sha256"):
            q.load_bundle(d, target=t)
    d = _copy(example_bundle, tmp_path / "escape")

    def escape_cpu_file(m):
        next(a for a in m["artifacts"] if a["file"] == "act_fq.cpu.vmfb")["file"] = "../act_fq.cpu.vmfb"
    _edit_manifest(d, escape_cpu_file)
    for t in targets:
        with pytest.raises(BundleError, match="plain names"):
            q.load_bundle(d, target=t)


def test_a_bundle_appears_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    """Issue 29.6: a full disk left .vmfb files and no manifest. The bundle is written beside --out and renamed
    into place: a failed build leaves --out as it was (absent, or the previous bundle) and names the file."""
    import errno
    from qdq_compiler import fileio
    from qdq_compiler.cli import main
    cfg = tmp_path / "b.json"
    cfg.write_text(json.dumps({"targets": ["cpu"], "entries": [
        {"name": "a", "op": "FakeQuantWithMinMaxArgs", "shape": "?"},
        {"name": "b", "op": "FakeQuantWithMinMaxVars", "shape": "?"}]}))
    real, writes = fileio.atomic_write, []

    def second_write_fails(path, data):
        writes.append(Path(path).name)
        if len(writes) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)
    from qdq_compiler.jobs.bundle import build as Bb
    monkeypatch.setattr(Bb, "atomic_write", second_write_fails)
    out = tmp_path / "dist"
    assert main(["build", "--config", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("qdqc:")]   # the rest: progress lines
    assert errors == [f"qdqc: error: --out {out}: cannot write {writes[1]}: No space left on device; the bundle "
                      f"was left as it was"], err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]
    # A previous bundle stays whole through a failed rebuild; a user's file beside it survives a good one.
    monkeypatch.setattr(Bb, "atomic_write", real)
    assert main(["build", "--config", str(cfg), "--out", str(out)]) == 0
    (out / "NOTES.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    writes.clear()
    monkeypatch.setattr(Bb, "atomic_write", second_write_fails)
    assert main(["build", "--config", str(cfg), "--out", str(out)]) == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    monkeypatch.setattr(Bb, "atomic_write", real)
    assert main(["build", "--config", str(cfg), "--out", str(out), "--targets", "cpu"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["NOTES.txt", "a.cpu.vmfb", "b.cpu.vmfb", "manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "dist"]
    assert q.load_bundle(out).names() == ["a", "b"]
