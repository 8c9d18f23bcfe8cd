"""tf-xla case generator of the FakeQuant family: Args, Vars, PerChannel and their gradients (float32).

Inputs are aimed with a small model of XLA's nudge (not TF's kernels': XLA folds Args' range at compile
time and rounds the zero point differently), at the ties of the grid and one ulp either side. Gradients
are small integers (or NaN/inf/zero/subnormal), so the min/max sums are exact in any order of addition.
Its own seed, so the QuantizeAndDequantize family beside it cannot shift its stream.
"""
import math

import numpy as np

from .caselib import ARGS, F32, PC, VARS, VARSG, Family, mkcase, nxt, value_tags
from .fmt import f32hex
from .model import flush

SEED = 20260214


# ------------------------------------------- a small model of XLA's nudge (to place inputs on the grid)

def _flush32(a):
    return flush(np.asarray(a, F32))


def nudge(op, mn, mx, bits, narrow):
    """(nudged_min, nudged_max, scale, inv) roughly as XLA computes them: enough to aim at ties."""
    qmin, qmax = (1 if narrow else 0), (1 << bits) - 1
    qd = F32(qmax - qmin)
    with np.errstate(all="ignore"):
        mn, mx = _flush32(F32(mn)), _flush32(F32(mx))
        diff = _flush32(mx - mn)
        if op.startswith(ARGS):
            scale = _flush32(diff / qd)
            inv = _flush32(qd / diff)
        else:
            scale = _flush32(diff * F32(F32(1) / qd))
            inv = _flush32(F32(1) / scale)
        zpf = _flush32(F32(qmin) - _flush32(mn / scale))
        if not np.isfinite(zpf):
            return F32(np.nan), F32(np.nan), scale, inv
        zp = F32(min(max(round(float(zpf)), qmin), qmax))
        return _flush32(F32(F32(qmin) - zp) * scale), _flush32(F32(F32(qmax) - zp) * scale), scale, inv


def tie_values(op, nmin, scale, inv, levels):
    """Inputs x whose XLA quantisation s*inv + 0.5 (s = x - nudged_min) is exactly an integer, and the
    float32 neighbours of x either side; (values, any_exact_tie)."""
    out, exact = [], False
    if not (np.isfinite(nmin) and np.isfinite(scale) and np.isfinite(inv) and scale > 0):
        return out, exact
    with np.errstate(all="ignore"):
        for k in levels:
            x0 = F32(float(nmin) + (k + 0.5) * float(scale))
            if not np.isfinite(x0):
                continue
            hit = None
            for d in range(-8, 9):
                x = nxt(x0, F32, d)
                s = F32(x - nmin)
                t = float(s) * float(inv) + 0.5   # exact in float64 (24 + 24 bits)
                if t == math.floor(t):
                    hit = x
                    break
            x = hit if hit is not None else x0
            exact |= hit is not None
            out += [x, nxt(x, F32, -1), nxt(x, F32, 1)]
    return out, exact


def grid_inputs(gen, op, mn, mx, bits, narrow, n_levels=6, n_uniform=8, extra=()):
    """Ties (+-1 ulp), grid points, the nudged ends and their neighbours, uniform values."""
    r = gen.rng
    nmin, nmax, scale, inv = nudge(op, mn, mx, bits, narrow)
    qmax = (1 << bits) - 1
    vals, tie = [], False
    if np.isfinite(scale) and scale > 0 and np.isfinite(nmin):
        levels = sorted({0, qmax - 1, int((0 - float(nmin)) / float(scale))} |
                        {int(v) for v in r.integers(0, qmax, n_levels)})
        tv, tie = tie_values(op, nmin, scale, inv, levels)
        vals += tv
        with np.errstate(all="ignore"):
            vals += [F32(float(nmin) + k * float(scale)) for k in levels[:3]]
        for e in (nmin, nmax):
            if np.isfinite(e):
                vals += [e, nxt(e, F32, -1), nxt(e, F32, 1)]
        lo, hi = float(nmin), float(nmax)
        w = hi - lo
        if np.isfinite(w) and w > 0:
            vals += [F32(v) for v in r.uniform(lo - 0.2 * w, hi + 0.2 * w, n_uniform)]
    else:
        vals += [F32(v) for v in r.standard_normal(n_uniform)]
    vals += [F32(v) for v in extra]
    vals += [F32(0), F32(-0.0), F32(mn), F32(mx)]
    x = np.array(vals, F32)
    return x[r.permutation(x.size)], tie


