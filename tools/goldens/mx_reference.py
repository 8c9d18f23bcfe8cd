"""Golden vectors of torchao's MX and NVFP4 reference quantization: qdq_compiler/goldens/mx/torchao.json, each case
answered by torchao's eager PyTorch code on the CPU (``to_mx`` / ``to_dtype`` of
torchao.prototype.mx_formats.mx_tensor, ``nvfp4_quantize`` / ``NVFP4Tensor.dequantize`` of nvfp4_tensor), or the
error it raises.

Run in a virtualenv of its own (a reference framework is a tool for making test data, never a dependency):

    python3 -m venv /work/torchaovenv && /work/torchaovenv/bin/pip install torch==2.13.0 torchao==0.18.0 numpy ml_dtypes
    /work/torchaovenv/bin/python -m tools.goldens.mx_reference [--out PATH]      # a few seconds

The file is {"reference", "generator", "cases": [...]}; a case is {"id", "elem", "scale_rule", "block_size",
"shape", "tags", "x", then either "scales", "per_tensor_scale", "elements", "dequantized" or "error"}:

* ``x``: the float32 input, row-major, each value as its 32-bit pattern (an unsigned int);
* ``scales``: one per block (row-major over [rows, cols // block_size]), as raw bits: E8M0 for MX (uint8, 255 is
  NaN), float8_e4m3fn for NVFP4 (uint8);
* ``per_tensor_scale``: NVFP4's float32 per-tensor scale as its bits (``nvfp4_per_tensor``:
  ``per_tensor_amax_to_scale(amax(|x|))`` unless the case is tagged ``fixed_pts``), else null;
* ``elements``: each element's code, unpacked (fp4 0..15, fp6 0..63, fp8 0..255);
* ``dequantized``: ``to_dtype(..., torch.float32)`` (MX) or ``NVFP4Tensor.dequantize(torch.float32)``, as bits;
* ``error``: "<exception type>: <first line>" where torchao raises.

Scale rules are torchao's ScaleCalculationMode values (floor, rceil, ceil, even; any member added later is picked
up) and, for NVFP4, ``nvfp4`` (block scales only) and ``nvfp4_per_tensor`` (two-level). Every element format meets
every rule with the same inputs (one random stream per format, fixed seeds): the file is byte-identical from run
to run. What torchao computes is written down in the findings that came with this generator (scales as float32
bit operations, the element casts, the special blocks).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import ml_dtypes
import numpy as np
import torch
import torchao
from torchao.prototype.mx_formats.config import ScaleCalculationMode
from torchao.prototype.mx_formats.kernels import unpack_uint4
from torchao.prototype.mx_formats.mx_tensor import MXTensor, to_dtype, to_mx
from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, nvfp4_quantize, per_tensor_amax_to_scale

OUT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "qdq_compiler", "goldens", "mx", "torchao.json"))

# name -> (torchao elem_dtype, ml_dtypes type (for the value grid), element width in bits)
ELEMS = {
    "mxfp8_e4m3": (torch.float8_e4m3fn, ml_dtypes.float8_e4m3fn, 8),
    "mxfp8_e5m2": (torch.float8_e5m2, ml_dtypes.float8_e5m2, 8),
    "mxfp6_e2m3": ("fp6_e2m3", ml_dtypes.float6_e2m3fn, 6),
    "mxfp6_e3m2": ("fp6_e3m2", ml_dtypes.float6_e3m2fn, 6),
    "mxfp4_e2m1": (torch.float4_e2m1fn_x2, ml_dtypes.float4_e2m1fn, 4),
    "nvfp4": (None, ml_dtypes.float4_e2m1fn, 4),
}
MX_RULES = {m.value: m for m in ScaleCalculationMode}
NV_RULES = ("nvfp4", "nvfp4_per_tensor")
F32_MAX = np.float32(np.finfo(np.float32).max)


def bits32(a):
    return [int(v) for v in np.ascontiguousarray(a, np.float32).view(np.uint32).ravel()]


def f32(*patterns):
    return np.array(patterns, np.uint32).view(np.float32)


def grid(t, width):
    """The non-negative finite values of an element format, ascending."""
    codes = np.arange(1 << (width - 1), dtype=np.uint8)
    v = codes.view(t).astype(np.float32)
    return np.unique(v[np.isfinite(v)])


def rows_of(blocks, bs):
    """One block per row, zero padded to bs."""
    out = np.zeros((len(blocks), bs), np.float32)
    for i, b in enumerate(blocks):
        b = np.asarray(b, np.float32)
        out[i, :len(b)] = b
    return out


def with_amax(rng, amax, bs, frac=0.999):
    """A block whose largest magnitude is exactly |amax| (at a random place, the sign of amax)."""
    amax = np.float32(amax)
    b = (rng.uniform(-1, 1, bs) * float(abs(amax)) * frac).astype(np.float32)
    b = np.where(np.abs(b) > abs(amax), np.float32(0), b).astype(np.float32)
    b[rng.integers(bs)] = amax
    return b


def descale_hits(m_pos, d):
    """A float32 amax with fl(amax / m_pos) == d (RCEIL's descale), or None."""
    a = np.float32(float(d) * float(m_pos))
    for cand in (a, np.nextafter(a, np.float32(0)), np.nextafter(a, np.float32(np.inf))):
        with np.errstate(all="ignore"):
            if np.isfinite(cand) and np.float32(cand) / np.float32(m_pos) == d:
                return cand
    return None


def cases_for(elem, rng):
    """[(tags, x)] for one element format, the same for every scale rule."""
    _, t, width = ELEMS[elem]
    nv = elem == "nvfp4"
    bs = 16 if nv else 32
    g = grid(t, width)
    m_pos = g[-1]                                   # the element format's max
    tpow = int(np.floor(np.log2(m_pos)))            # its largest power of two (torchao's *_MAX_POW2)
    out = []
    # random normal data at several magnitudes
    for mag in (1e-3, 1e-1, 1.0, 10.0, 1e2, 1e4):
        rows = 4 if mag == 1.0 else 2
        out.append((["random", f"mag={mag:g}"], (rng.standard_normal((rows, 64)) * mag).astype(np.float32)))
    # amax an exact power of two, and its float32 neighbours
    ks = (-100, -20, -1, 0, 1, 7, 30, 100)
    for kind in ("exact", "below", "above"):
        blocks = []
        for k in ks:
            p = np.float32(2.0 ** k)
            a = p if kind == "exact" else np.nextafter(p, np.float32(0 if kind == "below" else np.inf))
            blocks.append(with_amax(rng, a * rng.choice([1, -1]), bs))
        out.append((["amax_pow2", kind], rows_of(blocks, bs)))
    # amax = the format's max times a power of two, and its neighbours
    js = (-140, -127, -126, -60, -1, 0, 9, 126 - tpow)
    for kind in ("exact", "below", "above"):
        blocks = []
        for j in js:
            p = np.float32(float(m_pos) * 2.0 ** j)
            a = p if kind == "exact" else np.nextafter(p, np.float32(0 if kind == "below" else np.inf))
            blk = with_amax(rng, a, bs)
            picks = g[np.linspace(0, len(g) - 1, bs // 2).astype(int)].astype(np.float64)
            blk[:bs // 2] = (picks * 2.0 ** j).astype(np.float32)          # some exact grid multiples
            blk[bs - 1] = a
            blocks.append(blk)
        out.append((["amax_max_pow2", kind], rows_of(blocks, bs)))
    # ties: every midpoint between neighbouring element values, both signs, in blocks anchored at amax = max
    # (scale 1 for floor, even, rceil, nvfp4) or amax = 2^emax (scale 1 for ceil and floor), scaled by 2^j
    mids = (g[:-1] + g[1:]) / np.float32(2)
    signed = np.stack([mids, -mids], 1).ravel().astype(np.float32)
    for anchor_name, anchor in (("anchor=max", m_pos), ("anchor=pow2", np.float32(2.0 ** tpow))):
        below = signed[np.abs(signed) < anchor]
        chunks = [below[i:i + bs - 1] for i in range(0, len(below), bs - 1)]
        for j in ((0, -10, 20) if anchor_name == "anchor=max" else (0, 5)):
            blocks = [np.concatenate([[anchor], c]).astype(np.float32) * np.float32(2.0 ** j) for c in chunks]
            out.append((["ties", anchor_name, f"x2^{j}"], rows_of(blocks, bs)))
    # special blocks, one case each (a second, ordinary row beside it)
    ordinary = (rng.standard_normal(bs)).astype(np.float32)

    def special(tags, *blocks):
        out.append((["special"] + tags, rows_of(list(blocks) + [ordinary], bs)))

    nan, pinf = np.float32(np.nan), np.float32(np.inf)
    special(["zero"], np.zeros(bs, np.float32))
    special(["neg_zero"], np.full(bs, -0.0, np.float32))
    b = rng.standard_normal(bs).astype(np.float32); b[3] = nan
    special(["nan"], b)
    b = rng.standard_normal(bs).astype(np.float32); b[0] = f32(0xFFC00000)[0]
    special(["nan", "neg_nan"], b)
    b = rng.standard_normal(bs).astype(np.float32); b[1] = f32(0x7FFFFFFF)[0]; b[2] = f32(0x7F800001)[0]
    special(["nan", "nan_payload"], b)
    b = rng.standard_normal(bs).astype(np.float32); b[4] = nan; b[5] = pinf
    special(["nan", "inf"], b)
    b = rng.standard_normal(bs).astype(np.float32); b[6] = pinf
    special(["inf", "pos_inf"], b)
    b = rng.standard_normal(bs).astype(np.float32); b[7] = -pinf
    special(["inf", "neg_inf"], b)
    b = (rng.standard_normal(bs) * 1e30).astype(np.float32); b[0] = pinf; b[1] = -pinf
    special(["inf", "both_inf"], b)
    special(["f32_subnormal_amax"], (rng.uniform(-1, 1, bs) * 1e-39).astype(np.float32),
            np.concatenate([f32(0x007FFFFF, 0x80000001, 0x00000001), np.zeros(bs - 3, np.float32)]))
    special(["scale_min"], *[with_amax(rng, np.float32(c * 2.0 ** (tpow + e)), bs)
                             for c, e in ((1.5, -127), (1.0, -127), (1.0, -126), (1.5, -128), (1.75, -129))])
    special(["amax_f32_max"], with_amax(rng, np.float32(3e38), bs, 0.5), with_amax(rng, np.float32(2.0 ** 127), bs),
            with_amax(rng, np.float32(1.5 * 2.0 ** 127), bs), with_amax(rng, -np.nextafter(F32_MAX, np.float32(0)), bs))
    special(["all_f32_max"], (F32_MAX * rng.choice([1, -1], bs)).astype(np.float32))
    if not nv:
        # RCEIL's ceil(log2(amax / max)) in float32 just above a power of two (see the findings): descale =
        # 2^k (1 + m 2^-23) for m at and beyond the last m whose float32 log2 still rounds to k
        thresholds = {5: 1, 12: 2, 20: 5, 40: 11, 70: 22, -6: 1, -12: 2, -20: 5, -40: 11, -70: 22, -100: 22,
                      -3: 0, 3: 0}
        blocks = []
        for k, tm in thresholds.items():
            for m in sorted({max(tm, 1), tm + 1}):
                d = (np.float32(2.0 ** k).view(np.uint32) + np.uint32(m)).view(np.float32)
                a = descale_hits(m_pos, d)
                if a is not None:
                    blocks.append(with_amax(rng, a, bs))
        out.append((["rceil_log2"], rows_of(blocks, bs)))
        # descale in the float32 subnormal 2^-127 (1 + m 2^-22): code 0 or 1
        blocks = []
        for m in (0, 1, 11, 12):
            d = (np.uint32(0x00400000) + np.uint32(m)).view(np.float32) if m else np.float32(2.0 ** -127)
            a = descale_hits(m_pos, np.float32(d))
            if a is not None:
                blocks.append(with_amax(rng, a, bs))
        out.append((["rceil_log2", "descale_subnormal"], rows_of(blocks, bs)))
        # EVEN rounds amax's float32 mantissa at the element's mbits (1, 2, 3): amax = 2^k (2 - 2^-(mb+1)) carries
        # into the exponent, its float32 predecessor does not
        blocks = []
        for mb in (1, 2, 3):
            for k in (0, 10):
                a = np.float32(2.0 ** k * (2.0 - 2.0 ** -(mb + 1)))
                blocks += [with_amax(rng, a, bs), with_amax(rng, np.nextafter(a, np.float32(0)), bs)]
        out.append((["even_round"], rows_of(blocks, bs)))
    else:
        # the e4m3 block scale is rarely a power of two: x * fl(1 / s) rounds before the fp4 cast
        blocks = []
        for s in (3.0, 5.0, 0.375, 448.0, 2.0 ** -6, 1.25, 13.0, 1.875, 240.0, 0.029296875):
            blk = np.concatenate([[np.float32(6 * s)], signed[:bs - 1] * np.float32(s)]).astype(np.float32)
            blocks.append(blk)
        out.append((["nvfp4_scale_non_pow2"], rows_of(blocks, bs)))
        out.append((["nvfp4_scale_min"], rows_of([with_amax(rng, a, bs) for a in
                                                  (np.float32(0.09375), np.nextafter(np.float32(0.09375), np.float32(0)),
                                                   np.float32(0.01), np.float32(6 * 2.0 ** -9), np.float32(1e-20))], bs)))
    # a last dimension that is not a multiple of the block size
    out.append((["bad_shape"], rng.standard_normal((2, bs + bs // 2)).astype(np.float32)))
    return out


def err(e):
    first = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {first}"


def run_mx(elem, mode, x):
    dt, _, _ = ELEMS[elem]
    xt = torch.from_numpy(x.copy())
    scale, data = to_mx(xt, dt, 32, mode)
    deq = to_dtype(data, scale, dt, 32, torch.float32)
    # the public path gives the same
    mt = MXTensor.to_mx(xt, dt, 32, scaling_mode=mode)
    assert torch.equal(mt.scale.view(torch.uint8), scale.view(torch.uint8))
    assert torch.equal(mt.dequantize(torch.float32).view(torch.int32), deq.view(torch.int32))
    codes = unpack_uint4(data) if dt == torch.float4_e2m1fn_x2 else data.view(torch.uint8)
    return {"scales": scale.view(torch.uint8).flatten().tolist(), "per_tensor_scale": None,
            "elements": codes.flatten().tolist(), "dequantized": bits32(deq.numpy())}


def run_nv(rule, x, pts):
    xt = torch.from_numpy(x.copy())
    if rule == "nvfp4_per_tensor" and pts is None:
        pts = per_tensor_amax_to_scale(torch.amax(torch.abs(xt)))
    scale, data = nvfp4_quantize(xt, 16, pts)
    t = NVFP4Tensor.to_nvfp4(xt, per_tensor_scale=pts)
    assert torch.equal(t.scale.view(torch.uint8).flatten(), scale.view(torch.uint8).flatten())
    assert torch.equal(t.qdata, data)
    deq = t.dequantize(torch.float32)
    return {"scales": scale.view(torch.uint8).flatten().tolist(),
            "per_tensor_scale": None if pts is None else bits32(pts.numpy())[0],
            "elements": unpack_uint4(data).flatten().tolist(), "dequantized": bits32(deq.numpy())}


def run_all():
    records, summary = [], []
    for ei, elem in enumerate(ELEMS):
        rng = np.random.default_rng(20260 + ei)
        cases = cases_for(elem, rng)
        extra = []
        if elem == "nvfp4":
            for pv in (1.0, 0.5, 2.0 ** -10, float(np.float32(1.0) / np.float32(3.0)), 1e-3):
                extra.append((["fixed_pts", f"pts={pv:.9g}"], (rng.standard_normal((4, 64)) * 3).astype(np.float32),
                              torch.tensor(pv, dtype=torch.float32)))
        rules = NV_RULES if elem == "nvfp4" else tuple(MX_RULES)
        for rule in rules:
            todo = [(tags, x, None) for tags, x in cases]
            if rule == "nvfp4_per_tensor":
                todo += extra
            n_err = 0
            for tags, x, pts in todo:
                rec = {"id": len(records), "elem": elem, "scale_rule": rule, "block_size": 16 if elem == "nvfp4" else 32,
                       "shape": list(x.shape), "tags": tags, "x": bits32(x)}
                try:
                    rec.update(run_nv(rule, x, pts) if elem == "nvfp4" else run_mx(elem, MX_RULES[rule], x))
                except Exception as e:        # an error is an answer too
                    rec["error"] = err(e)
                    n_err += 1
                records.append(rec)
            summary.append(f"{elem:11s} x {rule:17s}: {len(todo):3d} cases, {n_err} errors")
    return records, summary


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=OUT)
    args = p.parse_args()
    records, summary = run_all()
    header = {"reference": f"torchao {torchao.__version__}, torch {torch.__version__}",
              "generator": "tools/goldens/mx_reference.py"}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(json.dumps(header)[:-1] + ', "cases": [\n')
        fh.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in records))
        fh.write("\n]}\n")
    for line in summary:
        print(line)
    print(f"{args.out}: {len(records)} cases, {os.path.getsize(args.out) // 1024} KiB", file=sys.stderr)


if __name__ == "__main__":
    main()
