"""Host memory shared with IREE: aligned NumPy buffers, zero-copy views of device buffers, constants.

See runtime.py for why (inputs imported in place, results handed out without a copy); this module holds
the NumPy side of it, so that runtime.py is only about loading and calling.
"""
from __future__ import annotations

import weakref

import numpy as np

DEFAULT_IMPORT_ALIGNMENT = 64  # IREE's binding alignment contract
# With this flag IREE declares every binding 16-byte aligned instead, so wide-vector (AVX) code loads and stores
# with vmovups, and NumPy's 16-byte aligned arrays are imported as they are (runtime.import_alignment).
RESOURCE_ALIGNMENT_16 = "--iree-stream-resource-min-offset-alignment=16"
# Results of at least this many bytes are returned as views of the device buffer, smaller ones copied.
ZERO_COPY_MIN_BYTES = 1 << 16


class _Keep:
    """The ``base`` of a NumPy array that views IREE memory: holds the buffer and its mapping alive."""
    __slots__ = ("__array_interface__", "_refs", "__weakref__")

    def __init__(self, iface: dict, refs: tuple):
        self.__array_interface__ = iface
        self._refs = refs


def _view_of(ptr: int, shape, dtype: np.dtype, refs: tuple) -> np.ndarray:
    """A writable array over ``ptr`` whose base keeps ``refs`` alive."""
    iface = {"shape": tuple(shape), "typestr": dtype.str, "data": (ptr, False), "version": 3}
    return np.asarray(_Keep(iface, refs))


def _aligned_empty(nbytes: int, alignment: int) -> np.ndarray:
    """A uint8 NumPy array of ``nbytes`` whose address is a multiple of ``alignment``."""
    raw = np.empty(max(nbytes, 1) + alignment, np.uint8)
    off = (-raw.ctypes.data) % alignment
    # (an empty slice keeps its base's address in NumPy: cut it from a one-byte one)
    return raw[off:off + nbytes] if nbytes else raw[off:off + 1][:0]


def empty_aligned(shape, dtype, alignment: int = DEFAULT_IMPORT_ALIGNMENT) -> np.ndarray:
    """An uninitialised NumPy array aligned for import (for example an ``out=`` reused across calls)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    return _aligned_empty(n * dtype.itemsize, alignment).view(dtype).reshape(shape)


def _as_host_array(a) -> np.ndarray:
    if type(a) is not np.ndarray:
        a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.astype(np.int8)
    elif not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a


_constants: "weakref.WeakSet[Constant]" = weakref.WeakSet()
_ETYPES: dict[str, object] = {}
_DTYPES: dict[int, np.dtype] = {}


def _element_type(dtype: np.dtype):
    et = _ETYPES.get(dtype.str)
    if et is None:
        from iree.runtime.array_interop import map_dtype_to_element_type
        et = map_dtype_to_element_type(dtype)
        if et is None:
            raise TypeError(f"no IREE element type for {dtype}")
        _ETYPES[dtype.str] = et
    return et


def _dtype_of(element_type) -> np.dtype:
    key = int(element_type)
    dt = _DTYPES.get(key)
    if dt is None:
        import iree.runtime as rt
        dt = _DTYPES[key] = np.dtype(rt.HalElementType.map_to_dtype(element_type))
    return dt


class Constant:
    """An argument that is the same on every call (an attribute parameter): imported once per device,
    from a private read-only copy."""
    __slots__ = ("array", "_refs", "__weakref__")

    def __init__(self, value):
        a = _as_host_array(value)
        own = _aligned_empty(max(a.nbytes, 1), 64)[:a.nbytes].view(a.dtype).reshape(a.shape)
        np.copyto(own, a)
        own.setflags(write=False)
        self.array = own
        self._refs: dict[str, tuple] = {}
        _constants.add(self)

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    def ref(self, v):
        """The buffer-view reference of this constant on the device of ``v`` (a loaded function variant)."""
        hit = self._refs.get(v.driver)
        if hit is None:
            import iree.runtime as rt
            a = self.array
            alias = _view_of(a.ctypes.data, a.shape, a.dtype, (a,))  # the import API wants writable memory
            mt = int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE)
            buf = v.allocator.import_host_allocation(alias, memory_type=mt, allowed_usage=int(rt.BufferUsage.DEFAULT))
            hit = self._refs[v.driver] = (rt.HalBufferView(buf, a.shape, _element_type(a.dtype)).ref, buf)
        return hit[0]

    def __repr__(self):
        return f"Constant({self.array!r})"


# -- results read back -------------------------------------------------------------------------------

def _result(bv, spans: list, keep: list, want: np.ndarray | None) -> np.ndarray:
    """One result as NumPy: a view that holds the buffer alive, or a copy (small, overlapping an input
    or an earlier result, or into ``want``). ``spans``: address ranges taken so far (filled lazily from
    the bound input arrays ``keep``)."""
    shape = tuple(bv.shape)
    dtype = _dtype_of(bv.element_type)
    n = 1
    for d in shape:
        n *= d
    nbytes = n * dtype.itemsize
    if nbytes == 0:
        return _fill(want, np.empty(shape, dtype))
    mapping = bv.map()
    host = np.frombuffer(mapping, dtype, count=n).reshape(shape)  # read-only; alive as long as `mapping`
    if want is not None:
        return _fill(want, host)
    if nbytes < ZERO_COPY_MIN_BYTES:
        return host.copy()
    if not spans:
        for a in keep:
            p = a.__array_interface__["data"][0]
            spans.append((p, p + a.nbytes))
    ptr = host.__array_interface__["data"][0]
    end = ptr + nbytes
    overlaps = any(s < end and ptr < e for s, e in spans)
    spans.append((ptr, end))
    if overlaps:
        return host.copy()
    return _view_of(ptr, shape, dtype, (mapping, bv))


def _fill(want, res):
    if want is None:
        return res
    if want.shape != res.shape or want.dtype != res.dtype:
        raise ValueError(f"out has shape {want.shape} and dtype {want.dtype}; the result is {res.shape} {res.dtype}")
    np.copyto(want, res)
    return want


def _copy_into(results, outs):
    if outs is None:
        return results
    return [_fill(outs[i] if i < len(outs) else None, r) for i, r in enumerate(results)]


def _check_out(o, alignment: int, what: str):
    if not isinstance(o, np.ndarray) or not o.flags.c_contiguous or not o.flags.writeable:
        raise ValueError(f"{what} must be a writable C-contiguous NumPy array")
    if o.__array_interface__["data"][0] % alignment:
        raise ValueError(f"{what} must be aligned to {alignment} bytes (runtime.empty_aligned makes one)")
