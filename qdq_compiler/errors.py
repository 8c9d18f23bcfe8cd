"""Error types. Every user-facing problem is a ``QDQError`` (a ``ValueError``), as TF users expect."""
from __future__ import annotations


class QDQError(ValueError):
    """Bad input: names the argument, the value and what is allowed (TF's own message where it has one)."""

    def __init__(self, message: str, *, op: str | None = None, arg: str | None = None, tf_message: str | None = None):
        self.op, self.arg, self.tf_message = op, arg, tf_message
        full = f"{op}: {message}" if op else message
        if tf_message:
            full += f" (TensorFlow: {tf_message})"
        super().__init__(full)


class QDQTypeError(QDQError, TypeError):
    """A value of the wrong type or dtype. Both a ``ValueError`` and a ``TypeError``."""


class TargetUnavailableError(QDQError):
    """The target exists but cannot run on this machine (no driver or device)."""


class CompileError(QDQError):
    """iree-compile failed or timed out; keeps the rendered MLIR and the exact command for a bug report."""

    def __init__(self, message: str, *, mlir: str = "", command: list[str] | None = None, **kw):
        self.mlir, self.command = mlir, list(command or [])
        super().__init__(message, **kw)


class TemplateError(QDQError):
    """A rendered template did not parse: a bug in qdq_compiler's templates, reported with the line."""


class BundleError(QDQError):
    """A bundle is missing, tampered with or does not fit this runtime."""
