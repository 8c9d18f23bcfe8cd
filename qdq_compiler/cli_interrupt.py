"""Ctrl-C in ``qdqc``: status 130 and one line, wherever the interrupt lands (issue 29.5).

A KeyboardInterrupt raised inside IREE's argument packing surfaced as another exception ("ValueError: could
not map dtype ... to element type: <NULL>", a traceback, status 1: 1 run in 11 interrupted at 1-12 s). The
SIGINT handler records the interrupt before raising it, so the command can tell the interrupt apart from
whatever exception it turned into; during an import it waits (a native module's initialisation cannot
unwind). Before the handler is installed (the first few hundred ms, Python importing the package) Ctrl-C is
Python's own.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

_state = {"interrupted": False}


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
        threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    raise KeyboardInterrupt


def run_interruptible(command) -> int:
    """``command()``'s status, or 130 with 'qdqc: interrupted' on stderr if Ctrl-C arrived meanwhile."""
    _state["interrupted"] = False
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _on_interrupt) if main_thread else None
    try:
        rc = command()
    except BaseException as e:
        if not (_state["interrupted"] or isinstance(e, KeyboardInterrupt)):
            raise
        rc = 130
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    if _state["interrupted"] or rc == 130:
        print("qdqc: interrupted", file=sys.stderr)
        return 130
    return rc
