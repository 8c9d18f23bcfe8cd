"""ONNX's QuantizeLinear/DequantizeLinear arguments as ``validation.bind`` takes them (ops/onnx_qdq.py's
``public_arguments``): types given as NumPy/ml_dtypes dtypes, their names or TensorProto numbers; a missing zero
point; a scale of another type than the data (opset 23, float8_e8m0fnu from 24); ``precision`` (opset 23);
DequantizeLinear's ``output_dtype`` (opset 23); one-element scales as per-tensor; negative axes.

The scale's own type travels as the hidden attribute ``scale_dtype`` ("": the op's element type T, x's for
QuantizeLinear and the result's for DequantizeLinear) and its values as float32 (every scale type embeds in
float32 exactly). A ``precision`` narrower than the scale's type rounds the scale on the host, as the reference's
``y_scale.astype(precision)`` does; x and the quotient are rounded in the program.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, storage
from ..errors import QDQError, QDQTypeError

FLOATS = ("float32", "float16", "bfloat16")
SCALE_DTYPES = FLOATS + ("float8_e8m0fnu",)
_BY_CODE = {1: "float32", 10: "float16", 16: "bfloat16"}
TINY = 2.0 ** -100


def float_name(spec, value, arg: str = "precision") -> str:
    """A float type given as a NumPy dtype, its name or a TensorProto number (1 float, 10 float16, 16 bfloat16)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if int(value) not in _BY_CODE:
            raise QDQError(f"{arg}={value!r}: allowed: 1 (FLOAT), 10 (FLOAT16), 16 (BFLOAT16)", op=spec.name, arg=arg)
        return _BY_CODE[int(value)]
    try:
        name = dtypes.get(value).name
    except QDQError:
        name = None
    if name not in FLOATS:
        raise QDQError(f"{arg}={value!r}: allowed: float32, float16, bfloat16 (or 1, 10, 16)", op=spec.name,
                       arg=arg) from None
    return name


def storage_name(spec, name, value, allowed) -> str:
    if value is None or (isinstance(value, (int, str, np.integer)) and value in (0, "")):
        return ""
    try:
        got = storage.get(value).name
    except QDQError:
        got = None
    if got not in allowed:
        raise QDQError(f"{name}={value!r} is not a quantized type this op takes; allowed: {', '.join(allowed)} "
                       f"(a NumPy/ml_dtypes dtype or its TensorProto number)", op=spec.name, arg=name)
    return got


def _is_array(a) -> bool:
    return isinstance(a, (np.ndarray, np.generic))


def _scale_array(spec, name, scale, element: str):
    """The scale as an array of its own type (a Python number: of the op's type), checked against the types
    ONNX allows."""
    if not _is_array(scale):
        try:
            return np.asarray(scale, dtypes.np_of(element))
        except (TypeError, ValueError):
            raise QDQTypeError(f"{name} must be a number or an array of {', '.join(SCALE_DTYPES)}", op=spec.name,
                               arg=name) from None
    s = np.asarray(scale)
    if dtypes.name_of(s.dtype) not in SCALE_DTYPES:
        raise QDQTypeError(f"{name} has dtype {s.dtype}; allowed: {', '.join(SCALE_DTYPES)}", op=spec.name, arg=name,
                           reference="ONNX", tf_message=f"Type Error: Type (tensor({s.dtype})) of input parameter "
                                                        f"({name}) of operator ({spec.name}) in node () is invalid.")
    return s


def _zero_point(t_name, scale):
    """ONNX's missing zero point: zeros of the storage type, of the scale's shape."""
    t = storage.get(t_name)
    zero = t.sign_bit if t.special == storage.FINITE else 0   # float4/float6: -0, which adds nothing, not even to -0
    return storage.from_codes(np.full(np.shape(scale), zero, t.code_dtype), t.np)


# The opset from which ONNX's QuantizeLinear/DequantizeLinear take each type and attribute (onnx 1.23's schemas:
# 10, 13, 19, 21, 23, 24, 25, 28; the numerics are the same in every one, only what they take grows).
OPSETS = (10, 28)
SINCE = {"int8": 10, "uint8": 10, "int32": 10, "axis": 13, "float8_e4m3fn": 19, "float8_e4m3fnuz": 19,
         "float8_e5m2": 19, "float8_e5m2fnuz": 19, "saturate": 19, "float16": 19, "bfloat16": 19,
         "int16": 21, "uint16": 21, "int4": 21, "uint4": 21, "block_size": 21, "output_dtype": 21,
         "float4_e2m1fn": 23, "precision": 23, "scale of another type": 23, "float8_e8m0fnu": 24,
         "int2": 25, "uint2": 25, "float6_e2m3fn": 28, "float6_e3m2fn": 28}


