"""tf-cpu case generators of the FakeQuant family: Args, Vars, PerChannel and their gradients (float32).

Random cases around the nudged grid (inputs at the level switch points the numpy model finds), the
hand-designed rows of edge_edge.FQ_EDGE, and the same inputs through Args, Vars and PerChannel (Vars
divides by the scale where the others multiply by its inverse). One family, drawing from the tf-cpu set's
shared stream in registry order.
"""
import numpy as np

from . import edge_data as edge
from .caselib import ARGS, F32, PC, VARS, Family, auto_tags, mkcase, nxt, scalar, subnormals, tensor
from .fmt import f32hex
from .model import fq_elem, fq_nudge

PAIRS = 30  # Args/Vars/PerChannel triples with the same inputs
FQ_RANGE_KINDS = ["asym", "asym", "asym", "sym", "pow2", "unit", "pos", "neg", "zero_lo", "zero_hi", "tiny", "huge",
                  "default"]


def fq_range(g, kind):
    if kind == "default":
        return F32(-6), F32(6)
    if kind in ("tiny", "huge"):
        e = -30 if kind == "tiny" else 30
        a = F32(2.0 ** g.rng.uniform(e - 10, e + 10 if kind == "huge" else e))
        return F32(-a * F32(g.rng.uniform(0.1, 1))), F32(a)
    return g.rand_range(F32, kind)


def fq_boundary_points(g, nmin, nmax, scale, inv, k, divide):
    """float32 inputs where the quantised level switches from k-1 to k (found with the model)."""
    with np.errstate(all="ignore"):
        if not (np.isfinite(scale) and scale > 0 and np.isfinite(inv)):
            return []
        x0 = F32(float(nmin) + (k - 0.5) * float(scale))
        if not np.isfinite(x0):
            return []

        def lev(x):
            return float(fq_elem(np.array([x], F32), nmin, nmax, scale, inv, divide)[0])

        if lev(x0) != lev(nxt(x0, F32, -1)):
            g.tie = True
            return [nxt(x0, F32, -1), x0]
        up = dn = x0
        for _ in range(64):  # walk both ways to the nearest switch
            nu, nd = nxt(up, F32, 1), nxt(dn, F32, -1)
            if lev(nu) != lev(up):
                g.tie = True
                return [up, nu]
            if lev(nd) != lev(dn):
                g.tie = True
                return [nd, dn]
            up, dn = nu, nd
        return [x0]


