# -*- Python -*-
"""lit configuration of qdq_compiler's lowering regression suite (``lit -sv lit_tests``).

Runs on the pip tools: ``iree-compile``/``iree-opt``/``iree-run-module`` from the iree-base-* wheels and
``FileCheck`` = the PyPI ``filecheck``; or on your own IREE: ``QDQ_IREE_TOOLS=<iree-build>/tools`` (and that
build's Python runtime on PYTHONPATH) takes every iree-* tool, here and in qdqc, from that directory, resolved
by qdq_compiler.compile itself (iree_tool / iree_compile_path / targets.cpu.runtime_tool); the suite refuses to
start when the compiler's and the runtime's versions disagree (qdq_compiler.compile.check_iree) and notes which
IREE runs. See lit_tests/README.md for what each directory guards.

Substitutions (tool names are replaced as whole words, as LLVM's ToolSubst does):
  qdqc, iree-compile, iree-opt, iree-run-module, FileCheck   the tools (see _find_tool, _iree_tool)
  %python                                                    the Python that runs lit (imports qdq_compiler)
  %expect_exit N CMD...   run CMD, print its output and "exit status: K"; fail unless K == N (tools/)
  %oracle_nudge MIN MAX BITS NARROW   the oracle's nudged FakeQuant constants as hex (tools/)
  %lit_tools                                                 lit_tests/tools (the e2e generator lives there)
  %<target>_flags   e.g. %cpu_flags, %vmvx_flags, %vulkan_flags, %cpu_host_flags, %cuda_flags:
                    exactly qdq_compiler.targets.get(<target>).compile_flags
  %<target>_device  e.g. %cpu_device: --device=<the target's IREE runtime driver>
Features: one per target that can run here (qdq_compiler.targets.get(name).availability()),
e.g. ``REQUIRES: vulkan``.
Time limit: lit's own per-test timeout (config.maxIndividualTestTime) when psutil is importable, else each
of qdqc/iree-* runs under coreutils ``timeout`` (lit refuses a per-test timeout without psutil).

Environment knobs: QDQ_LIT_TIMEOUT (seconds per test, default 120; 0 = none), QDQ_CACHE_DIR (the
artifact cache `qdqc compile` uses; default: lit_tests/Output/qdq_cache), PYTHONPATH and
QDQ_TEMPLATE_DIR are passed through (tests/test_lit_mutation.py points the suite at broken templates),
QDQ_IREE_TOOLS and QDQ_IREE_ALLOW_MISMATCH too (bring your own IREE, see lit_tests/README.md).
The targets are probed in a child process (no GPU driver in lit's own, which forks the workers);
QDQ_LIT_REPORT_DRIVERS=1 notes which GPU driver libraries lit's process has loaded (tests/test_lit_config.py).
"""
import os
import re
import shutil
import sys

import lit.formats
import lit.util

