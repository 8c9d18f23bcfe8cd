"""The artifact cache and the compiler driver (issue 8.2 and 8.3).

* 8 processes compiling one configuration at once leave one valid artifact (and compile it once);
* a truncated or corrupted cached .vmfb (or its sidecar) is detected by its SHA-256 and rebuilt,
  never loaded;
* an unwritable cache dir compiles in memory with one warning on stderr;
* ``qdqc cache info`` / ``qdqc cache clear`` report and remove the cache's own files only;
* iree-compile failures, crashes and hangs (QDQ_COMPILE_TIMEOUT) are a ``CompileError`` that keeps the
  rendered MLIR (``.mlir``) and the exact command (``.command``).

Every test here uses its own cache dir (QDQ_CACHE_DIR under tmp_path), never the shared test cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import CompileError, QDQError, cli, emit, execute, targets
from qdq_compiler import compile as C
from qdq_compiler.config import OpConfig
from qdq_compiler.numerics import bit_equal

CPU_FLAGS = targets.get("cpu").compile_flags
ROOT = Path(__file__).resolve().parent.parent


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("QDQ_CACHE_DIR", str(d))
    monkeypatch.delenv("QDQ_COMPILE_TIMEOUT", raising=False)
    return d


@pytest.fixture
def fresh_process_state(monkeypatch):
    """Forget the in-process artifacts (and bound functions), so that the raw_ops path goes through the
    (test's) cache again."""
    for name in ("_artifacts", "_run_plans", "_fast_plans"):
        if hasattr(execute, name):
            monkeypatch.setattr(execute, name, {})


@pytest.fixture(scope="module")
def real_vmfb() -> dict[str, bytes]:
    """Real iree-compile output for the two modules the in-process cache tests use (compiled once)."""
    return {m: C.compile_mlir(m, CPU_FLAGS) for m in (module(), module(shape="?x?"))}


@pytest.fixture
def compile_counter(monkeypatch, real_vmfb):
    """Counts compiles; answers with the real bytes of the module (so the cache logic sees real artifacts)."""
    calls = []

    def counting(mlir, flags, **kw):
        calls.append(flags)
        return real_vmfb[mlir]

    monkeypatch.setattr(C, "compile_mlir", counting)
    return calls


def module(op="FakeQuantWithMinMaxArgs", attrs=None, shape="?"):
    return emit.render(OpConfig.make(op, attrs or {}, "float32", shape, "cpu", "runtime"))


def cache_files(d: Path) -> dict[str, list[str]]:
    out = {}
    for f in sorted(d.iterdir()) if d.is_dir() else []:
        kind = "tmp" if f.name.endswith(".tmp") else f.suffix.lstrip(".")
        out.setdefault(kind, []).append(f.name)
    return out


def child_env(cache_dir, **extra) -> dict:
    env = dict(os.environ, QDQ_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT / "tests"), **extra)
    env.pop("QDQ_COMPILE_TIMEOUT", None)
    return env


# A child that computes one op through the public compiled path, counts its compiles, and checks the
# result against the oracle, bit for bit. Prints one JSON line.
RUN_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import qdq_compiler as q
    from qdq_compiler import compile as C
    from qdq_compiler.numerics import bit_equal
    compiles = []
    real = C.compile_mlir
    C.compile_mlir = lambda *a, **k: compiles.append(1) or real(*a, **k)
    x = np.linspace(-2, 2, 101, dtype=np.float32)
    kw = dict(inputs=x, min=-1.0, max=1.0, num_bits=%d)
    got = q.raw_ops.FakeQuantWithMinMaxArgs(**kw)
    want = q.oracle.raw_ops.FakeQuantWithMinMaxArgs(**kw)
    print(json.dumps({"compiles": len(compiles), "equal": bit_equal(got, want)}))
