"""Vulkan beside TensorFlow: keep the Vulkan driver's LLVM to itself (issue 14).

The cause. ``import tensorflow`` loads ``libtensorflow_framework.so.2`` into the process's *global*
symbol scope (TF imports its core with ``RTLD_GLOBAL``), and that library exports the LLVM built into it,
unversioned: the C API (``LLVMContextCreate``...) and the C++ symbols. Mesa's lavapipe JIT-compiles
every Vulkan pipeline with the system ``libLLVM-15``, which the Vulkan loader dlopens ``RTLD_LAZY |
RTLD_LOCAL``; and the dynamic linker resolves a library's references, even those to its own exported
functions, in the global scope first. So LLVM calls land in TensorFlow's LLVM, with the other LLVM's
objects:

* TensorFlow first: as lavapipe loads, 1,078 references of libLLVM-15 and lavapipe's LLVM C API calls
  bind to TensorFlow's copies; the first pipeline compile segfaults (``llvm::raw_ostream::write`` in
  libLLVM-15 calls ``raw_svector_ostream::write_impl`` in libtensorflow_framework).
* Vulkan first, TensorFlow after: lazy binding resolves each function at its first call, by then to
  TensorFlow's. At exit ``vkDestroyDevice`` calls ``LLVMContextDispose``, TensorFlow's, on a libLLVM-15
  context and never returns.

Plain ``iree.runtime`` does the same; it is not our code, it is the process's symbol scope.

The fix. Before the process's first Vulkan instance, ``check("vulkan")`` dlopens every Vulkan driver
(ICD) the loader would load with ``RTLD_DEEPBIND | RTLD_NOW | RTLD_LOCAL`` and keeps the handles: each
driver and the libraries it brings in (libLLVM) resolve in their own dependency tree first, all bound at
once, whatever is loaded later; the loader's own dlopen then finds them already loaded. Without
TensorFlow nothing changes (there is nothing to interpose). Where that isolation could not be set up (a
Vulkan driver or a libLLVM was in the process before qdq_compiler's first Vulkan use, a sanitizer
runtime, or ``QDQ_VULKAN_ISOLATE=0``) and the global scope holds another LLVM, ``check`` returns why, and
the target refuses (``TargetUnavailableError``) before any dispatch.
"""
from __future__ import annotations

import ctypes
import glob
import json
import os
import threading

_RTLD_ISOLATED = os.RTLD_NOW | os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
_LLVM_SYMBOLS = ("LLVMContextDispose", "_ZN4llvm11raw_ostream5writeEPKcm")
_SANITIZER_SYMBOLS = ("__asan_init", "__tsan_init", "__msan_init", "__hwasan_init")

_lock = threading.Lock()
_state: dict | None = None  # "isolated": bool, "why": str (why not), "handles": [CDLL], "libraries": [str]
_global = None


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _global_scope():
    global _global
    if _global is None:
        _global = ctypes.CDLL(None)
    return _global


def _global_symbol(name: str):
    try:
        return _global_scope()[name]   # dlsym(main program): the global scope; not cached by ctypes
    except AttributeError:
        return None