def _onnx_type(name: str) -> str:
    return "float" if name == "float32" else storage.get(name).onnx.lower()


def check_opset(spec, opset, facts, names, element: str, storage_type: str, scale_type: str) -> None:
    """What a model of ``opset`` may hold, in ONNX's words: a type or an attribute newer than the opset is refused
    (the numerics do not change between opsets)."""
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)) or not OPSETS[0] <= opset <= OPSETS[1]:
        raise QDQError(f"opset={opset!r}: allowed: {OPSETS[0]}..{OPSETS[1]} (onnx 1.23's opsets for {spec.name})",
                       op=spec.name, arg="opset")
    x_name, scale_name, zp_name = names
    q = spec.variant.quantize
    used = [(storage_type, zp_name if q else x_name), (element, x_name if q else scale_name), (scale_type, scale_name)]
    attrs = [a for a in ("block_size", "precision") if facts.get(a) not in (None, 0, "")]
    attrs += ["saturate"] if facts.get("saturate") == 0 else []
    attrs += ["axis"] if facts.get("granularity") != "tensor" else []
    attrs += ["output_dtype"] if (facts.get("output_dtype_given") if q else facts["output_dtype"] != scale_type) \
        else []
    for a in attrs:
        since = 23 if a == "output_dtype" and not q else SINCE[a]   # DequantizeLinear's output_dtype: opset 23
        if opset < since:
            raise QDQError(f"attribute {a} needs opset {since} or later; opset={opset}", op=spec.name,
                           arg="opset", reference="ONNX", tf_message=f"Unrecognized attribute: {a} for operator "
                                                                     f"{spec.name}")
    for what, where in used:
        if opset < SINCE.get(what, 10):
            raise QDQError(f"{what} ({where}) needs opset {SINCE[what]} or later; opset={opset}", op=spec.name,
                           arg="opset", reference="ONNX", tf_message=f"Type Error: Type (tensor({_onnx_type(what)})) "
                           f"of input parameter ({where}) of operator ({spec.name}) in node () is invalid.")
    if q and scale_type != element and opset < SINCE["scale of another type"]:
        raise QDQError(f"{scale_name} of type {scale_type} beside x of type {element} needs opset 23 or later; "
                       f"opset={opset}", op=spec.name, arg="opset", reference="ONNX",
                       tf_message=f"Type parameter (T1) of Optype ({spec.name}) bound to different types "
                                  f"(tensor({_onnx_type(element)}) and tensor({_onnx_type(scale_type)}) in node ().")


