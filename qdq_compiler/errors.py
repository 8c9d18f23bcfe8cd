"""Error types. Every user-facing problem is a ``QDQError`` (a ``ValueError``), as TF users expect."""
from __future__ import annotations


class QDQError(ValueError):
    """Bad input: names the argument, the value and what is allowed (TF's own message where it has one)."""

    def __init__(self, message: str, *, op: str | None = None, arg: str | None = None, tf_message: str | None = None,
                 reference: str = "TensorFlow"):
        # tf_message: the reference framework's own words (``reference``: TensorFlow, PyTorch), for searching
        self.op, self.arg, self.tf_message, self.reference = op, arg, tf_message, reference
        full = f"{op}: {message}" if op else message
        if tf_message:
            full += f" ({reference}: {tf_message})"
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


class QDQWarning(UserWarning):
    """Valid input whose result, TF's own, is almost certainly not what the caller meant."""


class Checker:
    """Raises the errors of one op: each check is one line naming the argument, what is allowed, and
    TF's own words (``tf=``) where TF has them. Shared by ``validation`` and the op-family checks."""

    def __init__(self, op: str, reference: str = "TensorFlow"):
        self.op, self.reference = op, reference   # reference: the framework whose words ``tf=`` quotes

    def fail(self, msg, arg=None, tf=None, cls=QDQError):
        raise cls(msg, op=self.op, arg=arg, tf_message=tf, reference=self.reference)

    def require(self, ok, msg, arg=None, tf=None):
        if not ok:
            self.fail(msg, arg, tf)

    def warn(self, msg, arg=None):
        """TF computes this without complaint, and so do we; but say that it looks like a mistake."""
        import os
        import sys
        import warnings
        package, frame, level = os.path.dirname(os.path.abspath(__file__)), sys._getframe(0), 1
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
            frame, level = frame.f_back, level + 1  # point the warning at the caller's line, not ours
        plural = "s" if arg and " and " in arg else ""
        warnings.warn(f"{self.op}: {msg}" + (f" (argument{plural} {arg})" if arg else ""), QDQWarning, stacklevel=level)


def fmt_number(v) -> str:
    """A number as C++'s ``operator<<`` prints it (6 significant digits), as in TF's messages."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return str(int(v))
    if isinstance(v, int) or type(v).__name__.startswith(("int", "uint")):
        return str(int(v))
    return "%g" % float(v)


def shape_text(a) -> str:
    """An array's shape as TF prints it in messages: [2,3]."""
    return "[" + ",".join(str(d) for d in a.shape) + "]"


def axes_text(rank: int) -> str:
    """The allowed axis values for an input of ``rank``, in words."""
    return f"-1 (per-tensor) or 0..{rank - 1}" if rank > 0 else "only -1 (per-tensor; the input is a scalar)"
