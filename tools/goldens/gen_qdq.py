"""tf-cpu case generators of the QuantizeAndDequantize family: V1..V4 forward and V4Grad.

Random cases around the quantisation grid (designed with the numpy model, so that many inputs sit exactly on
a rounding tie or switch point) and the hand-designed rows of edge_data.py. Both families draw from the
tf-cpu set's shared stream, in registry order, so the output is byte-identical from run to run.
"""
import numpy as np

from qdq_compiler.ops import OPS

from . import edge_data as edge
from .caselib import F32, F64, V1, V3, V4G, Family, auto_tags, dtname, mkcase, nxt, subnormals, tensor
from .fmt import f32hex
from .model import channel_view, qdq_compute_range, qdq_int_range

RANGE_KINDS = ["asym", "asym", "asym", "sym", "pow2", "unit", "pos", "neg", "eq", "zero_lo", "zero_hi", "tiny", "huge"]


def qdq_tie_points(g, T, scale, q):
    """Inputs x (type T) at the rounding boundary between q and q+1 after scaling, and either side."""
    with np.errstate(all="ignore"):
        if not np.isfinite(scale) or scale == 0:
            return []
        v = T(T(q) + T(0.5))
        x0 = T(float(v) / float(scale))
        if not np.isfinite(x0):
            return []
        hits = [c for c in (nxt(x0, T, k) for k in range(-6, 7)) if T(c * scale) == v]
        if not hits:
            return [x0]
        g.tie = True
        x = hits[len(hits) // 2]
        return [x, nxt(x, T, -1), nxt(x, T, 1)]


def qdq_channel_values(g, T, n, lo_raw, hi_raw, signed, bits, narrow, range_given, specials):
    """n values for one channel; without range_given the data min/max are exactly lo/hi."""
    r = g.rng
    qmin, qmax = qdq_int_range(signed, bits, narrow)
    lo, hi, scale, inv = qdq_compute_range(T, qmin, qmax, lo_raw, hi_raw)
    vals = [] if range_given else [lo_raw, hi_raw]
    qlo = qmin if signed else 0
    with np.errstate(all="ignore"):
        levels = set()  # integer levels to probe: near zero, near the ends, random
        for _ in range(max(2, n // 3)):
            k = r.random()
            levels.add(int(r.integers(-3, 3)) if k < 0.35 else int(qmax - r.integers(0, 3)) if k < 0.55 else
                       int(qlo + r.integers(0, 3)) if k < 0.7 else int(qlo + int(r.random() * (qmax - qlo))))
        e = 23 if T is F32 else 52
        if bits >= 25 and qmax > (1 << (e + 1)):  # odd integers >= 2^23 (2^52) where HALF_UP rounds up
            levels.add((1 << e) + 1 + 2 * int(r.integers(0, 8)))
        for q in sorted(levels):
            if len(vals) >= n:
                break
            k = r.random()
            vals += (qdq_tie_points(g, T, scale, q) if k < 0.55 else [T(T(q) * inv)] if k < 0.8 else
                     [T((float(q) + r.uniform(-0.5, 0.5)) * float(inv))])
        width = float(hi) - float(lo)
        while len(vals) < n:
            a, b = ((float(lo) - 0.15 * abs(width), float(hi) + 0.15 * abs(width)) if range_given else
                    (float(min(lo_raw, hi_raw)), float(max(lo_raw, hi_raw))))
            a, b = min(a, b), max(a, b)
            vals.append(T(r.uniform(a, b)) if np.isfinite(a) and np.isfinite(b) and b - a < 1e300 else T(0))
    vals = [T(v) for v in vals if np.isfinite(v) or not range_given]
    if not range_given:
        vals = [v for v in vals if lo_raw <= v <= hi_raw] or [lo_raw]
    vals = vals[:n]
    while len(vals) < n:
        vals.append(vals[int(r.integers(len(vals)))] if vals else T(0))
    protect = 0 if range_given else 2  # specials replace random positions, never the data min/max
    for sv in specials:
        if len(vals) > protect:
            vals[int(r.integers(protect, len(vals)))] = T(sv)
    arr = np.array(vals, T)
    return arr[r.permutation(len(arr))]


def gen_qdq_forward(g, op, count):
    """Random cases for V1..V4 forward: every (num_bits, signed) once, then random ones."""
    r = g.rng
    v1, v3 = op == V1, op == V3
    plan = [(bits, signed) for bits in range(1, 63) for signed in (True, False) if not (signed and bits > 61)]
    while len(plan) < count:
        plan.append((int(g.pick([1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 10, 12, 16, 16, 20, 24, 25, 30, 31, 32, 40, 53, 54,
                                 61])), bool(r.random() < 0.7)))
    cases = []
    for bits, signed in plan:
        g.tie = False
        T = F64 if r.random() < 0.3 else F32
        narrow = bool(r.random() < 0.35) and not v1
        rm = "HALF_UP" if (r.random() < 0.4 and not v1 and not v3) else "HALF_TO_EVEN"
        range_given = bool(r.random() < 0.55)
        rank = int(g.pick([0, 1, 1, 1, 2, 2, 3, 4, 5] if not v3 else [1, 1, 1, 2, 2, 3, 4, 5]))
        per_channel = (not v1) and rank >= 1 and r.random() < 0.35
        range_given = range_given and not (per_channel and not v3)  # V2/V4 reject a given per-channel range
        axis = int(r.integers(0, rank)) if per_channel else -1
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(400 if big else 40))
        tags = []
        outer, C, inner = channel_view(shape, axis) if per_channel else (1, 1, int(np.prod(shape)))
        data, mins, maxs = np.empty((outer, C, inner), T), np.empty(C, T), np.empty(C, T)
        for c in range(C):
            kind = g.pick(RANGE_KINDS)
            lo, hi = g.rand_range(T, kind)
            if not signed and range_given and r.random() < 0.6 and kind in ("asym", "sym"):
                lo = T(0) if r.random() < 0.5 else lo
            tags += (["const_data"] if kind == "eq" and not range_given else []) + \
                (["range_excludes_zero"] if kind in ("pos", "neg") else []) + (["min_eq_max"] if kind == "eq" else [])
            specials = subnormals(T, r, 1 + int(r.integers(2))) if r.random() < 0.25 else []
            specials += [T(-0.0)] if r.random() < 0.2 else []
            specials += [T(np.nan)] if range_given and r.random() < 0.2 else []
            specials += [T(np.inf), T(-np.inf)] if range_given and r.random() < 0.2 else []
            vals = qdq_channel_values(g, T, outer * inner, lo, hi, signed, bits, narrow, range_given, specials)
            if not range_given:  # the data min/max, not spoiled by specials
                fin = vals[np.isfinite(vals)]
                lo, hi = (np.min(fin), np.max(fin)) if fin.size else (T(0), T(0))
                zero = vals == 0
                if fin.size and hi == 0 and np.any(zero & np.signbit(vals)) and np.any(zero & ~np.signbit(vals)):
                    vals = np.where(zero, T(0), vals).astype(T)  # a zero data max of either sign: make it +0
            data[:, c, :] = vals.reshape(outer, inner)
            mins[c], maxs[c] = lo, hi
        x, dt = data.reshape(shape), dtname(T)
        attrs = {}
        if not (signed and r.random() < 0.3):
            attrs["signed_input"] = signed
        if not v3 and not (bits == 8 and r.random() < 0.5):
            attrs["num_bits"] = bits
        if range_given != OPS[op].attr_map["range_given"].default or r.random() < 0.6:
            attrs["range_given"] = range_given
        if v1:
            if range_given:  # V1's float attrs are float32
                with np.errstate(all="ignore"):
                    lo32, hi32 = F32(mins[0]), F32(maxs[0])
                if not (lo32 <= hi32) or not np.isfinite(lo32) or not np.isfinite(hi32):
                    lo32, hi32 = F32(-1), F32(1)
                attrs.update(input_min=f32hex(lo32), input_max=f32hex(hi32))
            elif r.random() < 0.3:
                attrs.update(input_min=f32hex(-3.5), input_max=f32hex(2.25))
            inputs = {"input": (dt, x)}
        else:
            if narrow or r.random() < 0.3:
                attrs["narrow_range"] = narrow
            if not v3 and (rm != "HALF_TO_EVEN" or r.random() < 0.3):
                attrs["round_mode"] = rm
            if axis != -1 or r.random() < 0.2:
                attrs["axis"] = axis
            if per_channel:
                mn, mx = (mins, maxs) if range_given else (np.zeros(C, T) - T(1), np.ones(C, T))
            elif range_given:
                mn, mx = (maxs[0], mins[0]) if mins[0] > maxs[0] else (mins[0], maxs[0])
            else:
                mn, mx = T(r.uniform(-2, 0)), T(r.uniform(0, 2))  # ignored by the kernel
            inputs = {"input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx), "num_bits": ("int32", bits)}
        tags += ["per_channel"] * per_channel + ["large"] * big + ["random"] + ["tie"] * g.tie
        cases.append(mkcase(op, attrs, inputs, tags, "random around the quantisation grid"))
    return cases


def qdq_edge_row(op, T, row):
    """A case from a QDQ_EDGE row of edge_data.py, or None where the op cannot express it."""
    if ("T" in row and row["T"] != dtname(T)) or ("ops" in row and op not in row["ops"]):
        return None
    rg, rm, narrow, axis = row.get("rg", True), row.get("rm"), row.get("narrow"), row.get("axis")
    x = np.zeros(row["shape"], T) if "shape" in row else tensor(row["x"], T)
    lo, hi = tensor(row.get("lo", 0), T), tensor(row.get("hi", 0), T)
    attrs = {"signed_input": row.get("signed", True)}
    if op == V1:
        if rm not in (None, "HALF_TO_EVEN") or narrow or axis not in (None, -1) or \
                (rg and (F32(lo) != lo or F32(hi) != hi)):
            return None  # V1: no such attrs; its range attrs are float32
        attrs.update(num_bits=row.get("bits", 8), range_given=rg)
        attrs.update(dict(input_min=f32hex(lo), input_max=f32hex(hi)) if rg else {})
    elif op == V3 and rm not in (None, "HALF_TO_EVEN"):
        return None
    else:
        attrs.update({} if op == V3 else {"num_bits": row.get("bits", 8)}, range_given=rg)
        opt = {"narrow_range": narrow, "round_mode": None if op == V3 else rm, "axis": axis}
        attrs.update({k: v for k, v in opt.items() if v is not None})
    dt = dtname(T)
    c = mkcase(op, attrs, {"input": (dt, x), "input_min": (dt, lo), "input_max": (dt, hi),
                           "num_bits": ("int32", row.get("bits", 8))}, row.get("tags", ()), row.get("note", ""))
    if row.get("deviation"):
        c["deviation"] = row["deviation"]
    if op == V3 and x.ndim == 0:  # V3 rejects rank-0 inputs (axis -1 < -rank)
        c["expect_error"] = True
        c["tags"].append("error")
    return c


def gen_qdq_edge(g, op):
    """Hand-designed edge cases for V1..V4 forward (edge_data.QDQ_EDGE) and random per-channel ones."""
    cases = []
    for T in (F32, F64):
        cases += [c for c in (qdq_edge_row(op, T, row) for row in edge.QDQ_EDGE) if c]
        for rank in range(1, 6) if op != V1 else ():  # per-channel on every axis of ranks 1..5
            shape = [3] if rank == 1 else [2, 3, 2, 2, 2][:rank]
            for ax in range(rank):
                C = shape[ax]
                x = (np.round(T(g.rng.uniform(-2, 2, size=shape)).astype(T) * 16) / 16).astype(T)
                rows = [dict(x=x, lo=[-1] * C, hi=[1] * C, rg=False, axis=ax, rm=rm, tags=["per_channel"],
                             note="per-channel, data range, rank %d" % rank) for rm in edge.RM]
                rows += [dict(ops=(V3,), x=x, lo=[-(1.0 + c) for c in range(C)], hi=[0.5 + c for c in range(C)],
                              axis=ax, tags=["per_channel"], note="V3 per-channel given range, rank %d" % rank)]
                cases += [c for c in (qdq_edge_row(op, T, row) for row in rows) if c]
        cases += [c for c in (qdq_edge_row(op, T, row) for row in edge.QDQ_EDGE_TAIL) if c]
    return cases


# ---------------------------------------------------------------------------- QuantizeAndDequantizeV4Grad

def gen_v4grad(g, count):
    """Edge rows of edge_data.V4GRAD_EDGE, per-channel masks on every axis, then random per-tensor masks."""
    r, cases = g.rng, []

    def add(T, gr, x, mn, mx, axis=None, tags=(), note=""):
        dt = dtname(T)
        cases.append(mkcase(V4G, {} if axis is None else {"axis": axis}, {
            "gradients": (dt, gr), "input": (dt, x), "input_min": (dt, mn), "input_max": (dt, mx)}, tags, note))

    for T in (F32, F64):
        for row in edge.V4GRAD_EDGE:
            gx = [np.zeros(row["shape"], T)] * 2 if "shape" in row else [tensor(row["g"], T), tensor(row["x"], T)]
            add(T, *gx, tensor(row["lo"], T), tensor(row["hi"], T), row.get("axis"), row["tags"], row["note"])
    for rank in range(1, 6):  # per-channel on every axis for ranks 1..5, random
        for ax in range(rank):
            for T in (F32, F64):
                shape = g.rand_shape(rank, maxel=48)
                mn = np.array([g.pick([-1.0, -0.5, 0.0, 0.25, -2.0, 1.0]) for _ in range(shape[ax])], T)
                mx = np.array([m + g.pick([0.0, 0.5, 1.0, 2.0, -0.5]) for m in mn], T)
                x = np.round(r.uniform(-2.5, 2.5, size=shape) * 4).astype(T) / T(4)
                add(T, r.integers(-8, 9, size=shape).astype(T), x, mn, mx, ax, ["per_channel"],
                    "per-channel mask, rank %d axis %d" % (rank, ax))
    while len(cases) < count:  # random per-tensor
        T = F64 if r.random() < 0.3 else F32
        rank = int(g.pick([0, 1, 1, 2, 3, 4, 5]))
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(300 if big else 48))
        lo, hi = g.rand_range(T, g.pick(RANGE_KINDS))
        if r.random() < 0.1:
            lo, hi = hi, lo
        cand = [lo, hi, nxt(lo, T, -1), nxt(lo, T, 1), nxt(hi, T, -1), nxt(hi, T, 1)]
        l_, h_ = min(float(lo), float(hi)), max(float(lo), float(hi))
        x = [cand[int(r.integers(6))] if r.random() < 0.4 else
             T(r.uniform(l_ - (h_ - l_) * 0.3 - 1e-3, h_ + (h_ - l_) * 0.3 + 1e-3)) for _ in range(int(np.prod(shape)))]
        gr = (r.integers(-16, 17, size=shape) * 2.0 ** r.integers(-3, 4, size=shape)).astype(T)
        tags = ["random"] + (["large"] if big else []) + (["min_gt_max"] if lo > hi else [])
        add(T, gr, np.array(x, T).reshape(shape), lo, hi, -1 if r.random() < 0.3 else None, tags, "random mask test")
    return cases


def forward(g, ops):
    """Every op's edge cases, then every op's random ones (count from its registry line), in registry order."""
    cases = []
    for op in ops:
        cases += gen_qdq_edge(g, op)
    for op, entry in ops.items():
        cases += gen_qdq_forward(g, op, entry.count)
    return cases


def v4grad(g, ops):
    """V4Grad: one op, its cases up to the registry's count."""
    return [c for op, entry in ops.items() for c in gen_v4grad(g, entry.count)]


FORWARD = Family(forward, auto_tags)
V4GRAD = Family(v4grad, auto_tags)