def global_llvm() -> str:
    """The file of a library in the global symbol scope that exports LLVM (TensorFlow's
    libtensorflow_framework.so.2), or ''. A few dlsym calls: cheap enough for every Vulkan call."""
    for name in _LLVM_SYMBOLS:
        fn = _global_symbol(name)
        if fn is None:
            continue
        info = _DlInfo()
        try:
            dladdr = _global_scope().dladdr
            if dladdr(ctypes.cast(fn, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
                return os.path.normpath(os.fsdecode(info.dli_fname))
        except AttributeError:
            pass
        return f"a library exporting {name}"
    return ""


def icd_libraries() -> list[str]:
    """The driver libraries named by the Vulkan ICD manifests the loader reads (Linux search order:
    VK_DRIVER_FILES / VK_ICD_FILENAMES replace the search, VK_ADD_DRIVER_FILES adds to it). A superset
    does no harm: a library the loader would not use is only mapped."""
    def split(var):
        return [p for p in os.environ.get(var, "").split(os.pathsep) if p]

    def manifests(entries):
        out = []
        for e in entries:
            out += sorted(glob.glob(os.path.join(e, "*.json"))) if os.path.isdir(e) else [e]
        return out

    home = os.path.expanduser("~")
    chosen = split("VK_DRIVER_FILES") or split("VK_ICD_FILENAMES")
    if chosen:
        files = manifests(split("VK_ADD_DRIVER_FILES") + chosen)
    else:
        dirs = ([os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")]
                + (split("XDG_CONFIG_DIRS") or ["/etc/xdg"]) + ["/etc", "/usr/local/etc"]
                + [os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")]
                + (split("XDG_DATA_DIRS") or ["/usr/local/share", "/usr/share"]))
        files = manifests(split("VK_ADD_DRIVER_FILES") + [os.path.join(d, "vulkan", "icd.d") for d in dirs])
    libs: list[str] = []
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            continue
        icds = doc.get("ICD") if isinstance(doc, dict) else None
        for icd in icds if isinstance(icds, list) else [icds]:
            path = icd.get("library_path") if isinstance(icd, dict) else None
            if not isinstance(path, str) or not path:
                continue
            if "/" in path and not os.path.isabs(path):
                path = os.path.join(os.path.dirname(os.path.abspath(f)), path)
            if path not in libs:
                libs.append(path)
    return libs


def _loaded(lib: str) -> bool:
    try:
        h = ctypes.CDLL(lib, mode=os.RTLD_LAZY | os.RTLD_NOLOAD)
    except OSError:
        return False
    import _ctypes
    _ctypes.dlclose(h._handle)  # NOLOAD took a reference: give it back
    return True


def _mapped_llvm() -> list[str]:
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split(None, 5)[5].strip() for line in fh if line.count(" ") >= 5 and "/" in line}
    except (OSError, IndexError):
        return []
    return sorted(p for p in paths if os.path.basename(p).startswith("libLLVM"))


def _isolate() -> dict:
    """Load the Vulkan drivers self-bound, once per process. Holds the handles for the life of the process
    (a driver unloaded and loaded again by the loader would be bound to the global scope)."""
    if os.environ.get("QDQ_VULKAN_ISOLATE", "").strip().lower() in ("0", "off", "no", "false"):
        return {"isolated": False, "why": "QDQ_VULKAN_ISOLATE=0 turned the isolation off", "handles": [],
                "libraries": []}
    if not getattr(os, "RTLD_DEEPBIND", 0):
        return {"isolated": False, "why": "this platform has no RTLD_DEEPBIND", "handles": [], "libraries": []}
    for s in _SANITIZER_SYMBOLS:
        if _global_symbol(s) is not None:  # ASan aborts on RTLD_DEEPBIND
            return {"isolated": False, "why": f"a sanitizer runtime ({s}) forbids RTLD_DEEPBIND", "handles": [],
                    "libraries": []}
    libs = icd_libraries()
    early = [lib for lib in libs if _loaded(lib)] + _mapped_llvm()
    if early:
        return {"isolated": False, "handles": [], "libraries": libs,
                "why": f"{', '.join(os.path.basename(p) for p in early[:3])} "
                       f"{'was' if len(early) == 1 else 'were'} loaded before qdq_compiler's first Vulkan use "
                       f"(by another library, or by iree.runtime called directly), bound to the global scope"}
    handles = []
    for lib in libs:
        try:
            handles.append(ctypes.CDLL(lib, mode=_RTLD_ISOLATED))
        except OSError:  # missing, or not for this machine (a 32-bit driver's manifest): the loader skips it too
            continue
    if not handles:  # the loader may still find one elsewhere: it would not be isolated
        return {"isolated": False, "handles": [], "libraries": libs,
                "why": "qdq_compiler found no Vulkan driver to load (ICD manifests: VK_DRIVER_FILES, "
                       "/usr/share/vulkan/icd.d, ...)"}
    return {"isolated": True, "why": "", "handles": handles, "libraries": libs}


def isolation() -> dict:
    """The Vulkan isolation state, set up on first use: {"isolated", "why", "libraries"}."""
    global _state
    with _lock:
        if _state is None:
            _state = _isolate()
        return {k: v for k, v in _state.items() if k != "handles"}


def check(driver: str) -> str:
    """'' when ``driver`` can run in this process, else why not and what to do instead.

    For "vulkan", the first call isolates the Vulkan drivers (see the module doc); call it before anything
    creates a Vulkan instance. Later calls are cheap (a few dlsym lookups where not isolated)."""
    if driver != "vulkan":
        return ""
    state = _state or isolation()
    if state["isolated"]:
        return ""
    other = global_llvm()
    if not other:
        return ""
    who = f"TensorFlow ({other})" if "tensorflow" in other.lower() else other
    return (f"{who} exports its own LLVM into the process's global symbol scope, and the Vulkan driver's "
            f"LLVM (the libLLVM that Mesa's lavapipe compiles pipelines with) would bind to it: a dispatch "
            f"would crash, or the process hang at exit. qdq_compiler isolates the Vulkan drivers by loading "
            f"them itself before their first use, but here {state['why']}. Run Vulkan in a process without "
            f"TensorFlow (or let qdq_compiler make the process's first Vulkan call), or use target 'cpu' or "
            f"'vmvx'")
