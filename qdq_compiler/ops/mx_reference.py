"""The MX family's NumPy reference on any axis (issue 25): x's blocks laid out as rows ([rows, C], the axis last, a
shorter last block padded with zeros), then the OCP text's steps (ops/mx_ocp.py) or torchao's (ops/mx_numerics.py),
and the answer put back in x's shape. Kept apart from the family (ops/mx_fake_quant.py), which dispatches to it."""
from __future__ import annotations

import numpy as np

from .. import storage
from . import mx_numerics as MXN
from . import mx_ocp as MXO
from . import nvfp4_spec as NVS

F32 = np.float32


def _as_rows(x: np.ndarray, axis: int, block_size: int, dtype=F32) -> tuple[np.ndarray, tuple, int]:
    """x with ``axis`` last, as [rows, C padded with zeros to a multiple of block_size]; the moved shape and C."""
    moved = np.moveaxis(x, axis, -1)
    c = moved.shape[-1]
    rows = moved.reshape(-1, c)
    pad = -c % block_size
    if pad:
        rows = np.concatenate([rows, np.zeros((rows.shape[0], pad), dtype)], axis=1)
    return rows, moved.shape, c


def _random_rows(r, axis, block_size):
    """Stochastic rounding's words (x's shape) in the rows layout, or None."""
    return None if r is None else _as_rows(r, axis, block_size, np.uint32)[0]


def fake_quantize(x, elem: str, block_size: int, axis: int, scale_rule: str, reference: str = "torchao",
                  r: np.ndarray | None = None) -> np.ndarray:
    """Blocks along ``axis`` (a shorter last block: padded with zeros), quantized and dequantized: ``reference``
    "torchao" (to_mx then to_dtype(float32), ops/mx_numerics.py) or "ocp" (the specification, ops/mx_ocp.py)."""
    x = np.asarray(x, F32)
    if x.size == 0:
        return x.copy()
    rows, moved_shape, c = _as_rows(x, axis, block_size)
    if elem == "nvfp4" and reference == "ocp":   # NVIDIA's recipe (the tensor's amax: zeros pad nothing)
        deq = NVS.rows(rows, NVS.tensor_amax(x))[3]
    elif elem == "nvfp4":   # torchao's two-level NVFP4: the per-tensor scale from the whole tensor
        _, _, deq = MXN.nvfp4(rows, MXN.per_tensor_scale(x))
    elif reference == "ocp":
        deq = MXO.fake_quantize_rows(rows, elem, scale_rule, block_size, _random_rows(r, axis, block_size))
    else:
        _, _, deq = MXN.mx(rows, elem, scale_rule, block_size)
    return np.moveaxis(deq[:, :c].reshape(moved_shape), -1, axis)


