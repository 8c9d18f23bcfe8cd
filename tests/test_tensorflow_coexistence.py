"""Vulkan beside TensorFlow in one process (issue 14): never a crash, never a hang.

TensorFlow's libtensorflow_framework.so.2 exports its own LLVM into the global symbol scope; Mesa's lavapipe
JIT (libLLVM-15) would bind to it (see qdq_compiler/targets/conflicts.py). The process tests run a second
virtualenv with tensorflow-cpu, ``.venv-tf`` (made by .ci/run; kept out of the package's dependencies):
TensorFlow first, then Vulkan; Vulkan first, then TensorFlow; and a Vulkan driver loaded behind
qdq_compiler's back, where the target must refuse rather than crash. Without ``.venv-tf`` or a Vulkan
device they skip, saying why.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from qdq_compiler.targets import conflicts
from targets_util import require

ROOT = Path(__file__).resolve().parent.parent
TF_PY = ROOT / ".venv-tf" / "bin" / "python"
INSTALL_WAIT_S = 900  # .ci/run's background install of tensorflow-cpu: ~150 s here
TIMEOUT_S = 300  # TensorFlow's import, a compile and a lavapipe JIT on a busy 2-core machine: well under this

# The checks every script shares: a Vulkan result must equal the oracle (and TensorFlow) bit for bit.
PRELUDE = """
import json, sys
import numpy as np
def check(q, tf, **attrs):
    x = np.concatenate([np.linspace(-8, 8, 1001, dtype=np.float32),
                        np.array([0.0, -0.0, 1e-40, -1e-40, 3.0e38, -np.inf, np.inf], np.float32)])
    got = q.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, target="vulkan", **attrs)
    want = q.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, target="oracle", **attrs)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (attrs, got, want)
    if tf is not None:
        ref = tf.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, **attrs).numpy()
        assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), (attrs, got, ref)
    print("CHECKED", json.dumps(attrs), flush=True)
