"""tf-xla case generator of QuantizeAndDequantize V2/V3/V4 in float16, bfloat16, float32 and float64.

For every op and dtype: a random sample of (round mode, given/data range, signed, narrow_range, num_bits 1,
2, 4, 8 and the largest the type holds, per-tensor or axis 0 / the last axis), inputs on the grid's ties,
one ulp either side, subnormals, +-0, NaN and +-inf; an empty tensor and one of 4096 elements. Its own
seed, so the FakeQuant family beside it cannot shift its stream.
"""
import itertools

import ml_dtypes
import numpy as np

from .caselib import Family, as_generated, mkcase

SEED = 20261123
DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}
BIG_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 30}


def values(rng, T, n, lo, hi, bits):
    """n inputs around the grid of [lo, hi] (ties and their neighbours), with the specials sprinkled in."""
    step = (hi - lo) / max(2 ** min(bits, 12) - 1, 1)
    k = rng.integers(-2 ** min(bits, 12), 2 ** min(bits, 12), n)
    x = (k * step + rng.choice([0.0, 0.5, 0.25], n) * step).astype(T)
    nudge = rng.integers(-1, 2, n)
    up = np.nextafter(x.astype(np.float32), np.float32(np.inf)).astype(T) if T != np.float64 else np.nextafter(x, np.inf)
    down = np.nextafter(x.astype(np.float32), np.float32(-np.inf)).astype(T) if T != np.float64 else np.nextafter(x, -np.inf)
    x = np.where(nudge > 0, up, np.where(nudge < 0, down, x)).astype(T)
    tiny = float(ml_dtypes.finfo(T).smallest_subnormal)
    specials = np.array([0.0, -0.0, tiny, -tiny, np.nan, np.inf, -np.inf, 0.5 * step, -1.5 * step, hi * 2, lo * 2], T)
    if n >= len(specials) * 2:
        idx = rng.choice(n, len(specials), replace=False)
        x[idx] = specials
    return x


def _case(op, dname, attrs, inputs, bits, tags):
    """The case; V3 takes num_bits as an int32 tensor, V2/V4 as an attr (with the round mode)."""
    ins = {n: (dname, a) for n, a in inputs.items()}
    attrs = dict(attrs)
    mode = attrs.pop("round_mode")
    if op.endswith("V3"):
        ins["num_bits"] = ("int32", np.asarray(bits, np.int32))
    else:
        attrs.update(num_bits=bits, round_mode=mode)
    return mkcase(op, attrs, ins, tags, "")


def generate(g, ops):
    """Per op (registry order) and dtype: the sampled structure, then an empty and a large tensor."""
    rng, out = g.rng, []
    for op, (dname, T) in itertools.product(ops, DTYPES.items()):
        modes = ("HALF_TO_EVEN",) if op.endswith("V3") else ("HALF_TO_EVEN", "HALF_UP")
        for mode, rg, signed, narrow, bits, ax in itertools.product(
                modes, (True, False), (True, False), (False, True), (1, 2, 4, 8, BIG_BITS[dname]), (-1, 0, 2)):
            if narrow and not signed or (bits == 1 and not signed):
                continue
            if rng.random() < 0.45:  # a sample of the product: the structure is covered either way
                continue
            shape = (3, 4, 5) if ax >= 0 else (int(rng.choice([7, 24, 60])),)
            lo = -float(rng.random() * 3 + 0.05) if rng.random() < 0.8 else float(rng.random())
            hi = float(rng.random() * 3 + 0.05)
            x = values(rng, T, int(np.prod(shape)), lo, hi, bits).reshape(shape)
            C = shape[ax] if ax >= 0 else None
            mn = (np.full(C, lo) * np.linspace(0.5, 1.5, C)).astype(T) if C else np.asarray(lo, T)
            mx = (np.full(C, hi) * np.linspace(1.5, 0.5, C)).astype(T) if C else np.asarray(hi, T)
            attrs = {"signed_input": signed, "range_given": rg, "narrow_range": narrow, "axis": ax, "round_mode": mode}
            out.append(_case(op, dname, attrs, {"input": x, "input_min": mn, "input_max": mx}, bits, ["random"]))
        for shape, tag in (((0,), "empty"), ((4096,), "large")):
            x = values(rng, T, shape[0], -1.0, 1.0, 8).reshape(shape) if shape[0] else np.zeros(shape, T)
            attrs = {"range_given": tag == "empty", "axis": -1,
                     "round_mode": "HALF_UP" if tag == "large" else "HALF_TO_EVEN"}
            inputs = {"input": x, "input_min": np.asarray(-1.0, T), "input_max": np.asarray(1.0, T)}
            out.append(_case(op, dname, attrs, inputs, 8, [tag]))
    return out


FAMILY = Family(generate, as_generated, seed=SEED)