def quantize(x, elem: str, block_size: int, axis: int, scale_rule: str, r: np.ndarray | None = None,
             reference: str = "ocp") -> tuple[np.ndarray, np.ndarray]:
    """(elements in MXO.STORAGE[elem], float8_e8m0fnu scales of x's shape with ceil(C / block_size) along axis)
    as the OCP text says (ops/mx_ocp.py) or as torchao's to_mx gives them (``reference`` "torchao")."""
    x = np.asarray(x, F32)
    t = storage.get(MXO.STORAGE[elem])
    nb_shape = list(x.shape)
    nb_shape[axis] = -(-x.shape[axis] // block_size)
    if x.size == 0:
        return np.zeros(x.shape, t.np), np.zeros(nb_shape, storage.get("float8_e8m0fnu").np)
    rows, moved_shape, c = _as_rows(x, axis, block_size)
    if reference == "torchao":
        scale_bytes, codes, _ = MXN.mx(rows, elem, scale_rule, block_size)
    else:
        codes, scale_bytes = MXO.quantize_rows(rows, elem, scale_rule, block_size, _random_rows(r, axis, block_size))
    elements = np.moveaxis(codes[:, :c].reshape(moved_shape), -1, axis)
    scales = np.moveaxis(scale_bytes.reshape(moved_shape[:-1] + (-1,)), -1, axis)
    return (storage.from_codes(np.ascontiguousarray(elements).astype(t.code_dtype), t.np),
            storage.from_codes(np.ascontiguousarray(scales).astype(np.uint8).view(np.int8), "float8_e8m0fnu"))


def dequantize(elements, scales, elem: str, block_size: int, axis: int) -> np.ndarray:
    """float32 X * P of the codes and E8M0 scales (ops/mx_ocp.py: a NaN scale or element gives 0x7FC00000)."""
    if elements.size == 0:
        return np.zeros(elements.shape, F32)
    codes = storage.to_codes(elements).astype(np.int64)
    if MXO.ELEMS[elem].np_type is not None:
        codes &= 0xFF
    rows, moved_shape, c = _as_rows(codes, axis, block_size, np.int64)
    scale_rows = np.moveaxis(storage.to_codes(scales).astype(np.int64) & 0xFF, axis, -1).reshape(rows.shape[0], -1)
    y = MXO.dequantize_rows(rows, scale_rows, elem, block_size)
    return np.moveaxis(y[:, :c].reshape(moved_shape), -1, axis)


def clipped_gradient(dy, x, elem: str, block_size: int, axis: int, scale_rule: str) -> np.ndarray:
    """dy where x lies within its block's representable range (max * X; NVFP4: (6 * S_b) * s_dec, NVIDIA's recipe),
    +0 elsewhere and in NaN-scale blocks."""
    x = np.asarray(x, F32)
    if x.size == 0:
        return np.zeros(x.shape, F32)
    rows, moved_shape, c = _as_rows(x, axis, block_size)
    mask = NVS.in_range_rows(rows, NVS.tensor_amax(x)) if elem == "nvfp4" else \
        MXO.in_range_rows(rows, elem, scale_rule, block_size)
    mask = np.moveaxis(mask[:, :c].reshape(moved_shape), -1, axis)
    return np.where(mask, np.asarray(dy, F32), F32(0))


def nvfp4_quantize(x, axis: int, reference: str = "ocp") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float4_e2m1fn elements of x's shape, float8_e4m3fn block scales (ceil(C / 16) along axis), the float32
    tensor scale (0-d): what dequantizing multiplies by) of NVIDIA's recipe (ops/nvfp4_spec.py) or torchao's."""
    x = np.asarray(x, F32)
    nb_shape = list(x.shape)
    nb_shape[axis] = -(-x.shape[axis] // NVS.BLOCK)
    if x.size == 0:
        return (np.zeros(x.shape, storage.get("float4_e2m1fn").np), np.zeros(nb_shape, storage.get("float8_e4m3fn").np),
                np.asarray(NVS.tensor_scales(F32(0))[1] if reference == "ocp" else MXN.per_tensor_scale(x), F32))
    rows, moved_shape, c = _as_rows(x, axis, NVS.BLOCK)
    if reference == "ocp":
        codes, s_codes, s_dec, _ = NVS.rows(rows, NVS.tensor_amax(x))
    else:
        s_dec = MXN.per_tensor_scale(x)
        s_codes, codes, _ = MXN.nvfp4(rows, s_dec)
    elements = np.moveaxis(codes[:, :c].reshape(moved_shape), -1, axis)
    scales = np.moveaxis(np.asarray(s_codes).reshape(moved_shape[:-1] + (-1,)), -1, axis)
    return (storage.from_codes(np.ascontiguousarray(elements & 0xF).astype(np.int8), "float4_e2m1fn"),
            storage.from_codes(np.ascontiguousarray(scales).astype(np.uint8).view(np.int8), "float8_e4m3fn"),
            np.asarray(s_dec, F32))


def nvfp4_dequantize(elements, scales, tensor_scale, axis: int) -> np.ndarray:
    """float32 (P * S_b) * tensor_scale (ops/nvfp4_spec.py: a NaN scale gives 0x7FC00000)."""
    if elements.size == 0:
        return np.zeros(elements.shape, F32)
    codes = storage.to_codes(elements).astype(np.int64) & 0xF
    rows, moved_shape, c = _as_rows(codes, axis, NVS.BLOCK, np.int64)
    scale_rows = np.moveaxis(storage.to_codes(scales).astype(np.int64) & 0xFF, axis, -1).reshape(rows.shape[0], -1)
    y = NVS.dequantize_rows(rows, scale_rows, np.asarray(tensor_scale, F32)[()])
    return np.moveaxis(y[:, :c].reshape(moved_shape), -1, axis)