"""


def _tf_python() -> Path:
    """.venv-tf's Python, once ready. .ci/run installs it in the background while the main suite runs
    (marker files ``.ready`` / ``.failed``; its log is ``.venv-tf.log``): wait for it here, bounded."""
    venv = TF_PY.parent.parent
    if not venv.is_dir():
        pytest.skip(f"no TensorFlow virtualenv at {venv} (.ci/run makes it: tensorflow-cpu==2.21.0 in a "
                    f"virtualenv that also sees .venv's packages)")
    deadline = time.monotonic() + INSTALL_WAIT_S
    while not (venv / ".ready").exists() and (venv / ".installing").exists():
        if (venv / ".failed").exists() or time.monotonic() > deadline:
            break
        time.sleep(2)
    if (venv / ".failed").exists() or (venv / ".installing").exists() and not (venv / ".ready").exists():
        log = ROOT / ".venv-tf.log"
        tail = log.read_text(errors="replace")[-3000:] if log.is_file() else "(no log)"
        pytest.fail(f"the TensorFlow virtualenv {venv} was not installed "
                    f"({'failed' if (venv / '.failed').exists() else f'not ready after {INSTALL_WAIT_S} s'}):\n{tail}")
    if not TF_PY.exists():
        pytest.skip(f"{venv} has no bin/python")
    return TF_PY


def run_tf(body: str) -> tuple[int, str, str]:
    """Run ``body`` under .venv-tf's Python (this checkout's qdq_compiler); (rc, stdout, stderr). A run
    past TIMEOUT_S fails the test, saying whether the script had finished (a hang at exit) or not."""
    tf_py = _tf_python()
    require("vulkan")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    script = PRELUDE + textwrap.dedent(body) + '\nprint("SCRIPT DONE", flush=True)\n'
    p = subprocess.Popen([str(tf_py), "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        where = "hung at exit (the script had finished)" if "SCRIPT DONE" in out else "did not finish"
        pytest.fail(f"the process {where} within {TIMEOUT_S} s\nstdout:\n{out}\nstderr:\n{err[-3000:]}")
    if p.returncode < 0:
        pytest.fail(f"the process died of signal {-p.returncode} ({signal.Signals(-p.returncode).name})\n"
                    f"stdout:\n{out}\nstderr:\n{err[-3000:]}")
    return p.returncode, out, err


def _ok(rc, out, err, n_checked):
    assert rc == 0, f"exit {rc}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    assert out.count("CHECKED") == n_checked and "SCRIPT DONE" in out, out


def test_tensorflow_first_then_vulkan():
    """TensorFlow imported before the first Vulkan call: lavapipe used to segfault in its first JIT."""
    rc, out, err = run_tf("""
        import tensorflow as tf
        import qdq_compiler as q
        from qdq_compiler.targets import conflicts
        try:
            check(q, tf)
            check(q, tf, min=-3.0, max=5.0, num_bits=4, narrow_range=True)
        except q.errors.TargetUnavailableError as e:
            print("REFUSED", e, flush=True)
        print("ISOLATION", json.dumps(conflicts.isolation()), flush=True)  # as the calls left it
    """)
    state = json.loads(out.split("ISOLATION ", 1)[1].splitlines()[0])
    if state["isolated"]:
        _ok(rc, out, err, 2)
    else:  # an environment where the drivers cannot be isolated: a clean refusal, never a dispatch
        assert rc == 0 and "REFUSED" in out and "TensorFlow" in out and "SCRIPT DONE" in out, out + err


def test_vulkan_first_then_tensorflow_exits():
    """Vulkan used, then TensorFlow imported: calls (a new pipeline JIT included) still right, and the
    process exits (it used to hang in vkDestroyDevice -> TensorFlow's LLVMContextDispose)."""
    rc, out, err = run_tf("""
        import qdq_compiler as q
        check(q, None)
        import tensorflow as tf
        check(q, tf)
        check(q, tf, min=-1.5, max=2.5, num_bits=5)
    """)
    _ok(rc, out, err, 3)


def test_driver_loaded_behind_our_back_refuses_and_exits():
    """A Vulkan device made with plain iree.runtime before qdq_compiler's first Vulkan use: its drivers are
    bound to the global scope. Vulkan works until TensorFlow arrives, then the target refuses before any
    dispatch (TargetUnavailableError, saying why and what to do), and the process still exits."""
    rc, out, err = run_tf("""
        import iree.runtime as rt
        rt.get_device("vulkan")
        import qdq_compiler as q
        from qdq_compiler.targets import conflicts
        check(q, None)
        assert not conflicts.isolation()["isolated"]
        import tensorflow as tf
        try:
            check(q, tf)
        except q.errors.TargetUnavailableError as e:
            print("REFUSED", e, flush=True)
    """)
    assert rc == 0, f"exit {rc}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    assert out.count("CHECKED") == 1 and "SCRIPT DONE" in out, out
    refusal = out.split("REFUSED ", 1)[1]
    for words in ("TensorFlow", "libtensorflow_framework", "before qdq_compiler's first Vulkan use",
                  "without TensorFlow", "'cpu'"):
        assert words in refusal, (words, refusal)


# -- no TensorFlow needed ---------------------------------------------------------------------------------

def test_icd_manifests_follow_the_loaders_variables(tmp_path, monkeypatch):
    (tmp_path / "a.json").write_text(json.dumps({"ICD": {"library_path": "sub/libvk_a.so"}}))
    (tmp_path / "b.json").write_text(json.dumps({"ICD": {"library_path": "/opt/x/libvk_b.so"}}))
    (tmp_path / "c.json").write_text(json.dumps({"ICD": {"library_path": "libvk_c.so.1"}}))
    (tmp_path / "broken.json").write_text("{")
    monkeypatch.setenv("VK_DRIVER_FILES", f"{tmp_path / 'a.json'}{os.pathsep}{tmp_path}")
    monkeypatch.delenv("VK_ADD_DRIVER_FILES", raising=False)
    assert conflicts.icd_libraries() == [str(tmp_path / "sub" / "libvk_a.so"), "/opt/x/libvk_b.so", "libvk_c.so.1"]


def test_only_vulkan_is_checked_and_no_conflict_without_tensorflow():
    assert conflicts.check("local-sync") == "" and conflicts.check("cuda") == ""
    if "tensorflow" not in sys.modules:
        assert conflicts.global_llvm() == ""
        assert conflicts.check("vulkan") == ""