config.name = "qdq_compiler"
# lit 23 refuses execute_external=True (deprecated in LLVM 23): the internal shell it is.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".mlir"]
config.excludes = ["Inputs", "README.md", "lit.cfg.py", "tools"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

_BIN = os.path.dirname(sys.executable)

# -- environment ------------------------------------------------------------------------------------
for var in ("PYTHONPATH", "QDQ_TEMPLATE_DIR", "QDQ_COMPILE_TIMEOUT", "XDG_CACHE_HOME", "IREE_SAVE_TEMPS",
            "QDQ_IREE_TOOLS", "QDQ_IREE_ALLOW_MISMATCH",
            "VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VK_LOADER_DEBUG",
            "LP_NUM_THREADS", "MESA_LOADER_DRIVER_OVERRIDE", "CUDA_VISIBLE_DEVICES", "DISPLAY",
            "XDG_RUNTIME_DIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["QDQ_CACHE_DIR"] = os.environ.get("QDQ_CACHE_DIR") or os.path.join(
    config.test_exec_root, "qdq_cache")
# -- which IREE: the package's resolution (qdq_compiler.compile), so lit, qdqc and bundles agree --------------
try:
    from qdq_compiler import compile as _C
    from qdq_compiler.errors import QDQError as _QDQError
    from qdq_compiler.targets.cpu import runtime_tool as _runtime_tool
except ImportError as e:
    lit_config.fatal(f"lit must run under a Python that imports qdq_compiler ({sys.executable}: {e}); "
                     f"use the venv's lit, e.g. .venv/bin/lit -sv lit_tests")
try:
    _IREE_DIR = _C.iree_tools_dir()  # QDQ_IREE_TOOLS, or None: the iree-base-* packages
    _IREE = _C.check_iree()          # refuses a compiler and a runtime that disagree
except _QDQError as e:
    lit_config.fatal(str(e))
lit_config.note(f"IREE: compiler {_IREE['compiler_version']}"
                f"{' @ ' + _IREE['compiler_revision'] if _IREE['compiler_revision'] else ''} ({_IREE['compiler']}), "
                f"runtime {_IREE['runtime_version']} ({_IREE['runtime']}); tools: {_IREE['tools']}; "
                f"version check: {_IREE['version_check']}")

# The venv's bin first (QDQ_IREE_TOOLS' directory before it), so the tools below and anything they spawn come
# from the same install.
config.environment["PATH"] = os.pathsep.join(
    ([str(_IREE_DIR)] if _IREE_DIR is not None else []) + [_BIN, config.environment.get("PATH", "")])


# -- tools ------------------------------------------------------------------------------------------
def _find_tool(*names):
    """The first of ``names`` next to sys.executable (the venv's bin), then on PATH."""
    for name in names:
        cand = os.path.join(_BIN, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    for name in names:
        found = shutil.which(name, path=os.environ.get("PATH", ""))
        if found:
            return found
    return None


def _iree_tool(name):
    """As qdq_compiler resolves it: QDQ_IREE_TOOLS' ``name`` (fatal if missing there); else the package's
    binary (iree-compile/iree-opt from iree-base-compiler, iree-run-module from iree-base-runtime: no Python
    wrapper), else the venv's bin or PATH."""
    if _IREE_DIR is not None:
        try:
            return _C.iree_tool(name)
        except _QDQError as e:
            lit_config.fatal(str(e))
    try:
        if name == "iree-compile":
            return _C.iree_compile_path()
        if name == "iree-run-module":
            return _runtime_tool(name) or _find_tool(name)
        from iree.compiler.tools.binaries import find_tool
        return find_tool(name)
    except Exception:  # not installed, or the wheel lacks the tool
        return _find_tool(name)


def _quote(path):
    return path if re.fullmatch(r"[\w@%+=:,./-]+", path) else "'" + path.replace("'", "'\\''") + "'"


tools = {
    "FileCheck": _find_tool("filecheck", "FileCheck"),
    "iree-compile": _iree_tool("iree-compile"),
    "iree-opt": _iree_tool("iree-opt"),
    "iree-run-module": _iree_tool("iree-run-module"),
}
qdqc = _find_tool("qdqc")
tools["qdqc"] = qdqc or sys.executable  # no console script: `python -m qdq_compiler`
missing = sorted(name for name, path in tools.items() if not path)
if missing:
    lit_config.fatal(f"cannot find {', '.join(missing)} next to {sys.executable} or on PATH; install the "
                     f"test extra into the environment that runs lit: pip install -e '.[test]'")

# A per-test time limit. lit's own (config.maxIndividualTestTime) kills a test's process tree with psutil
# and refuses to start without it; without psutil each heavy tool runs under coreutils `timeout` instead.
_timeout = int(os.environ.get("QDQ_LIT_TIMEOUT", "120"))
_kill_ok, _why = lit.util.killProcessAndChildrenIsSupported()
_timeout_prefix = ""
if _timeout > 0:
    if _kill_ok:
        config.maxIndividualTestTime = _timeout  # `lit --timeout N` still overrides it
    elif shutil.which("timeout"):
        _timeout_prefix = f"{shutil.which('timeout')} -k 10 {_timeout} "
    else:
        lit_config.note(f"no per-test time limit: {_why} (and no coreutils `timeout`)")


def _tool_pattern(name):
    # A whole word: not part of a longer name, a path or an option (cf. lit.llvm.subst.ToolSubst).
    return r"(?<![\w/.%=-])" + re.escape(name) + r"(?![\w/.-])"


for name in ("qdqc", "iree-compile", "iree-opt", "iree-run-module"):
    command = _quote(tools[name]) + (" -m qdq_compiler" if tools[name] == sys.executable else "")
    config.substitutions.append((_tool_pattern(name), _timeout_prefix + command))
config.substitutions.append((_tool_pattern("FileCheck"), _quote(tools["FileCheck"])))
_TOOLS_DIR = os.path.join(config.test_source_root, "tools")
config.substitutions.append(("%expect_exit", f"{_quote(sys.executable)} {_quote(os.path.join(_TOOLS_DIR, 'expect_exit.py'))}"))
config.substitutions.append(("%oracle_nudge", f"{_quote(sys.executable)} {_quote(os.path.join(_TOOLS_DIR, 'oracle_nudge.py'))}"))
config.substitutions.append(("%lit_tools", _quote(_TOOLS_DIR)))
config.substitutions.append(("%python", _quote(sys.executable)))

# -- targets: flags, devices, features ------------------------------------------------------------------
try:
    from qdq_compiler import targets as _targets
except ImportError as e:
    lit_config.fatal(f"lit must run under a Python that imports qdq_compiler ({sys.executable}: {e}); "
                     f"use the venv's lit, e.g. .venv/bin/lit -sv lit_tests")



def _probe_targets():
    """{target: (available, why not)}, probed in a child process: creating a device loads the Vulkan (or CUDA)
    driver, whose threads would live on in lit's process, the one lit forks its workers from (issue 29.4:
    a run stopped for 11 minutes with a driver thread spinning in lit and no test running)."""
    import json
    import subprocess
    code = ("import json; from qdq_compiler import targets as T; "
            "print(json.dumps({n: T.get(n).availability() for n in T.TARGETS}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **{k: v for k, v in config.environment.items() if k != "PATH"}))
    if r.returncode:
        lit_config.fatal(f"probing the targets failed ({sys.executable} -c ...): {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


_available = _probe_targets()
_subst = []
for name, target in _targets.TARGETS.items():
    key = name.replace("-", "_")
    _subst.append((f"%{key}_flags", " ".join(_quote(f) for f in target.compile_flags)))
    _subst.append((f"%{key}_device", f"--device={target.driver}"))
    ok, why = _available[name]
    if ok:
        config.available_features.add(name)
    else:
        lit_config.note(f"target {name} unavailable here ({why}); tests that REQUIRE it are UNSUPPORTED")
# Ahead of the tool names, longest first, so that no substitution is a prefix of a later one.
config.substitutions[:0] = sorted(_subst, key=lambda kv: -len(kv[0]))

# QDQ_LIT_REPORT_DRIVERS=1: name the GPU driver libraries lit's own process has loaded (none: the probe runs in
# a child; tests/test_lit_mutation.py checks it).
if os.environ.get("QDQ_LIT_REPORT_DRIVERS") and os.path.exists("/proc/self/maps"):
    with open("/proc/self/maps") as _maps:
        _drivers = sorted({line.split()[-1].rsplit("/", 1)[-1] for line in _maps
                           if re.search(r"libvulkan|libcuda|_icd|libnvidia", line)})
    lit_config.note(f"GPU driver libraries in lit's process: {', '.join(_drivers) or 'none'}")