def public_arguments(spec, kwargs, quantized: tuple[str, ...], dq_types: tuple[str, ...]) -> dict:
    """ONNX's arguments as bind takes them (see the module's docstring)."""
    out = dict(kwargs)
    opset = out.pop("opset", None)
    names = [i.name for i in spec.inputs]
    scale_name, zp_name = names[1], names[2]
    given = out.pop("output_dtype", None)
    precision = out.pop("precision", None)
    block_size = out.get("block_size", 0)
    x, scale, zp = out.get("x"), out.get(scale_name), out.get(zp_name)
    if spec.variant.quantize:
        if not _is_array(x):
            raise QDQTypeError("x must be a NumPy array of float32, float16 or bfloat16", op=spec.name, arg="x")
        element = dtypes.name_of(np.asarray(x).dtype)
        named = storage_name(spec, "output_dtype", given, quantized)
        given_output = bool(named)
        if _is_array(zp) and named and dtypes.name_of(np.asarray(zp).dtype) != named:
            zt = dtypes.name_of(np.asarray(zp).dtype)
            raise QDQError(f"output_dtype={named} does not match y_zero_point's type {zt}", op=spec.name,
                           arg="output_dtype", reference="ONNX", tf_message=f"Mismatched output data-types: "
                           f"output_dtype={storage.get(named).onnx_code}, zero_point type="
                           f"{storage.get(zt).onnx_code if zt in storage.TABLE else '?'}")
        scale = _scale_array(spec, scale_name, scale, element)
        missing = zp is None
        zp = _zero_point(named or "uint8", scale) if zp is None else zp
    else:
        given_output = False   # (DequantizeLinear's output_dtype is its element type, checked as such)
        x_type = dtypes.name_of(np.asarray(x).dtype) if _is_array(x) else None
        scale = _scale_array(spec, scale_name, scale, "float32")
        s_type = dtypes.name_of(scale.dtype)
        if given not in (None, 0, ""):   # opset 23: the result's float type
            element = float_name(spec, given, "output_dtype")
        elif s_type == "float8_e8m0fnu":
            raise QDQError(f"output_dtype is required with a float8_e8m0fnu {scale_name}: the result takes the "
                           f"scale's type otherwise, and float8_e8m0fnu is no result type; allowed: 1 (FLOAT), "
                           f"10 (FLOAT16), 16 (BFLOAT16)", op=spec.name, arg="output_dtype")
        else:
            element = s_type
        out["output_dtype"] = element
        missing = zp is None
        if zp is None and x_type is not None:
            zp = _zero_point(x_type if x_type in dq_types else "uint8", scale)
    if precision not in (None, 0, ""):   # opset 23: the type x and the scale are divided in
        p = float_name(spec, precision)
        out["precision"] = p
        if p != "float32" and dtypes.name_of(scale.dtype) != p:
            if spec.variant.dequantize:
                raise QDQError(f"precision={precision!r} ({p}) is narrower than {scale_name} ({scale.dtype}): the pair's "
                               f"quotient would take the rounded scale and its dequantization the original; call "
                               f"QuantizeLinear and DequantizeLinear (or give precision float32, or {scale.dtype})",
                               op=spec.name, arg="precision")
            with np.errstate(all="ignore"):   # the reference's y_scale.astype(precision), on the host
                scale = scale.astype(np.float32).astype(dtypes.np_of(p))
    s_type = dtypes.name_of(scale.dtype)
    out["scale_dtype"] = "" if s_type == element else s_type
    if missing and spec.variant.dequantize and _is_array(zp) and dtypes.name_of(np.asarray(zp).dtype).startswith("float6"):
        out["no_zero_point"] = True   # the reference subtracts none: a -0 stays -0 (-0 - -0 would be +0)
    with np.errstate(all="ignore"):   # every scale type embeds in float32 exactly: the program takes that
        scale = scale.astype(np.float32)
    out[scale_name], out[zp_name] = scale, zp
    blocked = isinstance(block_size, (int, np.integer)) and block_size != 0
    if scale.ndim > 1 and not blocked:
        raise QDQError(f"{scale_name} has shape {list(scale.shape)}; allowed: a number, or a vector along axis "
                       f"(or blocks, with block_size > 0)", op=spec.name, arg=scale_name,
                       reference="ONNX", tf_message="Input 2 must be a vector or a number.")
    if scale.ndim <= 1 and scale.size == 1 and not blocked:
        # per tensor: a 0-d or one-element scale and zero point, each either way (ONNX's node tests and its
        # exporters write a [1] zero point beside a 0-d scale; the reference and onnxruntime take every mix)
        out[scale_name] = scale.reshape(())
        if _is_array(zp) and np.ndim(zp) <= 1 and np.size(zp) == 1:
            out[zp_name] = np.asarray(zp).reshape(())
    out["granularity"] = "block" if blocked else "axis" if scale.ndim == 1 and scale.size != 1 else "tensor"
    if spec.variant.quantize:
        with np.errstate(invalid="ignore"):
            tiny = bool(np.any(np.abs(scale) < TINY))
        if tiny and out.get("tiny_scale") is False:   # a bundle entry's baked program
            raise QDQError(f"{scale_name} has values below 2^-100 in magnitude; this program was built for scales "
                           f"of 2^-100 and above (its scale was not known when it was built): call the op in Python, which builds "
                           f"for the scale given", op=spec.name, arg=scale_name)
        out["tiny_scale"] = tiny or bool(out.get("tiny_scale", False))
    axis = out.get("axis", 1)
    if out["granularity"] != "tensor" and _is_array(x) and isinstance(axis, (int, np.integer)) \
            and -np.ndim(x) <= axis < 0:
        out["axis"] = int(axis) + np.ndim(x)
    if opset is not None:
        x_type = dtypes.name_of(np.asarray(x).dtype) if _is_array(x) else ""
        t_name = (dtypes.name_of(np.asarray(zp).dtype) if _is_array(zp) else "uint8") if spec.variant.quantize \
            else x_type
        check_opset(spec, opset, {**out, "output_dtype_given": given_output, "saturate": kwargs.get("saturate"),
                                  "precision": kwargs.get("precision")}, names, element, t_name, s_type)
    return out
