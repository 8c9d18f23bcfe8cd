"""qdq_compiler: fake-quantization ops compiled ahead of time with IREE, bit-exact with their frameworks: TF's raw
ops (``raw_ops``), PyTorch's aten ops (``aten``) and ONNX's QuantizeLinear/DequantizeLinear (``onnx_ops``), into and
out of every storage type of ``storage`` (int2 to int16, float8, float6, float4), and the block-scaled OCP MX formats
(``mx``)."""
from __future__ import annotations

from .errors import BundleError, CompileError, QDQError, QDQTypeError, QDQWarning, TargetUnavailableError
from .version import __version__

# The namespaces and the TF functions load on first use (PEP 562): ``import qdq_compiler`` stays a few
# milliseconds, so ``qdqc`` can set up its Ctrl-C handling before NumPy, ml_dtypes and IREE load (cli_interrupt).
_SUBMODULES = ("ops", "oracle", "raw_ops", "aten", "onnx_ops", "mx", "storage")
_API = ("fake_quant_with_min_max_args", "fake_quant_with_min_max_args_gradient", "fake_quant_with_min_max_args_vjp",
        "fake_quant_with_min_max_vars", "fake_quant_with_min_max_vars_gradient",
        "fake_quant_with_min_max_vars_per_channel", "fake_quant_with_min_max_vars_per_channel_gradient",
        "fake_quant_with_min_max_vars_per_channel_vjp", "fake_quant_with_min_max_vars_vjp", "quantize_and_dequantize",
        "quantize_and_dequantize_v2", "quantize_and_dequantize_v2_vjp", "quantize_and_dequantize_vjp")

__all__ = ["QDQError", "QDQTypeError", "QDQWarning", "CompileError", "TargetUnavailableError", "BundleError",
           "ops", "oracle", "raw_ops", "aten", "onnx_ops", "mx", "storage", "load_bundle", "__version__",
           "quantize_and_dequantize", "quantize_and_dequantize_v2", "quantize_and_dequantize_vjp",
           "quantize_and_dequantize_v2_vjp", "fake_quant_with_min_max_args", "fake_quant_with_min_max_args_gradient",
           "fake_quant_with_min_max_args_vjp", "fake_quant_with_min_max_vars", "fake_quant_with_min_max_vars_gradient",
           "fake_quant_with_min_max_vars_vjp", "fake_quant_with_min_max_vars_per_channel",
           "fake_quant_with_min_max_vars_per_channel_gradient", "fake_quant_with_min_max_vars_per_channel_vjp"]


def __getattr__(name):
    """A namespace, a TF function, or any other submodule (``qdq_compiler.api``), imported on first use."""
    import importlib
    if name in _API:
        return getattr(importlib.import_module(".api", __name__), name)
    if not name.startswith("__"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def load_bundle(path, target=None, **kwargs):
    """Load and verify a deployment bundle (see ``qdq_compiler.jobs.bundle``)."""
    from .jobs.bundle import load_bundle as _load
    return _load(path, target=target, **kwargs)