def fq_values(g, n, mn, mx, bits, narrow, divide, specials, grad=False):
    r = g.rng
    nmin, nmax, scale, inv = fq_nudge(mn, mx, bits, narrow)
    span = (1 << bits) - 1 - (1 if narrow else 0)
    vals = [nmin, nmax, nxt(nmin, F32, -1), nxt(nmax, F32, 1), nxt(nmin, F32, 1), nxt(nmax, F32, -1)] if grad else []
    with np.errstate(all="ignore"):
        while len(vals) < n:
            k = r.random()
            if k < 0.25:
                lvl = (int(r.integers(1, span + 1)) if r.random() < 0.6 else
                       int(g.pick([1, 2, span, span - 1, max(1, span // 2)])))
                vals += fq_boundary_points(g, nmin, nmax, scale, inv, lvl, divide)
            elif k < 0.45:
                vals.append(F32(float(nmin) + int(r.integers(0, span + 1)) * float(scale)))
            elif k < 0.55:
                vals += [nmin, nmax, nxt(nmin, F32, -1), nxt(nmax, F32, 1)][int(r.integers(4)):][:1]
            else:
                w = float(nmax) - float(nmin)
                w = w if np.isfinite(w) and w > 0 else abs(float(mx) - float(mn)) + 1.0
                vals.append(F32(r.uniform(float(nmin) - 0.1 * w, float(nmax) + 0.1 * w)))
    vals = [F32(v) if np.isfinite(v) else F32(0) for v in vals][:n]
    for sv in specials:
        if vals:
            vals[int(r.integers(len(vals)))] = F32(sv)
    return np.array(vals, F32)[r.permutation(len(vals))]


def fq_specials(r):
    sp = [F32(np.nan)] if r.random() < 0.2 else []
    sp += [F32(np.inf), F32(-np.inf)] if r.random() < 0.2 else []
    sp += [F32(-0.0)] if r.random() < 0.2 else []
    return sp + (subnormals(F32, r, 1) if r.random() < 0.2 else [])


def fq_inputs(x, mn=None, mx=None, gr=None):
    """The inputs of a FakeQuant case (mkcase keeps those the op has)."""
    return {k: ("float32", v) for k, v in (("inputs", x), ("min", mn), ("max", mx), ("gradients", gr)) if v is not None}


def int_grads(g, shape):
    return (g.rng.integers(-8, 9, size=shape) * 2.0 ** g.rng.integers(-2, 3, size=shape)).astype(F32)


def gen_fq(g, op, count):
    """Random cases around the nudged grid: every num_bits three times, then random ones."""
    r, cases = g.rng, []
    is_args, is_pc, is_grad = op.startswith(ARGS), op.startswith(PC), op.endswith("Gradient")
    bits_plan = list(range(2, 17)) * 3
    while len(cases) < count:
        i = len(cases)
        bits = bits_plan[i] if i < len(bits_plan) else int(g.pick([2, 3, 4, 5, 7, 8, 8, 8, 8, 10, 12, 14, 16, 16]))
        g.tie = False
        narrow = bool(r.random() < 0.35)
        rank = int(g.pick([1, 2, 2, 3, 4] + ([] if is_grad else [5]) if is_pc else [0, 1, 1, 1, 2, 2, 3, 4, 5]))
        big = r.random() < 0.03
        shape = g.rand_shape(rank, maxel=(300 if big else 40))
        tags = ["random"] + (["large"] if big else [])
        specials = fq_specials(r)
        attrs = {}
        if bits != 8 or r.random() < 0.5:
            attrs["num_bits"] = bits
        if narrow or r.random() < 0.3:
            attrs["narrow_range"] = narrow
        ranges = []
        for c in range(shape[-1] if is_pc else 1):
            kind = g.pick(FQ_RANGE_KINDS + ["zero", "eq", "gt"]) if is_pc else g.pick(FQ_RANGE_KINDS)
            if not is_pc and not is_args and r.random() < 0.12:
                kind = g.pick(["zero", "eq", "gt", "negzero"])
            if kind in ("zero", "negzero"):
                mn, mx = (F32(0), F32(0)) if kind == "zero" else (F32(-0.0), F32(g.pick([0.0, -0.0])))
            elif kind == "eq":
                mn = mx = g.mag(F32) * F32(g.pick([1, -1]))
            elif kind == "gt":
                mx, mn = fq_range(g, "asym")
            else:
                mn, mx = fq_range(g, kind)
            tags += ["min_eq_max"] * (kind in ("zero", "negzero", "eq")) + ["min_gt_max"] * (kind == "gt") + \
                ["range_excludes_zero"] * (kind in ("pos", "neg") and not is_pc)
            n = int(np.prod(shape)) // (shape[-1] if is_pc else 1)
            col = (fq_values(g, n, mn, mx, bits, narrow, op == VARS, specials if c == 0 else [], grad=is_grad)
                   if mn < mx else np.array([F32(r.uniform(-3, 3)) for _ in range(n)], F32))
            ranges.append((mn, mx, col, kind))
        if is_pc:
            x = np.stack([col for _, _, col, _ in ranges], axis=-1).reshape(shape)
            mins, maxs = np.array([m for m, _, _, _ in ranges], F32), np.array([m for _, m, _, _ in ranges], F32)
            inputs = fq_inputs(x, mins, maxs)
            tags.append("per_channel")
        else:
            (mn, mx, col, kind), = ranges
            x = col.reshape(shape)
            inputs = fq_inputs(x, mn, mx)
            if is_args and not (kind == "default" and r.random() < 0.5):  # else rely on the default min/max
                attrs.update(min=f32hex(mn), max=f32hex(mx))
        if is_grad:
            inputs["gradients"] = ("float32", int_grads(g, shape))
        cases.append(mkcase(op, attrs, inputs, tags + (["tie"] if g.tie else []), "random around the nudged grid"))
    return cases


def fq_edge_case(op, row):
    """A case from an FQ_EDGE row of edge_data.py, or None where the op cannot express it."""
    is_args, is_pc = op.startswith(ARGS), op.startswith(PC)
    mn, mx = scalar(row["lo"], F32), scalar(row["hi"], F32)
    if isinstance(row.get("x"), str):  # "grid": 15 points from lo - 20% to hi + 20% of the range, in float32
        x = np.array([mn + (mx - mn) * F32(k / 10) for k in range(-2, 13)], F32)
    else:
        x = np.zeros(row["shape"], F32) if "shape" in row else tensor(row["x"], F32)
    if (row.get("grad_only") and not op.endswith("Gradient")) or (is_pc and x.ndim == 0) or (is_args and not mn < mx):
        return None
    attrs = {k: row[r] for k, r in (("num_bits", "bits"), ("narrow_range", "narrow")) if r in row}
    attrs.update(dict(min=f32hex(mn), max=f32hex(mx)) if is_args else {})
    if is_pc:  # the range on every channel
        mn, mx = np.full(x.shape[-1], mn, F32), np.full(x.shape[-1], mx, F32)
    gr = tensor(row["g"], F32) if "g" in row else (2.0 ** (np.arange(x.size) % 12)).astype(F32)
    return mkcase(op, attrs, fq_inputs(x, mn, mx, gr.reshape(x.shape)), row["tags"], row["note"])


def gen_fq_edge(g, op):
    """Hand-designed edge cases for the FakeQuant ops (edge_edge.FQ_EDGE), then random ones of every rank."""
    is_pc, is_grad = op.startswith(PC), op.endswith("Gradient")
    cases = [c for c in (fq_edge_case(op, row) for row in edge.FQ_EDGE) if c]
    for rank in range(1, 5 if is_pc and is_grad else 6):
        x = np.round(g.rng.uniform(-1.5, 1.5, size=[2, 3, 1, 2, 2][:rank]) * 32).astype(F32) / F32(32)
        cases.append(fq_edge_case(op, dict(x=x, lo=-1, hi=1, bits=8, tags=["rank%d" % rank], note="rank %d" % rank)))
    if is_pc:  # a different range per channel, degenerate ones included
        mins, maxs = np.array([-1, 0, -0.5, 1, 0.5, -2, -0.0], F32), np.array([1, 0, 0.5, 4, 0.5, -3, 0.0], F32)
        for rank in range(1, 5 if is_grad else 6):
            shape = [2, 1, 2, 2][:rank - 1] + [7]
            x = np.round(g.rng.uniform(-4, 4, size=shape) * 8).astype(F32) / F32(8)
            x.reshape(-1, 7)[0, :] = [np.nan, -np.inf, 0.3, np.inf, -0.0, 1.0, np.finfo(F32).smallest_subnormal]
            cases.append(mkcase(op, {"num_bits": 5}, fq_inputs(x, mins, maxs, int_grads(g, shape) if is_grad else None),
                                ["per_channel", "min_eq_max", "min_gt_max", "nan", "inf"],
                                "degenerate channels rank %d" % rank))
    return cases


def gen_fq_pairs(g, count):
    """The same inputs through Args, Vars and PerChannel (exposes Vars dividing where the others multiply)."""
    r, out = g.rng, {ARGS: [], VARS: [], PC: []}
    for _ in range(count):
        bits = int(g.pick([8, 12, 14, 16, 16]))
        mn, mx = F32(-r.uniform(0.05, 2)), F32(r.uniform(0.05, 2))
        nmin, nmax, scale, inv = fq_nudge(mn, mx, bits, False)
        xs = []
        for _ in range(4000):  # look for inputs where Vars and Args differ
            x = F32(r.uniform(float(nmin), float(nmax)))
            if fq_elem(np.array([x]), nmin, nmax, scale, inv, False)[0] != \
                    fq_elem(np.array([x]), nmin, nmax, scale, inv, True)[0]:
                xs.append(x)
                if len(xs) >= 6:
                    break
        while len(xs) < 8:
            xs.append(F32(r.uniform(float(nmin), float(nmax))))
        x, tags = np.array(xs, F32), ["vars_vs_args"]
        out[ARGS].append(mkcase(ARGS, {"min": f32hex(mn), "max": f32hex(mx), "num_bits": bits}, fq_inputs(x),
                                tags, "paired with Vars/PerChannel: multiply by inv"))
        out[VARS].append(mkcase(VARS, {"num_bits": bits}, fq_inputs(x, mn, mx), tags,
                                "paired with Args/PerChannel: Vars divides by scale"))
        out[PC].append(mkcase(PC, {"num_bits": bits}, fq_inputs(x.reshape(-1, 1), [mn], [mx]), tags + ["per_channel"],
                              "paired with Args/Vars: multiply by inv"))
    return out[ARGS] + out[VARS] + out[PC]


def fake_quant(g, ops):
    """Per op in registry order: its edge cases, then its random ones (count from its registry line); then
    the Args/Vars/PerChannel triples where all three are registered."""
    cases = []
    for op, entry in ops.items():
        cases += gen_fq_edge(g, op) + gen_fq(g, op, entry.count)
    if {ARGS, VARS, PC} <= set(ops):
        cases += gen_fq_pairs(g, PAIRS)
    return cases


FAKE_QUANT = Family(fake_quant, auto_tags)
