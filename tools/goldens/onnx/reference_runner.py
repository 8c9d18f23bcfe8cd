"""Golden generator skeleton for QuantizeLinear / DequantizeLinear.

golden(op, x, scale, zero_point=None, attrs=None, opset=28, ort_opset=25)
  -> {"ref": ndarray | "ERR ...", "ort": ndarray | "ERR ...", "equal": bool | None}

* ref: onnx.reference.ReferenceEvaluator at `opset` (onnx 1.23.2 defines up to 28).
* ort: onnxruntime CPU at `ort_opset` (ORT 1.32.0 rejects opset 28 for these ops; 25..27 all map
  to its opset-25 kernel). Graph optimizations are disabled so the kernel really runs.
* x is a graph input when its dtype is a plain numpy dtype; scale / zero_point (and any
  ml_dtypes-typed x) are initializers (ORT validates some things only for constants, e.g. fp8 zp).
* ORT's python binding cannot return int4/uint4/int2/uint2/float8(e5m2, fnuz)/float4 outputs, so an
  exact Cast to int8/uint8/float32 is appended for those and the result is converted back to the
  ml_dtypes type. Caveat: NaN payload/sign of float8 outputs from ORT is then not observable
  (float8e4m3fn is returned raw, as uint8, when widen=False).
"""
from __future__ import annotations
import numpy as np
import ml_dtypes  # noqa: F401  (registers dtypes)
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ort.set_default_logger_severity(3)
_NATIVE = {np.dtype(t) for t in (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16,
                                 np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.bool_)}
_WIDEN = {TensorProto.INT4: TensorProto.INT8, TensorProto.INT2: TensorProto.INT8,
          TensorProto.UINT4: TensorProto.UINT8, TensorProto.UINT2: TensorProto.UINT8,
          TensorProto.FLOAT8E4M3FN: TensorProto.FLOAT, TensorProto.FLOAT8E4M3FNUZ: TensorProto.FLOAT,
          TensorProto.FLOAT8E5M2: TensorProto.FLOAT, TensorProto.FLOAT8E5M2FNUZ: TensorProto.FLOAT,
          TensorProto.FLOAT4E2M1: TensorProto.FLOAT, TensorProto.BFLOAT16: TensorProto.FLOAT,
          TensorProto.FLOAT6E2M3: TensorProto.FLOAT, TensorProto.FLOAT6E3M2: TensorProto.FLOAT}


def _tdt(a) -> int:
    return helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype)


def _out_type(op, attrs, scale, zero_point):
    if attrs.get("output_dtype"):
        return attrs["output_dtype"]
    if op == "QuantizeLinear":
        return _tdt(zero_point) if zero_point is not None else TensorProto.UINT8
    return _tdt(scale)


def build_model(op, x, scale, zero_point=None, attrs=None, opset=28, x_as_input=True):
    attrs = dict(attrs or {})
    names, gin, inits, feeds = [], [], [], {}
    for i, a in enumerate((x, scale, zero_point)):
        if a is None:
            names.append("")
            continue
        a = np.asarray(a)
        n = ("x", "scale", "zero_point")[i]
        names.append(n)
        if i == 0 and x_as_input and a.dtype in _NATIVE:
            gin.append(helper.make_tensor_value_info(n, _tdt(a), list(a.shape)))
            feeds[n] = a
        else:
            inits.append(numpy_helper.from_array(a, n))
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, ["y"], **attrs)
    out = helper.make_tensor_value_info("y", _out_type(op, attrs, scale, zero_point), None)
    g = helper.make_graph([node], "qdq", gin, [out], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          ir_version=10 if opset <= 23 else 11)
    return m, feeds


def run_reference(m, feeds):
    try:
        return ReferenceEvaluator(m).run(None, feeds)[0]
    except Exception as e:  # noqa: BLE001
        return f"ERR {type(e).__name__}: {e}"


def run_onnxruntime(m, feeds, widen=True):
    ot = m.graph.output[0].type.tensor_type.elem_type
    back = None
    if widen and ot in _WIDEN:
        m = onnx.ModelProto.FromString(m.SerializeToString())
        m.graph.node[0].output[0] = "y_raw"
        m.graph.node.append(helper.make_node("Cast", ["y_raw"], ["y"], to=_WIDEN[ot]))
        m.graph.output[0].type.tensor_type.elem_type = _WIDEN[ot]
        back = helper.tensor_dtype_to_np_dtype(ot)
    try:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        y = sess.run(None, feeds)[0]
        return y.astype(back) if back is not None else y
    except Exception as e:  # noqa: BLE001
        return f"ERR {type(e).__name__}: {e}"


def _equal(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return None
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f" or "float" in str(a.dtype):
        af, bf = a.astype(np.float64), b.astype(np.float64)
        same = (af == bf) & (np.signbit(af) == np.signbit(bf))
        return bool(np.all(same | (np.isnan(af) & np.isnan(bf))))
    return bool(np.array_equal(a.astype(np.int64), b.astype(np.int64)))


def golden(op, x, scale, zero_point=None, attrs=None, opset=28, ort_opset=25):
    """op: 'QuantizeLinear' | 'DequantizeLinear'; attrs: axis, saturate, block_size, output_dtype, precision."""
    m, feeds = build_model(op, x, scale, zero_point, attrs, opset)
    ref = run_reference(m, feeds)
    m2, feeds2 = build_model(op, x, scale, zero_point, attrs, ort_opset)
    o = run_onnxruntime(m2, feeds2)
    return {"ref": ref, "ort": o, "equal": _equal(ref, o)}


if __name__ == "__main__":
    x = np.array([0.5, 2.5, -2.5, 3e9, np.inf, np.nan, 500.0], np.float32)
    print(golden("QuantizeLinear", x, np.array(1.0, np.float32), np.array(0, np.int8)))
    print(golden("QuantizeLinear", x, np.array(1.0, np.float32),
                 np.array(0, ml_dtypes.float8_e4m3fn), {"saturate": 0}))
    print(golden("DequantizeLinear", np.array([-128, 0, 127], np.int8), np.array(0.1, np.float16),
                 np.array(1, np.int8)))