def grads(gen, shape, specials=()):
    """Small integer gradients (exact sums in any order), with optional special values."""
    g = gen.rng.integers(-8, 9, size=shape).astype(F32)
    g[g == 0] = F32(1)
    flat = g.reshape(-1)
    for i, v in enumerate(specials):
        if flat.size:
            flat[int(gen.rng.integers(flat.size))] = F32(v)
    return flat.reshape(shape)


SM, TINY = float(np.finfo(F32).smallest_subnormal), float(np.finfo(F32).tiny)
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, SM, -SM, 2.0 ** -130, -(2.0 ** -130), TINY - SM, -(TINY - SM),
            TINY, -TINY, 3.4028234663852886e38, -3.4028234663852886e38, 0.5, -0.5, 1.0, -1.0, 1e-20, -1e-20]
G_SPECIALS = [np.nan, np.inf, -np.inf, -0.0, SM, -SM, 2.0 ** -130]

RANGES = [(-1, 1, "unit range"), (-0.7, 2.3, "asymmetric"), (0, 255, "[0,255], scale 1"), (-6, 6, "default range"),
          (0.5, 3, "all positive (zero point clamps to quant_min)"),
          (-3, -0.2, "all negative (zero point clamps to quant_max)"),
          (-126.5, 128.5, "zero point 126.5 exactly: half-to-even (Args) vs half-away (Vars, ArgsGradient)"),
          (-127.5, 127.5, "zero point 127.5 exactly"), (-0.5, 0.5, "small symmetric"),
          (-1e-30, 2e-30, "tiny range"), (-(2.0 ** -120), 2.0 ** -120, "range whose scale is subnormal (FTZ)"),
          (-1e37, 3e37, "huge range"), (-65535, 0, "[-65535, 0]")]
BITS = [(8, False), (8, True), (2, False), (16, False), (4, True), (16, True)]
DEGENERATE = [(0, 0, "min == max == 0", "min_eq_max"), (-0.0, 0, "min -0, max +0", "min_eq_max"),
              (0, -0.0, "min +0, max -0", "min_eq_max"), (1, 1, "min == max > 0", "min_eq_max"),
              (-2, -2, "min == max < 0", "min_eq_max"), (1, -1, "min > max", "min_gt_max"),
              (np.nan, 1, "NaN min", "nan"), (-1, np.nan, "NaN max", "nan"), (-np.inf, 1, "-inf min", "inf"),
              (-1, np.inf, "inf max", "inf"), (-np.inf, np.inf, "infinite range", "inf"),
              (SM, SM, "min == max subnormal (DAZ: 0, 0)", "subnormal"),
              (-SM, SM, "subnormal range (DAZ: -0, +0)", "subnormal"),
              (0, 2.0 ** -130, "max subnormal (DAZ: 0, 0)", "subnormal"),
              (-3e38, 3e38, "max - min overflows to inf", "inf")]


def fq_attrs(op, mn, mx, bits, narrow, explicit_bits=True):
    a = {}
    if op.startswith(ARGS):
        a["min"], a["max"] = f32hex(mn), f32hex(mx)
    if explicit_bits:
        a["num_bits"] = bits
    if narrow:
        a["narrow_range"] = True
    return a


def fwd_or_grad_inputs(gen, op, x, mn=None, mx=None, g_specials=()):
    inputs = {"inputs": x}
    if op.endswith("Gradient"):
        inputs["gradients"] = grads(gen, x.shape, g_specials)
    if not op.startswith(ARGS):
        inputs["min"], inputs["max"] = np.asarray(mn, F32), np.asarray(mx, F32)
    return inputs


def per_channel_minmax(C, base, gen, mix=False):
    mn, mx = np.full(C, base[0], F32), np.full(C, base[1], F32)
    if mix:
        pool = [r[:2] for r in RANGES] + [(0, 0), (1, -1), (2, 2)]
        for c in range(1, C):
            lo, hi = pool[int(gen.rng.integers(len(pool)))]
            mn[c], mx[c] = F32(lo), F32(hi)
    return mn, mx


