"""TensorFlow in forked children, shared by the runners.

Some error cases end in a CHECK failure that aborts the whole process, so no op ever runs in the parent:
a batch runs in one forked child, and where that child dies, each item runs in a child of its own and a
death becomes an error of kind "abort" carrying TF's ``Check failed`` line. The parent imports TF (once,
before forking) but runs nothing.
"""
import os
import pickle
import re
import sys
import tempfile
import traceback

TF_VERSION = "2.21.0"
_tf = None


def load_tf(log_level="2"):
    """TF, imported once; the version is checked (the goldens are TF 2.21's answers) and GPUs are hidden
    (every set is a CPU semantics)."""
    global _tf
    if _tf is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", log_level)
        import tensorflow as tf  # noqa: PLC0415  (a data-generation tool only: never a package dependency)
        assert tf.__version__ == TF_VERSION, tf.__version__
        tf.config.set_visible_devices([], "GPU")
        _tf = tf
    return _tf


def fork_run(fn, *args):
    """fn(*args) in a forked child with stderr captured: (its pickled result or None, stderr, status)."""
    fd, outpath = tempfile.mkstemp(suffix=".pkl")
    efd, errpath = tempfile.mkstemp(suffix=".err")
    os.close(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(efd, 2)
            res = fn(*args)
            with open(outpath, "wb") as fh:
                pickle.dump(res, fh)
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(0)
    os.close(efd)
    _, status = os.waitpid(pid, 0)
    try:
        with open(outpath, "rb") as fh:
            res = pickle.load(fh) if os.path.getsize(outpath) > 0 else None
    except Exception:  # noqa: BLE001
        res = None
    with open(errpath, errors="replace") as fh:
        err = fh.read()
    os.unlink(outpath)
    os.unlink(errpath)
    return res, err, status


def probe(fn, *args):
    """fn(*args) -> {"ok", ...} in a child of its own; a child that dies gives an "abort" error."""
    res, err, status = fork_run(fn, *args)
    if res is not None and os.WIFEXITED(status):
        return res
    m = re.search(r"(Check failed: [^\n]*)", err)
    e = {"kind": "abort", "message": m.group(1).strip() if m else (err.strip().splitlines()[-1:] or ["<no stderr>"])[0]}
    if os.WIFSIGNALED(status):
        e["signal"] = os.WTERMSIG(status)
    return {"ok": False, "error": e}


def _each(fn, items):
    return [fn(it) for it in items]


def run_all(fn, items):
    """fn over every item in one child; if that child dies, each item in a child of its own."""
    res, err, status = fork_run(_each, fn, items)
    if res is not None and os.WIFEXITED(status):
        return res
    print("batch child failed (%s); one child per item" % (err.strip().splitlines()[-1:] or ["?"])[0], flush=True)
    return [probe(fn, it) for it in items]


# The Python frames of the generator itself that TF quotes in a graph-mode error ("defined at"): they
# change with every edit of the tool, so they are no part of TF's message.
_FRAMES = (r'^(?:\s*File "[^"\n]*", line \d+, in [^\n]*\n+)+', "", 0)


def scrub(msg, patterns):
    """TF's message with ``patterns`` (regex, replacement, flags) removed in order, then our own frames."""
    for pat, rep, flags in tuple(patterns) + (_FRAMES,):
        msg = re.sub(pat, rep, msg, flags=flags)
    return msg.strip()


def error_result(e, clean):
    """The result of a call that raised: its class name and ``clean(message)``."""
    raw = getattr(e, "message", None) or str(e)
    return {"ok": False, "error": {"kind": type(e).__name__, "message": clean(raw)}}
