"""The files a command writes: checked before any work starts, written whole or not at all, named in errors.

A report path in a missing directory used to fail after the whole validation had run, and a full disk left a
0-byte .npy or a half-written report behind an error that named no file (issue 29.6).
"""
from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np

from .errors import QDQError
from .fileio import atomic_write


def check_writable(path, option: str):
    """A QDQError naming ``option`` unless a file can be written at ``path`` (None: nothing to check)."""
    if path is None:
        return
    full = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(full)
    if os.path.isdir(full):
        raise QDQError(f"{option} {path}: is a directory; give a file's path", arg=option)
    if not os.path.isdir(folder):
        raise QDQError(f"{option} {path}: no directory {folder}", arg=option)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise QDQError(f"{option} {path}: cannot write in {folder}", arg=option)


def write_atomic(path, data: bytes | str, option: str | None = None):
    """``data`` into ``path``, whole or not at all (fileio.atomic_write); an OSError becomes a QDQError that
    names the file ("cannot write y.npy: No space left on device")."""
    try:
        atomic_write(Path(path), data.encode() if isinstance(data, str) else data)
    except OSError as e:
        raise QDQError(f"cannot write {os.fspath(path)}: {e.strerror or e}", arg=option) from None


def save_arrays(path, arrays: dict[str, np.ndarray], option: str | None = None) -> str:
    """One array as .npy, several as .npz (by name), written atomically; the path written (the suffix added
    where missing, as np.save and np.savez do)."""
    buf, path = io.BytesIO(), os.fspath(path)
    suffix = ".npy" if len(arrays) == 1 else ".npz"
    if len(arrays) == 1:
        np.save(buf, next(iter(arrays.values())))
    else:
        np.savez(buf, **arrays)
    path = path if path.endswith(suffix) else path + suffix
    write_atomic(path, buf.getvalue(), option)
    return path
