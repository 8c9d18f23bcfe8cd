"""qdq_compiler: TensorFlow's fake-quantization ops compiled ahead of time with IREE, bit-exact with TF."""
from __future__ import annotations

from .errors import BundleError, CompileError, QDQError, QDQTypeError, TargetUnavailableError
from . import registry
from . import oracle

__version__ = "0.1.0"

__all__ = ["QDQError", "QDQTypeError", "CompileError", "TargetUnavailableError", "BundleError",
           "registry", "oracle", "__version__"]
