"""What every case generator shares: the case record, the value notation of edge_data.py, the seeded
random source, auto tags and numbering.

A case is a dict {"op", "attrs", "inputs": {name: (dtype label, array)}, "tags", "note", ...}, inputs in the
op registry's order (qdq_compiler.ops, imported from this checkout: only numpy is needed besides TF).
"""
import re
from typing import Callable, NamedTuple, Optional

import numpy as np

from qdq_compiler.ops import OPS  # the op registry: names, inputs, attrs, outputs

from .fmt import enc_outputs, unhex

F32, F64 = np.float32, np.float64
# bfloat16 tensors are held as float32 arrays (exact) and cast by TF, so no case needs ml_dtypes
NP_DTYPES = {"float32": F32, "float64": F64, "int32": np.int32, "int64": np.int64, "float16": np.float16,
             "bfloat16": F32}
V1, V2, V3, V4, V4G = ("QuantizeAndDequantize", "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3",
                       "QuantizeAndDequantizeV4", "QuantizeAndDequantizeV4Grad")
ARGS, VARS, PC = "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel"
ARGSG, VARSG, PCG = ARGS + "Gradient", VARS + "Gradient", PC + "Gradient"


class Family(NamedTuple):
    """A case generator for some ops: ``generate(g, ops)`` gives the cases of the ops (op -> Entry, in
    registry order) in one call, error candidates marked ``expect_error``; ``tags(case)`` the tags a case is
    written with. ``seed``: its own random stream, or None for the set's shared one."""
    generate: Callable
    tags: Callable
    seed: Optional[int] = None
    fma_note: bool = False  # its files' host line says whether FMA is available (tf-xla FakeQuant)


class Entry(NamedTuple):
    """One registry line: the case-id prefix, the family that makes the op's cases, how many random ones."""
    prefix: str
    family: Family
    count: int = 0


def attr(case, name, fallback=None):
    """An attr of a case: as passed, else the registry's default (float attrs, float32 hex here, as numbers)."""
    a = OPS[case["op"]].attr_map.get(name)
    v = case["attrs"].get(name, a.default if a else fallback)
    if isinstance(v, str) and a and a.kind is float:
        return float(F32(unhex(v)))
    return v


def attr_values(case):
    """Every passed attr as TF takes it."""
    return {k: attr(case, k) for k in case["attrs"]}


def mkcase(op, attrs, inputs, tags=(), note="", **extra):
    """inputs: name -> (dtype label, array), put in the op's input order."""
    spec = OPS[op]
    c = {"op": op, "attrs": dict(attrs), "note": note, "tags": list(tags),
         "inputs": {n: (inputs[n][0], np.asarray(inputs[n][1], NP_DTYPES[inputs[n][0]]))
                    for n in spec.input_names if n in inputs}}
    if spec.sum_outputs:
        c["sum_outputs"] = list(spec.sum_outputs)
    c.update(extra)
    return c


def dtname(T):
    return "float64" if T is F64 else "float32"


def nxt(x, T, n=1):
    """x moved n floats of type T up (n > 0) or down."""
    x = T(x)
    for _ in range(abs(n)):
        x = np.nextafter(x, T(np.inf) if n > 0 else T(-np.inf))
    return T(x)


def scalar(v, T):
    """A value of edge_data.py as a T: a number, or "nan", "-sm", "1.5tiny", "1<", "-tiny>", ..."""
    if not isinstance(v, str):
        return T(v)
    step = {"<": -1, ">": 1}.get(v[-1], 0)
    m = re.fullmatch(r"(-?)([\d.]*)(nan|inf|sm|tiny)", v[:-1] if step else v)
    if m:
        base = {"nan": np.nan, "inf": np.inf, "sm": float(np.finfo(T).smallest_subnormal),
                "tiny": float(np.finfo(T).tiny)}[m.group(3)]
        x = T((-1 if m.group(1) else 1) * float(m.group(2) or 1) * base)
    else:
        x = T(float(v[:-1] if step else v))
    return nxt(x, T, step) if step else x


def tensor(v, T):
    """A tensor of edge_data.py (nested lists of values) as an array of T."""
    if isinstance(v, np.ndarray):
        return v.astype(T)
    return np.array([tensor(e, T) for e in v], T) if isinstance(v, list) else np.asarray(scalar(v, T), T)


x23 = np.arange(6, dtype=F32).reshape(2, 3) / F32(4) - F32(0.5)
NAMED = {"x23": x23, "x23T": x23.T.copy(), "x5": np.arange(24, dtype=F32).reshape(1, 2, 2, 2, 3) / F32(8) - F32(1.5)}


def resolve_named(v):
    """A named tensor of edge_data.py ("x23", "zeros:2,0", ...) or None."""
    if isinstance(v, str) and v in NAMED:
        return NAMED[v]
    if isinstance(v, str) and v.startswith(("zeros:", "ones:")):
        return (np.zeros if v[0] == "z" else np.ones)([int(d) for d in v.split(":")[1].split(",")])
    return None