""")


def run_child(cache_dir, num_bits=8, **env):
    proc = subprocess.run([sys.executable, "-c", RUN_CHILD % num_bits], env=child_env(cache_dir, **env),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


# ------------------------------------------------------------------------------------------------
# Concurrency


CONCURRENT_CHILD = textwrap.dedent("""
    import hashlib, json, os, sys, time
    from pathlib import Path
    import numpy as np
    from qdq_compiler import compile as C, execute
    from qdq_compiler.validation import bind
    compiles = []
    real = C.compile_mlir
    C.compile_mlir = lambda *a, **k: compiles.append(1) or real(*a, **k)
    barrier = Path(sys.argv[1])
    (barrier / f"ready-{os.getpid()}").touch()
    while not (barrier / "go").exists():
        time.sleep(0.002)
    call = bind("FakeQuantWithMinMaxVarsPerChannel", dict(inputs=np.zeros((2, 3), np.float32),
                min=np.zeros(3, np.float32), max=np.ones(3, np.float32)))
    art = execute.artifact_for(execute.config_for_call(call, "cpu"))
    print(json.dumps({"sha": hashlib.sha256(art.vmfb).hexdigest(), "compiles": len(compiles),
                      "path": str(art.path)}))
""")


def test_eight_processes_compiling_one_config_leave_one_valid_artifact(cache, tmp_path):
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    n = 8
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_CHILD, str(barrier)], env=child_env(cache),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(n)]
    deadline = time.time() + 240
    while len(list(barrier.glob("ready-*"))) < n:
        assert time.time() < deadline, "children did not start"
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None]
        time.sleep(0.01)
    (barrier / "go").touch()  # all 8 start compiling the same configuration at once
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))

    files = cache_files(cache)
    assert len(files.get("vmfb", [])) == 1 and len(files.get("json", [])) == 1, files
    assert "tmp" not in files, files
    vmfb = cache / files["vmfb"][0]
    data = vmfb.read_bytes()
    record = json.loads((cache / files["json"][0]).read_text())
    assert record["sha256"] == sha(data) and record["bytes"] == len(data)
    assert {r["sha"] for r in results} == {sha(data)}, "every process got the verified bytes"
    assert {r["path"] for r in results} == {str(vmfb)}
    # The per-key lock: one process compiled, the seven others waited and loaded its artifact.
    assert sum(r["compiles"] for r in results) == 1, results


def test_artifact_left_by_concurrent_compiles_runs_correctly(cache):
    """After a compile, a fresh process loads the cached artifact (no compile) and computes TF's bits."""
    first, _ = run_child(cache)
    assert first == {"compiles": 1, "equal": True}
    again, _ = run_child(cache, num_bits=4)  # num_bits is a runtime parameter: same artifact
    assert again == {"compiles": 0, "equal": True}


def test_cache_clear_then_public_path_rebuilds(cache):
    first, _ = run_child(cache)
    assert first["compiles"] == 1
    assert C.cache_clear() == 1 and not any(cache.iterdir())
    again, _ = run_child(cache)
    assert again == {"compiles": 1, "equal": True}


# ------------------------------------------------------------------------------------------------
# Integrity: truncated or corrupted files are rebuilt, never loaded


def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _flip_byte(p: Path):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x40
    p.write_bytes(bytes(b))


def _garbage(p: Path):
    p.write_bytes(os.urandom(p.stat().st_size))


