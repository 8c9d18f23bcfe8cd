"""What PyTorch's aten families share: the variant record, dtype names as PyTorch's messages spell them, and
a ``Family`` base whose per-channel ops run in the [outer, C, inner] layout along their ``axis``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .family import AXIS, FLAT, Family

# The tail of ATen's TORCH_CHECK messages without a message of their own.
ASSERT_TAIL = ("  (Could this error message be improved?  If so, please report an enhancement request to "
               "PyTorch.)")
_TORCH_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def torch_name(name: str) -> str:
    """A NumPy dtype name as PyTorch's messages spell the ScalarType (float64 -> Double)."""
    return _TORCH_NAMES.get(name, name)


QUANT_LIMIT = 2 ** 24      # levels and level - zero_point exact in float32 (ATen: int64); up to 24-bit ranges


def check_quant_range(c, qmin: int, qmax: int):
    """quant_min <= quant_max in PyTorch's words, and the range within what float32 holds exactly (our limit)."""
    if qmin > qmax:
        c.fail(f"quant_min={qmin} must be less than or equal to quant_max={qmax}", "quant_min",
               tf="`quant_min` should be less than or         equal to `quant_max`.")
    for n, v in (("quant_min", qmin), ("quant_max", qmax)):
        if abs(v) > QUANT_LIMIT:
            c.fail(f"{n}={v} is beyond the quantisation ranges qdq_compiler computes exactly in float32; allowed: "
                   f"-2^24 <= {n} <= 2^24", n)
    if qmax - qmin > QUANT_LIMIT:
        c.fail(f"quant_max - quant_min = {qmax - qmin} spans more levels than float32 holds exactly; allowed: at "
               f"most 2^24 (a 24-bit range)", "quant_max")


def check_axis(c, axis: int, rank: int):
    """A per-channel axis in PyTorch's order of checks: ``self.size(axis)`` first (c10's dimension errors), then
    the op's own ``axis >= 0``."""
    if rank == 0:
        c.fail(f"axis={axis}: a per-channel op needs an input of rank >= 1, got a scalar", "axis",
               tf=f"Dimension specified as {axis} but tensor has no dimensions")
    if not -rank <= axis < rank:
        c.fail(f"axis={axis} is out of range for an input of rank {rank}; allowed: 0..{rank - 1}", "axis",
               tf=f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {axis})")
    if axis < 0:
        c.fail(f"axis={axis} must not be negative; allowed: 0..{rank - 1}", "axis",
               tf="`axis` must be between 0 and number of dimensions of input")


def check_vectors(c, scale, zero_point):
    """A per-channel scale and zero point are vectors, in PyTorch's words."""
    for n, t, words in (("scale", scale, "scale should be a 1-D tensor"),
                        ("zero_point", zero_point, "zero point should be a 1-D tensor")):
        if t.ndim != 1:
            c.fail(f"{n} must be a vector (rank 1), got shape {list(t.shape)}", n, tf=words)


@dataclass(frozen=True)
class Variant:
    per_channel: bool = False
    mask: bool = False          # returns (output, mask)
    enabled: bool = False       # takes fake_quant_enabled (the tensor-qparams cachemask op)
    learnable: bool = False     # LSQ: a float zero point, rounded half to even and clamped first (on the host)


class AtenFamily(Family):
    """An aten family: per-channel ops along any axis (the AXIS layout), per-tensor ones flat; the structural
    attributes are the axis and those a family adds (``extra_structural``)."""
    extra_structural: frozenset = frozenset()

    def mismatched_dtype_words(self, spec, index, got, want):
        return None

    def channel_axis(self, spec, attrs, rank):
        return attrs["axis"] if spec.variant.per_channel else None

    def layout(self, spec, attrs):
        return AXIS if spec.variant.per_channel else FLAT

    def structural(self, spec):
        return (frozenset({"axis"}) | self.extra_structural) & set(spec.attr_map)


# -- arguments PyTorch hands back untouched (its early returns on an empty input) -------------------------


def given_attr(arrays: dict) -> str:
    """Arrays as given, exactly (dtype, shape, bytes), as a str attribute: what an op returns as it was given (the
    learnable backward's and the fused observer's early returns on an empty input: PyTorch's own tensors)."""
    import json
    return json.dumps({n: [str(a.dtype), list(a.shape), np.ascontiguousarray(a).tobytes().hex()]
                       for n, a in ((n, np.asarray(v)) for n, v in arrays.items())})


def given_arrays(text: str) -> dict:
    """given_attr's arrays back, bit for bit ({} for "")."""
    import json
    import ml_dtypes  # noqa: F401  (registers "bfloat16" with NumPy)
    if not text:
        return {}
    return {n: np.frombuffer(bytes.fromhex(h), np.dtype(dt)).reshape(shape).copy()
            for n, (dt, shape, h) in json.loads(text).items()}
