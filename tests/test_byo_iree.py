"""Bring your own IREE: QDQ_IREE_TOOLS points qdqc compile/validate, bundles and the lit suite at another IREE's
tools, the versions of its compiler and of the Python runtime must agree, and reports say which IREE ran.

The "other IREE" is a stand-in tool directory: an ``iree-compile`` shell script that prints a chosen
``--version``, logs every other call to a marker file and forwards it to the real iree-compile, next to links
to the real runtime tools.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qdq_compiler import compile as C
from qdq_compiler.errors import QDQError
from qdq_compiler.targets import cpu as cpu_probe

ROOT = Path(__file__).resolve().parent.parent
QDQC = [sys.executable, "-m", "qdq_compiler"]
RT_VERSION, RT_REVISION, _ = C.runtime_release()
# A one-entry vmvx compile: no CPU probe, a second or so.
COMPILE = ["compile", "FakeQuantWithMinMaxArgs", "--shape", "4", "--target", "vmvx"]

pytestmark = pytest.mark.skipif(RT_VERSION is None, reason="no IREE Python runtime with version info")


def _real_tools() -> dict:
    from iree.compiler.tools.binaries import find_tool
    tools = {"iree-compile": C.iree_compile_path(), "iree-opt": None}
    try:
        tools["iree-opt"] = C.iree_tool("iree-opt") if C.iree_tools_dir() else find_tool("iree-opt")
    except Exception:  # noqa: BLE001 - the lit test below skips without it
        pass
    for name in ("iree-run-module", "iree-cpuinfo"):
        tools[name] = cpu_probe.runtime_tool(name)
    return tools


def make_tools(d: Path, version: str, *, marker: Path, links=("iree-run-module", "iree-cpuinfo", "iree-opt")) -> Path:
    """A stand-in IREE tool directory: ``iree-compile --version`` prints ``IREE compiler version <version>``;
    any other call is appended to ``marker`` and runs the real iree-compile."""
    real = _real_tools()
    d.mkdir(parents=True)
    script = d / "iree-compile"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then\n'
        f"  printf 'IREE (https://iree.dev):\\n  IREE compiler version %s\\n  LLVM version 24.0.0git\\n"
        f"  Optimized build\\n' {shlex.quote(version)}\n"
        "  exit 0\n"
        "fi\n"
        f'echo "$*" >> {shlex.quote(str(marker))}\n'
        f'exec {shlex.quote(real["iree-compile"])} "$@"\n')
    script.chmod(0o755)
    for name in links:
        if real.get(name):
            (d / name).symlink_to(real[name])
    return d


def _release(version=RT_VERSION, revision=RT_REVISION) -> str:
    return f"{version} @ {revision}" if revision else version


@pytest.fixture
def standin(tmp_path):
    """(the tool directory, its marker file): a stand-in that agrees with the installed Python runtime."""
    marker = tmp_path / "calls.log"
    return make_tools(tmp_path / "tools", _release(), marker=marker), marker


def _env(tmp_path, **kw) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (C.IREE_TOOLS_ENV, C.IREE_ALLOW_MISMATCH_ENV)}
    env[C.CACHE_ENV] = str(tmp_path / "cache")
    env.update({k: str(v) for k, v in kw.items()})
    return env


def _qdqc(args, env, timeout=300):
    return subprocess.run(QDQC + list(args), capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)


def _compiles(marker: Path) -> list[str]:
    """The iree-compile calls the stand-in forwarded (not --version)."""
    return marker.read_text().splitlines() if marker.exists() else []


# -- which IREE ------------------------------------------------------------------------------------


def test_iree_info_reports_the_tools_dir(standin, monkeypatch):
    d, _ = standin
    monkeypatch.delenv(C.IREE_TOOLS_ENV, raising=False)
    monkeypatch.delenv(C.IREE_ALLOW_MISMATCH_ENV, raising=False)
    pkg = C.iree_info()
    if pkg["tools"] == C.PACKAGE_TOOLS:  # the iree-base-* packages: versions from their version modules
        from iree.compiler import version
        assert pkg["compiler_version"] == version.VERSION and pkg["version_check"] == "ok"
    assert pkg["runtime_version"] == RT_VERSION
    monkeypatch.setenv(C.IREE_TOOLS_ENV, str(d))
    info = C.iree_info()
    json.dumps(info)  # goes into reports as it is
    assert info["tools"] == str(d.resolve())
    assert info["compiler"] == str(d.resolve() / "iree-compile")
    assert info["compiler_version"] == RT_VERSION and info["compiler_revision"] == RT_REVISION
    assert info["runtime_version"] == RT_VERSION and info["version_check"] == "ok"
    assert C.compiler_version() == RT_VERSION
    assert C.iree_compile_path() == str(d.resolve() / "iree-compile")
    assert cpu_probe.runtime_tool("iree-run-module") == str(d.resolve() / "iree-run-module")
    # The cache keys name this build (version, revision and the binary itself), not just the version.
    assert C.compiler_identity() != pkg["compiler_version"] and str(d.resolve()) in C.compiler_identity()


def test_qdqc_compile_uses_the_tools_dir_and_never_mixes_artifacts(standin, tmp_path):
    d, marker = standin
    env = _env(tmp_path, QDQ_IREE_TOOLS=d)
    p = _qdqc(COMPILE + ["-o", tmp_path / "a.vmfb"], env)
    assert p.returncode == 0, p.stderr
    calls = _compiles(marker)
    assert len(calls) == 1 and calls[0].startswith("- -o - --iree-hal-target-backends=vmvx")
    # Again: from the cache, the stand-in is not asked to compile.
    assert _qdqc(COMPILE + ["-o", tmp_path / "b.vmfb"], env).returncode == 0
    assert len(_compiles(marker)) == 1
    # The package's IREE, same cache: its own artifact (same bytes: the stand-in forwards to the same
    # iree-compile), under another key; the stand-in is not involved.
    p = _qdqc(COMPILE + ["-o", tmp_path / "c.vmfb"], _env(tmp_path))
    assert p.returncode == 0, p.stderr
    assert len(_compiles(marker)) == 1
    assert (tmp_path / "c.vmfb").read_bytes() == (tmp_path / "a.vmfb").read_bytes()
    assert len(list((tmp_path / "cache").glob("*.vmfb"))) == 2
    # A rebuilt iree-compile (same version string, as in a local build): a new key, compiled again.
    st = (d / "iree-compile").stat()
    os.utime(d / "iree-compile", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert _qdqc(COMPILE + ["-o", tmp_path / "d.vmfb"], env).returncode == 0
    assert len(_compiles(marker)) == 2


def test_version_mismatch_is_refused(tmp_path, monkeypatch):
    marker = tmp_path / "calls.log"
    d = make_tools(tmp_path / "tools", "2.9.0 @ 0123456789abcdef0123456789abcdef01234567", marker=marker)
    env = _env(tmp_path, QDQ_IREE_TOOLS=d)
    p = _qdqc(COMPILE + ["-o", tmp_path / "a.vmfb"], env)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    err = p.stderr
    assert "disagree" in err and "2.9.0" in err and RT_VERSION in err, err
    assert "PYTHONPATH" in err and "QDQ_IREE_TOOLS" in err and str(d.resolve()) in err, err
    assert _compiles(marker) == [] and not (tmp_path / "a.vmfb").exists()
    # Deliberately mixing them is possible, and recorded.
    p = _qdqc(COMPILE + ["-o", tmp_path / "a.vmfb"], {**env, "QDQ_IREE_ALLOW_MISMATCH": "1"})
    assert p.returncode == 0, p.stderr
    assert len(_compiles(marker)) == 1
    monkeypatch.setenv(C.IREE_TOOLS_ENV, str(d))
    monkeypatch.setenv(C.IREE_ALLOW_MISMATCH_ENV, "1")
    assert C.iree_info()["version_check"].startswith("mismatch allowed by QDQ_IREE_ALLOW_MISMATCH")
    monkeypatch.delenv(C.IREE_ALLOW_MISMATCH_ENV)
    assert C.iree_info()["version_check"].startswith("MISMATCH")
    with pytest.raises(QDQError, match=r"disagree \(release versions differ.*iree-compile 2\.9\.0.*PYTHONPATH"):
        C.check_iree()


def test_same_version_other_revision_is_a_mismatch(tmp_path, monkeypatch):
    if not RT_REVISION:
        pytest.skip("the runtime reports no revision")
    other = "f" * 40 if not RT_REVISION.startswith("f") else "e" * 40
    d = make_tools(tmp_path / "tools", f"{RT_VERSION} @ {other}", marker=tmp_path / "calls.log")
    monkeypatch.setenv(C.IREE_TOOLS_ENV, str(d))
    monkeypatch.delenv(C.IREE_ALLOW_MISMATCH_ENV, raising=False)
    with pytest.raises(QDQError, match="source revisions differ"):
        C.check_iree()


def test_unknown_version_runs_unchecked(tmp_path, monkeypatch):
    """A local build without embedded release info prints ``(unknown)``: nothing to compare, so it runs,
    recorded as unchecked; its artifacts are keyed by the binary (a rebuild is a new key)."""
    d = make_tools(tmp_path / "tools", "(unknown)", marker=tmp_path / "calls.log")
    monkeypatch.setenv(C.IREE_TOOLS_ENV, str(d))
    monkeypatch.delenv(C.IREE_ALLOW_MISMATCH_ENV, raising=False)
    info = C.check_iree()
    assert info["compiler_version"] == "(unknown)" and info["version_check"].startswith("unchecked: compiler")
    before = C.compiler_identity()
    st = (d / "iree-compile").stat()
    os.utime(d / "iree-compile", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert C.compiler_identity() != before


def test_missing_dir_or_tool_is_a_clear_error(tmp_path, monkeypatch):
    p = _qdqc(COMPILE + ["-o", tmp_path / "a.vmfb"], _env(tmp_path, QDQ_IREE_TOOLS=tmp_path / "nowhere"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "QDQ_IREE_TOOLS" in p.stderr and "is not a directory" in p.stderr and "nowhere" in p.stderr
    (tmp_path / "empty").mkdir()
    p = _qdqc(COMPILE + ["-o", tmp_path / "a.vmfb"], _env(tmp_path, QDQ_IREE_TOOLS=tmp_path / "empty"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "QDQ_IREE_TOOLS" in p.stderr and "no executable iree-compile" in p.stderr
    # A directory with iree-compile only: the runtime tools are not taken from another IREE.
    d = make_tools(tmp_path / "tools", _release(), marker=tmp_path / "calls.log", links=())
    monkeypatch.setenv(C.IREE_TOOLS_ENV, str(d))
    with pytest.raises(QDQError, match=r"QDQ_IREE_TOOLS=.* has no executable iree-run-module"):
        cpu_probe.runtime_tool("iree-run-module")
    # An iree-compile that does not say its version.
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "iree-compile").write_text("#!/bin/sh\necho hello\n")
    (bad / "iree-compile").chmod(0o755)
    monkeypatch.setenv(C.IREE_TOOLS_ENV, str(bad))
    with pytest.raises(QDQError, match=r"printed no 'IREE compiler version \.\.\.' line.*hello"):
        C.iree_info()


def test_qdqc_validate_uses_the_tools_dir(standin, tmp_path):
    d, marker = standin
    args = ["validate", "--ops", "FakeQuantWithMinMaxArgs", "--targets", "vmvx", "--dtypes", "f32", "--sizes", "8",
            "--shard", "1/1000", "--jobs", "1", "--no-progress", "--report", tmp_path / "report.json"]
    p = _qdqc(args, _env(tmp_path, QDQ_IREE_TOOLS=d))
    assert p.returncode == 0, p.stdout + p.stderr
    assert _compiles(marker), "validate did not compile with QDQ_IREE_TOOLS' iree-compile"
    bad = make_tools(tmp_path / "bad", "2.9.0", marker=tmp_path / "bad.log")
    p = _qdqc(args, _env(tmp_path, QDQ_IREE_TOOLS=bad))
    assert p.returncode != 0 and "disagree" in p.stdout + p.stderr
    assert _compiles(tmp_path / "bad.log") == []


def test_bundle_manifest_records_the_iree(standin, tmp_path, monkeypatch):
    import qdq_compiler as q
    from qdq_compiler.jobs import bundle as B
    d, marker = standin
    monkeypatch.setenv(C.IREE_TOOLS_ENV, str(d))
    monkeypatch.delenv(C.IREE_ALLOW_MISMATCH_ENV, raising=False)
    monkeypatch.setenv(C.CACHE_ENV, str(tmp_path / "cache"))
    cfg = {"name": "byo", "targets": ["vmvx"],
           "entries": [{"name": "fq", "op": "FakeQuantWithMinMaxArgs", "shape": "?"}]}
    res = B.build_bundle(cfg, tmp_path / "b")
    assert _compiles(marker)
    iree = res.manifest["iree"]
    assert iree["tools"] == str(d.resolve()) and iree["compiler_version"] == RT_VERSION
    assert iree["runtime_version"] == RT_VERSION and iree["version_check"] == "ok"
    assert json.loads((tmp_path / "b" / B.MANIFEST).read_text())["iree"] == iree
    b = q.load_bundle(tmp_path / "b", target="vmvx")
    assert b.fq(inputs=[0.3, -7.0]).tolist() == pytest.approx([0.3, -6.0], abs=0.03)


def test_lit_runs_on_the_tools_dir(standin, tmp_path):
    lit = Path(sys.executable).parent / "lit"
    if not lit.exists() and not shutil.which("lit"):
        pytest.skip("lit is not installed")
    lit = str(lit) if lit.exists() else shutil.which("lit")
    d, marker = standin
    if not (d / "iree-opt").exists():
        pytest.skip("no iree-opt to link into the stand-in")
    test = ROOT / "lit_tests" / "lowering" / "dispatch_given_range_fake_quant.test"
    p = subprocess.run([lit, "-v", str(test)], capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env=_env(tmp_path, QDQ_IREE_TOOLS=d))
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert f"tools: {d.resolve()}" in out and "version check: ok" in out, out
    assert any("--compile-to=flow" in c for c in _compiles(marker)), "lit did not run the stand-in iree-compile"
    bad = make_tools(tmp_path / "bad", "2.9.0", marker=tmp_path / "bad.log")
    p = subprocess.run([lit, "-v", str(test)], capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env=_env(tmp_path, QDQ_IREE_TOOLS=bad))
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "fatal" in out and "disagree" in out and "2.9.0" in out, out
    assert _compiles(tmp_path / "bad.log") == []
