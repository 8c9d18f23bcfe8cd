"""Ctrl-C in ``qdqc``: status 130 and one line, wherever the interrupt lands (issue 29.5).

A KeyboardInterrupt raised inside IREE's argument packing surfaced as another exception ("ValueError: could
not map dtype ... to element type: <NULL>", a traceback, status 1: 1 run in 11 interrupted at 1-12 s). The
SIGINT handler records the interrupt before raising it, so the command can tell the interrupt apart from
whatever exception it turned into; during an import it waits (a native module's initialisation cannot
unwind). ``qdqc`` starts in ``console.main``, which installs the handler before the command line's imports
(NumPy, ml_dtypes, IREE: 0.3 s of CPU, seconds on a loaded machine; a Ctrl-C there came out as a traceback and
status -2, issue 47.2). What is left to Python's own handling is the interpreter's start-up (about 20 ms of CPU
here, before any of this package runs).
"""
from __future__ import annotations

import os
import signal
import sys
import threading

_state = {"interrupted": False, "active": False, "reported": False}
_resend_lock = threading.Lock()


def interrupted() -> bool:
    """Whether Ctrl-C arrived during the current command."""
    return _state["interrupted"]


def _importing(frame) -> bool:
    """Whether the interrupted code runs inside an import (a native module initialising itself, say)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _on_interrupt(signum, frame):
    _state["interrupted"] = True
    if _importing(frame):
        # Raising here would unwind through a native module's initialisation: nanobind (IREE's bindings) then
        # aborts the process (std::terminate, status -6; seen once in CI at 0.7 s). The signal comes again
        # in 20 ms, until it lands outside the import.
        timer = threading.Timer(0.02, _resend)
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt


def _resend():
    """The deferred interrupt, only while the command still runs (after it, the handler may be Python's again)."""
    with _resend_lock:
        if _state["active"]:
            os.kill(os.getpid(), signal.SIGINT)


def _on_interrupt_after(signum, frame):
    """Ctrl-C once the command is over (the process is on its way out): the same status and line, at once."""
    if not _state["reported"]:
        sys.stderr.write("qdqc: interrupted\n")
        sys.stderr.flush()
    os._exit(130)


def run_interruptible(command, restore: bool = True) -> int:
    """``command()``'s status, or 130 with 'qdqc: interrupted' on stderr if Ctrl-C arrived meanwhile.
    ``restore=False`` (the process ends after it): a later Ctrl-C exits 130 at once, never a traceback."""
    _state.update(interrupted=False, active=True, reported=False)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _on_interrupt) if main_thread else None
    try:
        rc = command()
    except BaseException as e:
        if not (_state["interrupted"] or isinstance(e, KeyboardInterrupt)):
            raise
        rc = 130
    finally:
        with _resend_lock:
            _state["active"] = False
        if main_thread:
            signal.signal(signal.SIGINT, previous if restore else _on_interrupt_after)
    if _state["interrupted"] or rc == 130:
        _state["reported"] = True
        print("qdqc: interrupted", file=sys.stderr)
        return 130
    return rc

