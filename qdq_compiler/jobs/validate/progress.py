"""Progress on stderr for a validation run: stage headings and a bar or one line per step, with an ETA."""
from __future__ import annotations

import sys
import time

PROGRESS_MODES = ("bar", "lines", "off")


def count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


_stage_started = [time.perf_counter()]   # when the current stage began (stage), for the ETA


def _eta(done: int, total: int) -> str:
    """' ETA 3m 10s' from the stage's pace so far ('' at the start and the end)."""
    if not 0 < done < total:
        return ""
    left = (time.perf_counter() - _stage_started[0]) / done * (total - done)
    return f" ETA {int(left // 60)}m {int(left % 60):02d}s" if left >= 60 else f" ETA {int(left)}s"


def progress(done: int, total: int, label: str, mode):
    """Progress on stderr: a bar redrawn in place on a terminal ("bar"), one flushed line per step where
    nobody redraws (CI logs, ``| tee``: "lines"), or nothing ("off"; False/True mean off/bar); each with
    the time the stage has left at its pace so far."""
    mode = {False: "off", True: "bar", None: "off"}.get(mode, mode)
    if mode == "off":
        return
    if mode == "lines":
        sys.stderr.write(f"[{done}/{total}{_eta(done, total)}] {label}\n")
        sys.stderr.flush()
        return
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}{_eta(done, total)} {label[:60]:<60}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def stage(text: str, mode):
    """A stage heading: a line on stderr unless progress is off."""
    _stage_started[0] = time.perf_counter()
    if mode not in ("off", False, None):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
