"""The ``qdqc`` command's entry point: Ctrl-C handling first (cli_interrupt), then the command line's modules load
inside it, so an interrupt during ``import numpy``, ``ml_dtypes`` or IREE is 130 and one line too (issue 47.2).
Nothing here may import NumPy or the package's namespaces at module level."""
from __future__ import annotations

from .cli_interrupt import run_interruptible


def main() -> int:
    def command():
        from .cli import _main
        return _main()
    return run_interruptible(command, restore=False)