def generate(gen, ops):
    """Per op (registry order): the grid, special inputs, gradient specials, degenerate ranges, empty and
    rank-0 tensors, per-channel layouts, larger random tensors; then what XLA refuses (``expect_error``)."""
    cases, errors = [], []
    for op in ops:
        pc, grad, args = op.startswith(PC), op.endswith("Gradient"), op.startswith(ARGS)
        # 1. the grid: ties, one ulp either side, grid points, nudged ends, uniform values
        combos = []
        for i, (lo, hi, note) in enumerate(RANGES):
            for bits, narrow in BITS:
                if (lo, hi) in ((-1, 1), (-0.7, 2.3), (-6, 6)) or (bits, narrow) == (8, False) or \
                        ((bits, narrow) == (8, True) and i < 9) or \
                        (bits == 2 and (lo, hi) in ((0.5, 3), (-3, -0.2), (-126.5, 128.5))):
                    combos.append((lo, hi, note, bits, narrow))
        combos += [(lo, hi, "scale 1 or 1/2: exact ties", bits, narrow) for lo, hi, bits, narrow in
                   [(-128, 127, 8, False), (-127, 127, 8, True), (-8, 7, 4, False), (-4, 3.5, 4, False),
                    (0, 15, 4, False), (-7, 7, 4, True)]]
        for lo, hi, note, bits, narrow in combos:
            x, tie = grid_inputs(gen, op, lo, hi, bits, narrow)
            if pc:
                C = 3
                x = x[: (x.size // C) * C].reshape(-1, C)
                mn, mx = per_channel_minmax(C, (lo, hi), gen)
            else:
                mn, mx = lo, hi
            tags = ["tie"] if tie else []
            tags += ["narrow"] * narrow + ["range_excludes_zero"] * (lo > 0 or hi < 0)
            cases.append(_case(op, fq_attrs(op, lo, hi, bits, narrow, explicit_bits=bits != 8 or narrow),
                                fwd_or_grad_inputs(gen, op, x, mn, mx), tags,
                                "%s [%r, %r], %d bits%s: ties, one ulp either side, grid points, ends" % (
                                    note, lo, hi, bits, ", narrow" * narrow)))
        # 2. special inputs
        for (lo, hi), bits, narrow in [((-1, 1), 8, False), ((-1, 1), 16, True), ((0, 1), 2, False),
                                       ((-6, 6), 8, True), ((-2.0 ** -100, 2.0 ** -100), 8, False)]:
            x = np.array(SPECIALS, F32)
            if pc:
                x = np.concatenate([x, np.zeros(3 - x.size % 3 if x.size % 3 else 0, F32)]).reshape(-1, 3)
                mn, mx = per_channel_minmax(3, (lo, hi), gen)
            else:
                mn, mx = lo, hi
            cases.append(_case(op, fq_attrs(op, lo, hi, bits, narrow), fwd_or_grad_inputs(
                gen, op, x, mn, mx, G_SPECIALS if grad else ()), ["nan", "inf", "neg_zero", "subnormal"],
                "special inputs: NaN, +-inf, +-0, subnormals, float32 extremes"))
        # 3. gradient specials: NaN/inf/-0/subnormal gradients inside and outside the range
        if grad:
            x = np.array([0, 0.5, 5, -5, 0.25, 5, -5, 0.75, 3, -3, 0.1, -0.1], F32)
            if pc:
                x = x.reshape(4, 3)
            for gv, note in [([np.nan, np.inf, 1, 2, -np.inf, 4, 1, 2, 3, 4, 5, 6], "NaN/inf gradients inside"),
                             ([1, np.nan, 2, np.inf, 3, -0.0, 4, 5, 6, 7, 8, 9], "NaN/inf gradients outside"),
                             ([SM, -SM, 2.0 ** -130, -(2.0 ** -130), SM, TINY, -SM, 1, 2, 3, 4, 5],
                              "subnormal gradients: passed through untouched, read as 0 by the sums (DAZ)"),
                             ([-0.0] * 12, "all gradients -0"), ([np.inf, 1, np.inf, -np.inf, 1, 1, 1, 1, 1, 1, 1, 1],
                                                                 "+inf and -inf outside: NaN sums")]:
                inputs = {"inputs": x, "gradients": np.array(gv, F32).reshape(x.shape)}
                if not args:
                    mn, mx = per_channel_minmax(3, (-1, 1), gen) if pc else (-1, 1)
                    inputs["min"], inputs["max"] = np.asarray(mn, F32), np.asarray(mx, F32)
                cases.append(_case(op, fq_attrs(op, -1, 1, 8, False, False), inputs,
                                    ["nan", "inf", "subnormal", "neg_zero"], note))
        # 4. degenerate ranges (Args: XLA accepts min < max only; NaN passes its check)
        for lo, hi, note, tag in DEGENERATE:
            x = np.array([0.3, -5, np.nan, 2, 0, -0.0, -1, 1, SM, -SM, np.inf, -np.inf], F32)
            if op == ARGS:   # the MLIR verifier refuses min >= max (error cases); ArgsGradient has no check
                with np.errstate(invalid="ignore"):
                    ok = (F32(lo) < F32(hi) or np.isnan(F32(lo)) or np.isnan(F32(hi))) and tag != "subnormal"
                if not ok:
                    continue
            if pc:
                x = x.reshape(4, 3)
                mn, mx = per_channel_minmax(3, (lo, hi), gen)
                mn[1], mx[1] = F32(-1), F32(1)   # one ordinary channel beside the degenerate ones
            else:
                mn, mx = lo, hi
            cases.append(_case(op, fq_attrs(op, lo, hi, 8, False, False), fwd_or_grad_inputs(gen, op, x, mn, mx),
                                [tag], note))
        # 5. empty tensors and rank 0
        for shape in ([0], [2, 0], [0, 3]) if not pc else ([0, 3], [2, 0, 3], [0]):
            x = np.zeros(shape, F32)
            C = shape[-1]
            mn, mx = (np.full(C, -1, F32), np.full(C, 1, F32)) if pc else (-1, 1)
            cases.append(_case(op, fq_attrs(op, -1, 1, 8, False, False), fwd_or_grad_inputs(gen, op, x, mn, mx),
                                ["empty"], "empty tensor %s" % shape))
        if not pc:
            cases.append(_case(op, fq_attrs(op, -1, 1, 8, False, False),
                                fwd_or_grad_inputs(gen, op, np.asarray(F32(0.3)), -1, 1), ["rank0"], "rank 0"))
        # 6. per-channel layouts: rank 1 (every element its own channel), last dimension 1 (XLA's
        #    simplifier then rewrites the nudge differently), ranks 2..5, mixed channel ranges
        if pc:
            for shape, note, mix in [([7], "rank 1: every element is a channel", True),
                                     ([1], "one channel, rank 1", False),
                                     ([9, 1], "last dimension 1: min/scale becomes (min*qd)/(max-min)", False),
                                     ([2, 3, 1], "last dimension 1, rank 3", False),
                                     ([4, 3], "rank 2, mixed channel ranges", True),
                                     ([2, 3, 4], "rank 3", True), ([2, 2, 2, 3], "rank 4", True),
                                     ([1, 2, 1, 2, 3], "rank 5" + (" (XLA refuses rank > 4 for the gradient)"
                                                                   if grad else ""), True)]:
                C = shape[-1]
                base = (-0.7, 2.3)
                mn, mx = per_channel_minmax(C, base, gen, mix)
                n = int(np.prod(shape))
                x0, _ = grid_inputs(gen, op, base[0], base[1], 8, False, n_levels=4, n_uniform=n)
                x = np.resize(x0, n).reshape(shape).astype(F32)
                c = _case(op, {}, fwd_or_grad_inputs(gen, op, x, mn, mx), ["per_channel", "rank%d" % len(shape)]
                          + ["single_channel"] * (C == 1), note)
                if grad and len(shape) > 4:
                    c["tags"].append("error")
                    errors.append(c)
                else:
                    cases.append(c)
            for bits, narrow in ((8, False), (4, True), (16, False)):
                x = np.resize(grid_inputs(gen, op, -1, 1, bits, narrow)[0], 24).reshape(24, 1)
                cases.append(_case(op, fq_attrs(op, -1, 1, bits, narrow), fwd_or_grad_inputs(
                    gen, op, x, [-1], [1]), ["single_channel"], "last dimension 1, %d bits%s" % (
                    bits, ", narrow" * narrow)))
        # 7. a few larger random tensors
        #    (a reduced dimension longer than 32 makes XLA split the min/max sums into a reduce-window)
        for shape, (lo, hi), bits in [([4096], (-0.7, 2.3), 8), ([50, 20], (-6, 6), 4)] if not pc else \
                [([1024, 4], (-0.7, 2.3), 8), ([40, 2, 12], (-6, 6), 4)]:
            n = int(np.prod(shape))
            nmin, nmax, scale, _ = nudge(op, lo, hi, bits, False)
            w = float(nmax - nmin)
            x = gen.rng.uniform(float(nmin) - 0.1 * w, float(nmax) + 0.1 * w, n).astype(F32)
            k = gen.rng.integers(0, 1 << bits, n // 4)
            x[: n // 4] = (float(nmin) + (k + 0.5) * float(scale)).astype(F32)   # near ties
            x = x[gen.rng.permutation(n)].reshape(shape)
            C = shape[-1]
            mn, mx = per_channel_minmax(C, (lo, hi), gen, True) if pc else (lo, hi)
            cases.append(_case(op, fq_attrs(op, lo, hi, bits, False, bits != 8),
                                fwd_or_grad_inputs(gen, op, x, mn, mx), ["random", "large"],
                                "random %s, half near ties" % (shape,)))
        # 8. error cases: what the jit_compile=True path refuses
        errors += error_cases(op)
    for c in errors:
        c["expect_error"] = True
    return cases + errors


def error_cases(op):
    """What the jit_compile=True path is expected to refuse."""
    args, pc, grad = op.startswith(ARGS), op.startswith(PC), op.endswith("Gradient")
    x23 = np.arange(6, dtype=F32).reshape(2, 3) / F32(4) - F32(0.5)

    def base(**over):
        d = {"inputs": x23}
        if grad:
            d["gradients"] = np.ones_like(x23)
        if not args:
            d["min"], d["max"] = (np.full(3, -1, F32), np.full(3, 1, F32)) if pc else (F32(-1), F32(1))
        d.update(over)
        return d

    out = []
    for nb in (0, 1, 17, 32):
        out.append(_case(op, fq_attrs(op, -1, 1, nb, False), base(), ["error"], "num_bits %d out of [2, 16]" % nb))
    out.append(_case(op, fq_attrs(op, -1, 1, 8, False, False), base(), ["error"],
                     "float64 inputs (FakeQuant is float32 only)", "float64"))
    if op == ARGS:
        for lo, hi, note in [(1, 1, "min == max"), (1, 0, "min > max"), (0, 0, "min == max == 0"),
                             (SM, SM, "min == max subnormal"), (-SM, SM, "min < max, both subnormal (DAZ: -0 >= 0)"),
                             (0, 2.0 ** -130, "min 0 < max subnormal (DAZ)")]:
            out.append(_case(op, fq_attrs(op, lo, hi, 8, False, False), base(), ["error"], note))
    if grad:
        out.append(_case(op, fq_attrs(op, -1, 1, 8, False, False), base(gradients=np.ones((3, 2), F32)), ["error"],
                          "gradients/inputs shapes differ (transposed)"))
        out.append(_case(op, fq_attrs(op, -1, 1, 8, False, False), base(gradients=np.ones((2, 4), F32)), ["error"],
                          "gradients/inputs sizes differ"))
    if op in (VARS, VARSG):
        out += [_case(op, {}, base(min=np.array([-1], F32)), ["error"], "min shape [1]"),
                _case(op, {}, base(max=np.array([[1]], F32)), ["error"], "max rank 2")]
    if pc:
        out += [_case(op, {}, base(min=F32(-1)), ["error"], "min rank 0"),
                _case(op, {}, base(max=np.ones((1, 3), F32)), ["error"], "max rank 2"),
                _case(op, {}, base(min=-np.ones(2, F32)), ["error"], "len(min) != last dim"),
                _case(op, {}, base(max=np.ones(4, F32)), ["error"], "len(max) 4 != last dim 3"),
                _case(op, {}, dict(base(inputs=np.asarray(F32(0.5)), min=-np.ones(1, F32), max=np.ones(1, F32)),
                                    **({"gradients": np.asarray(F32(1))} if grad else {})), ["error"],
                       "rank-0 inputs")]
    return out


def _case(op, attrs, arrays, tags, note, dtype="float32"):
    return mkcase(op, attrs, {k: (dtype, a) for k, a in arrays.items()}, tags, note)


def tags(case):
    """The generator's tags that the values bear out, then the value tags, the rank, per_channel."""
    arrs = [a for _, a in case["inputs"].values()]
    present = value_tags(arrs, tiny=np.finfo(F32).tiny) + ["narrow"] * bool(case["attrs"].get("narrow_range", False))
    tags = [t for t in case["tags"] if t not in ("nan", "inf", "neg_zero", "subnormal", "empty", "narrow")
            or t in present]
    tags += present
    if "inputs" in case["inputs"]:
        tags.append("rank%d" % case["inputs"]["inputs"][1].ndim)
    if case["op"].startswith(PC):
        tags.append("per_channel")
    return list(dict.fromkeys(tags))


FAMILY = Family(generate, tags, seed=SEED, fma_note=True)
