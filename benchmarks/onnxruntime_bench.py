#!/usr/bin/env python3
"""onnxruntime's CPU QuantizeLinear/DequantizeLinear at their best, in a process of their own: the side of the ONNX
ops' comparison that `qdqc bench` cannot time in its process (onnxruntime is a reference framework, never a
dependency).

Run it in a virtualenv with onnx and onnxruntime, on a quiet machine, beside `qdqc bench --semantics onnx`:

    /work/onnxvenv/bin/python benchmarks/onnxruntime_bench.py [--log2n 24] [--repeat 9] [--threads 2]

Each case is a one-node model (the pair: two nodes) on the same shapes and qparams as qdqc bench's ONNX cases
(2^n float32 elements; per-axis as [2^n / 64, 64] on axis 1), run with all graph optimizations, its output bound
to a preallocated buffer (io_binding: no allocation in the timed call), ``intra_op_num_threads`` = --threads.
It prints the minimum and median in ms and the ratio to a NumPy copy of the same input bytes in this process.
"""
from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from framework_timing import arguments, measure, write_json

STORAGE = {"int8": (np.int8, TensorProto.INT8), "int4": (ml_dtypes.int4, TensorProto.INT4),
           "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, TensorProto.FLOAT8E4M3FN)}


def _model(op: str, st: str, shape, per_axis: bool):
    np_t, tp = STORAGE[st]
    c = shape[1] if per_axis else None
    scale = np.full(c, 0.05, np.float32) if c else np.array(0.05, np.float32)
    zp = np.zeros(c if c else (), np_t)
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")]
    in_type = tp if op == "DequantizeLinear" else TensorProto.FLOAT
    out_type = tp if op == "QuantizeLinear" else TensorProto.FLOAT
    nodes = []
    if op in ("QuantizeLinear", "QuantizeDequantizeLinear"):
        nodes.append(helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q" if op != "QuantizeLinear" else "y"],
                                      axis=1))
    if op in ("DequantizeLinear", "QuantizeDequantizeLinear"):
        nodes.append(helper.make_node("DequantizeLinear", ["q" if op != "DequantizeLinear" else "x", "s", "z"], ["y"],
                                      axis=1))
    g = helper.make_graph(nodes, op, [helper.make_tensor_value_info("x", in_type, list(shape))],
                          [helper.make_tensor_value_info("y", out_type, list(shape))], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), np_t


def main(argv=None) -> int:
    args = arguments(__doc__.split("\n\n")[0], argv)
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    rows = []
    print(f"onnxruntime {ort.__version__} (onnx {onnx.__version__}), {args.threads} threads, 2^{args.log2n} "
          f"float32 elements, ms (min / median), x copy of the input bytes (median)")
    for op in ("QuantizeLinear", "DequantizeLinear", "QuantizeDequantizeLinear"):
        for st, per_axis in (("int8", False), ("float8_e4m3fn", False), ("int4", False), ("int8", True)):
            name = f"{op}[{st}{',axis=1' if per_axis else ''}]"
            shape = (n // 64, 64) if per_axis else (n,)
            model, np_t = _model(op, st, shape, per_axis)
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            try:
                sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            except Exception as e:  # noqa: BLE001  (a kernel onnxruntime does not have)
                print(f"  {name:48s} not run: {str(e).splitlines()[0][:100]}")
                rows.append({"case": name, "error": str(e).splitlines()[0]})
                continue
            if op == "DequantizeLinear":
                x = rng.integers(-8, 8, shape).astype(np.int8).astype(np_t)
                y = np.empty(shape, np.float32)
            else:
                x = (rng.standard_normal(shape) * 2).astype(np.float32)
                y = np.empty(shape, np_t if op == "QuantizeLinear" else np.float32)
            binding = sess.io_binding()
            how = "preallocated output"
            try:
                binding.bind_cpu_input("x", x)
                if y.dtype.kind in "fiu":
                    binding.bind_output("y", "cpu", 0, y.dtype, list(shape), y.ctypes.data)
                else:   # a type NumPy cannot name for onnxruntime (float8, int4): onnxruntime allocates the output
                    binding.bind_output("y", "cpu")
                    how = "output allocated by onnxruntime (a type its Python API cannot take)"
                fn = lambda: sess.run_with_iobinding(binding)  # noqa: E731
                fn()
            except Exception as e:  # noqa: BLE001  (an input type its Python API cannot pass: int4)
                print(f"  {name:48s} not run: {str(e).splitlines()[0][:100]}")
                rows.append({"case": name, "error": str(e).splitlines()[0]})
                continue
            rows.append(measure(name, "ort", fn, lambda: x.copy(), args.repeat, 48, how=how))
    write_json(args.json, {"onnxruntime": ort.__version__}, rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
