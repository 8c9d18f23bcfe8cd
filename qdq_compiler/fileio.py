"""Crash-safe file writing, shared by the compile cache and the bundle builder."""
from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the whole new one, never a part.

    The bytes are fsynced before the rename: after a crash the name points at complete data.
    """
    path = Path(path)
    import tempfile  # here: a process that only reads the cache never loads it
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a shared cache or a bundle is readable like any file
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