CORRUPTIONS = {
    "vmfb-truncated": ("vmfb", _truncate),
    "vmfb-empty": ("vmfb", lambda p: p.write_bytes(b"")),
    "vmfb-one-byte-flipped": ("vmfb", _flip_byte),
    "vmfb-random-bytes": ("vmfb", _garbage),
    "vmfb-deleted": ("vmfb", lambda p: p.unlink()),
    "vmfb-appended": ("vmfb", lambda p: p.write_bytes(p.read_bytes() + b"\0" * 16)),
    "sidecar-deleted": ("json", lambda p: p.unlink()),
    "sidecar-not-json": ("json", lambda p: p.write_text("{not json")),
    "sidecar-wrong-hash": ("json", lambda p: p.write_text(json.dumps({"sha256": "0" * 64}))),
    "sidecar-hash-not-a-string": ("json", lambda p: p.write_text(json.dumps({"sha256": 12}))),
    "sidecar-no-hash": ("json", lambda p: p.write_text("{}")),
    "sidecar-binary": ("json", lambda p: p.write_bytes(b"\xff\xfe\x00garbage")),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_corrupted_cache_entry_is_rebuilt(cache, compile_counter, kind):
    mlir = module()
    path, good = C.cached_compile(mlir, CPU_FLAGS)
    assert path is not None and len(compile_counter) == 1
    key = C.cache_key(mlir, CPU_FLAGS)
    which, damage = CORRUPTIONS[kind]
    damage(cache / f"{key}.{which}")

    path2, data = C.cached_compile(mlir, CPU_FLAGS)
    assert len(compile_counter) == 2, "the damaged entry must be compiled again"
    assert sha(data) == sha(good), "the damaged bytes must never be returned"
    assert path2 == cache / f"{key}.vmfb" and path2.read_bytes() == good, "the entry is repaired on disk"
    assert json.loads((cache / f"{key}.json").read_text())["sha256"] == sha(good)
    # And now it is a hit again.
    C.cached_compile(mlir, CPU_FLAGS)
    assert len(compile_counter) == 2


@pytest.mark.parametrize("kind", ["vmfb-truncated", "vmfb-random-bytes"])
def test_corrupted_artifact_is_never_loaded_by_the_runtime(cache, kind):
    """End to end in a fresh process: the public path rebuilds a damaged artifact and computes TF's bits."""
    first, _ = run_child(cache)
    assert first["compiles"] == 1
    vmfbs = list(cache.glob("*.vmfb"))
    assert len(vmfbs) == 1
    CORRUPTIONS[kind][1](vmfbs[0])
    again, _ = run_child(cache)
    assert again == {"compiles": 1, "equal": True}
    third, _ = run_child(cache)
    assert third == {"compiles": 0, "equal": True}


def test_stale_temp_files_are_ignored(cache, compile_counter):
    """A temp file left by a killed writer neither counts as an artifact nor blocks the write."""
    mlir = module()
    key = C.cache_key(mlir, CPU_FLAGS)
    cache.mkdir(parents=True)
    (cache / f"{key}.vmfb.abc123.tmp").write_bytes(b"half a module")
    path, data = C.cached_compile(mlir, CPU_FLAGS)
    assert path.read_bytes() == data and len(compile_counter) == 1
    assert C.cache_info()["artifacts"] == 1


# ------------------------------------------------------------------------------------------------
# Unwritable cache dir: compile in memory, warn once on stderr


@pytest.fixture(params=["under-a-file", "is-a-file"])
def unwritable(request, tmp_path, monkeypatch):
    """A cache dir that cannot be created, even by root: a path under (or at) a regular file."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a regular file")
    d = blocker / "sub" if request.param == "under-a-file" else blocker
    monkeypatch.setenv("QDQ_CACHE_DIR", str(d))
    monkeypatch.delenv("QDQ_COMPILE_TIMEOUT", raising=False)
    return d


def test_unwritable_cache_dir_compiles_in_memory_with_a_warning(unwritable, capfd, compile_counter, real_vmfb):
    mlir = module()
    path, data = C.cached_compile(mlir, CPU_FLAGS)
    assert path is None and data[:8] and len(data) > 1000
    path2, data2 = C.cached_compile(module(shape="?x?"), CPU_FLAGS)
    assert path2 is None
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"one warning per directory and process, got: {err!r}"
    assert lines[0].startswith("qdq_compiler: warning:") and str(unwritable) in lines[0]
    assert "not writable" in lines[0] and "QDQ_CACHE_DIR" in lines[0]
    assert data == real_vmfb[mlir] and len(compile_counter) == 2
    assert C.cache_info()["artifacts"] == 0 and C.cache_clear() == 0


def test_unwritable_cache_dir_public_path_still_computes(unwritable):
    result, err = run_child(unwritable)
    assert result == {"compiles": 1, "equal": True}
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "not writable" in warnings[0], err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes through chmod")
def test_read_only_cache_dir(tmp_path, monkeypatch, capfd):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        monkeypatch.setenv("QDQ_CACHE_DIR", str(d))
        path, data = C.cached_compile(module(), CPU_FLAGS)
        assert path is None and data
        assert "not writable" in capfd.readouterr().err
    finally:
        d.chmod(0o755)


# ------------------------------------------------------------------------------------------------
# qdqc cache info | clear


def qdqc(argv, capsys):
    try:
        rc = cli.main(argv)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_cache_info_and_clear(cache, capsys, compile_counter):
    rc, out, err = qdqc(["cache", "info"], capsys)
    assert rc == 0 and json.loads(out) == {"dir": str(cache), "artifacts": 0, "bytes": 0}
    _, a = C.cached_compile(module(), CPU_FLAGS)
    _, b = C.cached_compile(module(shape="?x?"), CPU_FLAGS)
    (cache / "README.txt").write_text("not ours")
    (cache / "notes.json").write_text("{}")           # a .json that is not a sidecar
    (cache / "other.vmfb").write_bytes(b"x")          # a .vmfb that is not a cache entry

    rc, out, err = qdqc(["cache", "info"], capsys)
    assert rc == 0 and err == ""
    info = json.loads(out)
    assert info == {"dir": str(cache), "artifacts": 2, "bytes": len(a) + len(b)}

    index = cache / "index"  # the config -> key index (compile.lookup_index) lives here
    index.mkdir(exist_ok=True)
    (index / ("a" * 64 + ".key")).write_text("b" * 64)

    rc, out, err = qdqc(["cache", "clear"], capsys)
    assert rc == 0 and out.strip() == f"removed 2 artifacts from {cache}"
    assert sorted(p.name for p in cache.iterdir()) == ["README.txt", "notes.json", "other.vmfb"]
    rc, out, _ = qdqc(["cache", "info"], capsys)
    assert json.loads(out)["artifacts"] == 0


def test_cli_cache_on_a_missing_dir(tmp_path, monkeypatch, capsys):
    d = tmp_path / "never-created"
    monkeypatch.setenv("QDQ_CACHE_DIR", str(d))
    rc, out, _ = qdqc(["cache", "info"], capsys)
    assert rc == 0 and json.loads(out)["artifacts"] == 0
    rc, out, _ = qdqc(["cache", "clear"], capsys)
    assert rc == 0 and "removed 0 artifacts" in out
    assert not d.exists()


def test_cache_clear_then_rebuild(cache, compile_counter):
    mlir = module()
    C.cached_compile(mlir, CPU_FLAGS)
    assert C.cache_clear() == 1 and C.cache_info()["artifacts"] == 0
    C.cached_compile(mlir, CPU_FLAGS)
    assert len(compile_counter) == 2 and C.cache_info()["artifacts"] == 1


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "x"))
    assert C.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("QDQ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert C.cache_dir() == tmp_path / "xdg" / "qdq_compiler"


# ------------------------------------------------------------------------------------------------
# Compiler failures and hangs: CompileError with .mlir and .command


def assert_compile_error(e: CompileError, mlir: str, flags=CPU_FLAGS):
    assert isinstance(e, QDQError) and isinstance(e, ValueError)
    assert e.mlir == mlir
    assert isinstance(e.command, list) and e.command[1:4] == ["-", "-o", "-"]
    assert list(flags) == e.command[4:]
    assert "command:" in str(e)


@pytest.mark.parametrize("mlir", [
    "func.func @f( {",                                                      # does not parse
    "func.func @f(%a: tensor<4xf32>) -> tensor<4xi32> {\n"                  # parses, does not verify
    "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xi32>\n}\n",
    "",                                                                      # empty input
], ids=["syntax", "type-mismatch", "empty"])
def test_invalid_program_is_a_compile_error(mlir):
    with pytest.raises(CompileError) as info:
        C.compile_mlir(mlir, CPU_FLAGS, what="bad module")
    e = info.value
    if mlir:
        assert "error" in str(e)
    assert "bad module" in str(e)
    assert_compile_error(e, mlir)
    assert str(e.command[0]).endswith("iree-compile")


def test_invalid_flag_is_a_compile_error():
    flags = ("--iree-hal-target-backends=no-such-backend",)
    mlir = module()
    with pytest.raises(CompileError) as info:
        C.compile_mlir(mlir, flags)
    assert_compile_error(info.value, mlir, flags)


def test_failed_compile_leaves_nothing_in_the_cache(cache):
    with pytest.raises(CompileError):
        C.cached_compile("func.func @f( {", CPU_FLAGS)
    files = cache_files(cache)
    assert not files.get("vmfb") and not files.get("json") and not files.get("tmp"), files


def test_timeout_with_the_real_compiler(monkeypatch):
    monkeypatch.setenv("QDQ_COMPILE_TIMEOUT", "0.01")
    mlir = module("FakeQuantWithMinMaxVarsPerChannelGradient", shape="?x?")
    t0 = time.monotonic()
    with pytest.raises(CompileError) as info:
        C.compile_mlir(mlir, CPU_FLAGS)
    assert time.monotonic() - t0 < 30
    assert "timed out after 0.01 s" in str(info.value) and "QDQ_COMPILE_TIMEOUT" in str(info.value)
    assert_compile_error(info.value, mlir)


def fake_tool(tmp_path: Path, body: str) -> str:
    p = tmp_path / "iree-compile"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return str(p)


def _gone_or_zombie(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_hang_is_killed_after_the_timeout(tmp_path, monkeypatch):
    """A compiler that hangs (here a script that starts a child and sleeps) is killed with its children."""
    pidfile = tmp_path / "child.pid"
    tool = fake_tool(tmp_path, f"sleep 120 &\necho $! > {pidfile}\nwait")
    monkeypatch.setattr(C, "iree_compile_path", lambda: tool)
    monkeypatch.setenv("QDQ_COMPILE_TIMEOUT", "3")
    mlir = module()
    t0 = time.monotonic()
    with pytest.raises(CompileError) as info:
        C.compile_mlir(mlir, CPU_FLAGS, what="hang test")
    assert time.monotonic() - t0 < 30
    e = info.value
    assert "timed out after 3 s" in str(e) and "hang test" in str(e)
    assert_compile_error(e, mlir)
    assert e.command[0] == tool
    child = int(pidfile.read_text())
    deadline = time.time() + 10
    while not _gone_or_zombie(child) and time.time() < deadline:
        time.sleep(0.05)
    assert _gone_or_zombie(child), "the compiler's children must be killed too"


def test_timeout_argument_overrides_the_environment(tmp_path, monkeypatch):
    tool = fake_tool(tmp_path, "sleep 60")
    monkeypatch.setattr(C, "iree_compile_path", lambda: tool)
    monkeypatch.setenv("QDQ_COMPILE_TIMEOUT", "1000")
    with pytest.raises(CompileError, match="timed out after 0.5 s"):
        C.compile_mlir("x", CPU_FLAGS, timeout_s=0.5)


@pytest.mark.parametrize("body, words", [
    ("kill -SEGV $$", "killed by signal 11"),
    ("cat > /dev/null; exit 0", "wrote no module"),
    ("echo 'LLVM ERROR: out of memory' >&2; exit 70", "exit 70"),
], ids=["crash", "no-output", "exit-code"])
def test_compiler_crash_is_a_compile_error(tmp_path, monkeypatch, body, words):
    tool = fake_tool(tmp_path, body)
    monkeypatch.setattr(C, "iree_compile_path", lambda: tool)
    mlir = module()
    with pytest.raises(CompileError) as info:
        C.compile_mlir(mlir, CPU_FLAGS)
    assert words in str(info.value)
    assert_compile_error(info.value, mlir)
    if "LLVM ERROR" in body:
        assert "out of memory" in str(info.value)


def test_missing_compiler_is_a_compile_error(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "iree_compile_path", lambda: str(tmp_path / "no-such-iree-compile"))
    with pytest.raises(CompileError, match="cannot run iree-compile") as info:
        C.compile_mlir("x", CPU_FLAGS)
    assert info.value.mlir == "x"


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf"])
def test_bad_timeout_setting_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv("QDQ_COMPILE_TIMEOUT", value)
    with pytest.raises(QDQError, match="QDQ_COMPILE_TIMEOUT") as info:
        C.compile_mlir(module(), CPU_FLAGS)
    assert not isinstance(info.value, CompileError)


def test_timeout_through_the_public_path(cache, fresh_process_state, tmp_path, monkeypatch):
    """raw_ops on a configuration that is not cached, with a hanging compiler: a CompileError, no hang."""
    tool = fake_tool(tmp_path, "sleep 60")
    monkeypatch.setattr(C, "iree_compile_path", lambda: tool)
    monkeypatch.setenv("QDQ_COMPILE_TIMEOUT", "0.5")
    with pytest.raises(CompileError) as info:
        q.raw_ops.FakeQuantWithMinMaxArgs(inputs=np.zeros(3, np.float32))
    assert "FakeQuantWithMinMaxArgs" in str(info.value) and "timed out" in str(info.value)
    assert "FakeQuantWithMinMaxArgs" in info.value.mlir
    assert not list(cache.glob("*.vmfb"))


def test_compile_error_in_the_cli_is_one_line(cache, fresh_process_state, tmp_path, monkeypatch, capsys):
    tool = fake_tool(tmp_path, "echo 'error: something broke' >&2\necho 'second line' >&2\nexit 1")
    monkeypatch.setattr(C, "iree_compile_path", lambda: tool)
    rc, out, err = qdqc(["compile", "FakeQuantWithMinMaxArgs", "-o", str(tmp_path / "x.vmfb")], capsys)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qdqc: error: iree-compile failed"), err
    assert not (tmp_path / "x.vmfb").exists()


def test_good_compile_still_works_after_failures(cache, fresh_process_state):
    x = np.linspace(-2, 2, 33, dtype=np.float32)
    got = q.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, num_bits=3)
    assert bit_equal(got, q.oracle.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, num_bits=3))


# -- the configuration -> artifact index covers every input of an artifact (issue 11) -------------------

_KEY_SCRIPT = """
import qdq_compiler, sys
from qdq_compiler.config import OpConfig
from qdq_compiler.execute import artifact_for
assert qdq_compiler.__file__.startswith(sys.argv[1]), qdq_compiler.__file__
art = artifact_for(OpConfig.make("FakeQuantWithMinMaxArgs", {}, "float32", "?", "cpu"))
print(art.key, "rendered" if art._mlir is not None else "from-index")
"""


def test_index_is_not_stale_after_the_package_changes(tmp_path):
    """A package upgrade keeps the user's cache: an edit anywhere in the package (here: the ``cpu`` target
    gains the keeps_denormals quirk, which adds flush functions to the program) must not be served the
    artifact the old code built. Before issue 11 the index hashed only the templates, emit.py and one
    oracle module, and this served the stale artifact."""
    import shutil
    root = tmp_path / "copy"
    shutil.copytree(Path(q.__file__).parent, root / "qdq_compiler",
                    ignore=shutil.ignore_patterns("__pycache__", "goldens"))
    shutil.copytree(emit.TEMPLATE_DIR, root / "templates")
    env = {**os.environ, "PYTHONPATH": str(root), "QDQ_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("QDQ_TEMPLATE_DIR", None)

    def artifact():
        out = subprocess.run([sys.executable, "-c", _KEY_SCRIPT, str(root)], env=env, cwd=tmp_path,
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    key, how = artifact()
    assert how == "rendered"
    assert artifact() == [key, "from-index"]  # the index serves an unchanged package without rendering
    tfile = root / "qdq_compiler" / "targets" / "__init__.py"
    text = tfile.read_text()
    quirks_line = "_LLVM_CPU_QUIRKS = Quirks(roundeven_is_slow=True, single_chain_reductions=True)"
    assert quirks_line in text
    tfile.write_text(text.replace(quirks_line, quirks_line[:-1] + ", keeps_denormals=True)"))
    new_key, how = artifact()
    assert how == "rendered" and new_key != key