def subnormals(T, rng, k):
    tiny, smallest = np.finfo(T).tiny, np.finfo(T).smallest_subnormal
    vals = [smallest, T(tiny / 2), T(tiny * T(0.75)), nxt(tiny, T, -1), T(smallest * 3)]
    return [T(T(vals[int(rng.integers(len(vals)))]) * (T(1) if rng.random() < 0.5 else T(-1))) for _ in range(k)]


class Gen:
    """The seeded random source of a family (numpy PCG64): fixed seed, so the output is byte-identical."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.tie = False  # set when a generator placed an input exactly on a rounding tie/switch

    def mag(self, T, lo=-6, hi=6):
        return T(2.0 ** self.rng.uniform(lo, hi))

    def rand_shape(self, rank, maxel=48):
        while True:
            s = [int(self.rng.integers(1, 5)) for _ in range(rank)]
            if int(np.prod(s)) <= maxel:
                return s

    def rand_range(self, T, kind):
        r = self.rng
        if kind in ("asym", "sym"):
            a = self.mag(T)
            return (T(-a * T(r.uniform(0.05, 1))), T(a * T(r.uniform(0.05, 1)))) if kind == "asym" else (T(-a), T(a))
        if kind == "pow2":
            return T(-(2.0 ** int(r.integers(-4, 5)))), T(2.0 ** int(r.integers(-4, 5)))
        if kind in ("pos", "neg"):
            a = self.mag(T)
            b = T(a * T(r.uniform(1.05, 4)))
            return (a, b) if kind == "pos" else (T(-b), T(-a))
        if kind == "eq":
            a = self.mag(T) * (T(1) if r.random() < 0.6 else T(-1))
            return T(a), T(a)
        if kind == "zero_lo":
            return T(0), self.mag(T)
        if kind == "zero_hi":
            return T(-self.mag(T)), T(0)
        if kind == "tiny":
            e = -60 if T is F32 else -500
            a = T(2.0 ** r.uniform(e - 20, e))
            return T(-a * T(r.uniform(0.2, 1))), T(a)
        if kind == "huge":
            e = 60 if T is F32 else 600
            a = T(2.0 ** r.uniform(e, e + 20))
            return T(-a), T(a * T(r.uniform(0.2, 1)))
        assert kind == "unit", kind
        return T(-1), T(1)

    def pick(self, items, p=None):
        return items[int(self.rng.choice(len(items), p=p))]


# ------------------------------------------------------------------------------------------------ tags

def is_sub(a, tiny=None):
    """Nonzero values below the smallest normal (of the array's own type unless ``tiny`` is given)."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    return (a != 0) & (np.abs(a) < (np.finfo(a.dtype).tiny if tiny is None else tiny))


def value_tags(arrays, tiny=None, empty=True):
    """The value tags the inputs earn, in the files' order: nan, inf, neg_zero, subnormal (, empty)."""
    fl = [a for a in arrays if a.dtype.kind == "f"]
    with np.errstate(invalid="ignore"):
        checks = [("nan", any(np.isnan(v).any() for v in fl)), ("inf", any(np.isinf(v).any() for v in fl)),
                  ("neg_zero", any(((v == 0) & np.signbit(v)).any() for v in fl)),
                  ("subnormal", any(is_sub(v, tiny).any() for v in fl if tiny is not None or v.dtype in (F32, F64)))]
    if empty:
        checks.append(("empty", any(v.size == 0 for v in arrays)))
    return [t for t, ok in checks if ok]


def auto_tags(case):
    """tf-cpu: the case's tags, then what its values and attrs show."""
    tags = list(case["tags"])
    arrs = [np.asarray(a) for _, a in case["inputs"].values()]
    a = case["attrs"]
    checks = [("narrow", a.get("narrow_range")), ("unsigned", a.get("signed_input") is False),
              ("half_up", a.get("round_mode") == "HALF_UP"),
              ("per_channel", isinstance(a.get("axis"), int) and a["axis"] >= 0)]
    tags += value_tags(arrs) + [t for t, ok in checks if ok]
    if case["op"].startswith("QuantizeAndDequantize") and case["op"] != V4G:
        tags.append("range_given" if attr(case, "range_given") else "data_range")
    main = case["inputs"].get("input") or case["inputs"].get("inputs")
    if main is not None:
        tags += (["float64"] if main[0] == "float64" else []) + ["rank%d" % np.asarray(main[1]).ndim]
    return list(dict.fromkeys(tags))


def expectation(case):
    """What a run case's record expects: the reference's outputs, under the op's output names, or its error."""
    return enc_outputs(OPS[case["op"]].outputs, case["result"]) if "result" in case else case["expect"]


def as_generated(case):
    """The tags of a family that adds none when writing (tf-xla QDQ, half)."""
    return list(case["tags"])


def number(cases, entries):
    """Number each op's cases in this order, "<prefix>-nnnn" (first occurrence; spec vectors keep V.. ids)."""
    counters = dict.fromkeys(entries, 0)
    for c in {id(c): c for c in cases}.values():
        if not c.get("id", "").startswith("V"):
            counters[c["op"]] += 1
            c["id"] = "%s-%04d" % (entries[c["op"]].prefix, counters[c["op"]])
