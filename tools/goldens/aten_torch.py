"""Golden vectors of PyTorch's CPU fake-quant kernels (semantics torch-cpu): qdq_compiler/goldens/aten/<op>.json.

Run in a virtualenv with PyTorch (a reference framework is a tool for making test data, never a dependency):

    python3 -m venv /work/torchvenv && /work/torchvenv/bin/pip install torch==2.13.0 numpy ml_dtypes
    /work/torchvenv/bin/python -m tools.goldens.aten_torch [--out DIR]     # about 10 s on 2 cores

Same file format as the TF sets (fmt.py; {"op", "torch_version", "cases"}), plus the "bool" dtype (masks,
values 0/1). Fixed seeds: byte-identical from run to run on the same machine. The inputs aim at the kernels'
decisions: ties of x * (1/scale) and their float neighbours, the ends of the quant range, NaN, infinities, ±0,
subnormals, values whose level overflows int64, empty and 0-d tensors, every axis, 1- to 16-bit ranges, int,
float and half zero points, and one large tensor per op and dtype. Each case is run through
``torch.ops.aten.<op>`` positionally, the per-tensor default overload with Python numbers.
"""
from __future__ import annotations

import argparse
import os
import sys

import ml_dtypes
import numpy as np
import torch

from .fmt import enc_array, write_file

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "qdq_compiler", "goldens", "aten")
TORCH_DT = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "int32": torch.int32}
NP_DT = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
         "int32": np.int32}
FLOATS = ("float32", "float64", "float16", "bfloat16")
RANGES = ((0, 1), (-1, 0), (-8, 7), (0, 15), (-128, 127), (0, 255), (-32768, 32767), (0, 65535))


def to_torch(a: np.ndarray, dt: str) -> torch.Tensor:
    if dt == "bfloat16":
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(a, order="C"))   # (np.ascontiguousarray makes a 0-d array [1])


def to_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.numpy()


def enc(dt: str, a: np.ndarray) -> dict:
    if dt == "bool":
        return {"dtype": "bool", "shape": [int(d) for d in a.shape], "values": [int(v) for v in a.ravel()]}
    return enc_array(dt, a)


def aimed(rng, scale: float, zp: float, qmin: int, qmax: int, n: int, dt: str) -> np.ndarray:
    """Values whose x * (1/scale) lands on ties, next to them, at the range's ends, and specials."""
    k = rng.integers(qmin - zp - 3, qmax - zp + 3, n).astype(np.float64)
    v = ((k + 0.5) * scale).astype(np.float32)
    nudge = rng.integers(-1, 2, n)
    v = np.where(nudge > 0, np.nextafter(v, np.float32(np.inf)), np.where(nudge < 0, np.nextafter(v, -np.float32(np.inf)), v))
    specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1e-40, -3e-39, 1e30, -1e30, 3e38,
                         (qmin - zp) * scale, (qmax - zp) * scale, -0.5 * scale, 0.5 * scale], np.float32)
    out = np.concatenate([v, specials, (rng.standard_normal(n) * scale * (qmax - qmin + 1) / 4).astype(np.float32)])
    with np.errstate(over="ignore"):
        return out.astype(NP_DT[dt])


def run(op: str, args):
    fn = getattr(torch.ops.aten, op)
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001  (an error case: its kind and words)
        return {"error": {"kind": type(e).__name__, "message": str(e).splitlines()[0]}}
    return out if isinstance(out, tuple) else (out,)


OUTPUTS = {"fake_quantize_per_tensor_affine": ("output",), "fake_quantize_per_channel_affine": ("output",),
           "fake_quantize_per_tensor_affine_cachemask": ("output", "mask"),
           "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams": ("output", "mask"),
           "fake_quantize_per_channel_affine_cachemask": ("output", "mask"),
           "fake_quantize_per_tensor_affine_cachemask_backward": ("output",),
           "fake_quantize_per_channel_affine_cachemask_backward": ("output",),
           "_fake_quantize_learnable_per_tensor_affine": ("output",),
           "_fake_quantize_learnable_per_channel_affine": ("output",),
           "_fake_quantize_learnable_per_tensor_affine_backward": ("dX", "dScale", "dZeroPoint"),
           "_fake_quantize_learnable_per_channel_affine_backward": ("dX", "dScale", "dZeroPoint"),
           "fused_moving_avg_obs_fake_quant": ("output", "running_min", "running_max", "scale", "zero_point")}


def case(cases, op, cid, inputs: dict, attrs: dict, args, tags, note="", mutated=()):
    """Run one case and record it: ``inputs`` name -> (dtype label, array); ``args`` the positional call;
    ``mutated``: the arguments (tensors) the op writes, recorded after the call as further outputs."""
    res = run(op, args)
    if mutated and not isinstance(res, dict):
        res = tuple(res) + tuple(mutated)
    if isinstance(res, dict):
        expect = res
    else:
        expect = {"outputs": {}}
        for name, t in zip(OUTPUTS[op], res):
            a = to_numpy(t)
            label = "bool" if a.dtype == np.bool_ else str(a.dtype) if a.dtype in (np.float32, np.float64, np.float16,
                                                                                  np.int32) else "bfloat16"
            expect["outputs"][name] = enc(label, a)
    cases.append({"id": cid, "op": op, "attrs": attrs,
                  "inputs": {k: enc(dt, a) for k, (dt, a) in inputs.items()},
                  "expect": expect, "tags": tags, "note": note})


def per_tensor_cases(op: str, rng) -> list:
    cases = []
    enabled_op = op.endswith("tensor_qparams")
    for dt in FLOATS:
        for i, (qmin, qmax) in enumerate(RANGES):
            scale = [0.1, 0.0625, float(rng.uniform(0.001, 0.5)), 3.0][i % 4]
            zp = int(rng.integers(qmin, qmax + 1)) if i % 3 else (qmin + qmax + 1) // 2
            x = aimed(rng, scale, zp, qmin, qmax, 24, dt)
            ins = {"input": (dt, x), "scale": ("float32", np.float32(scale)), "zero_point": ("int32", np.int32(zp))}
            tx = to_torch(x, dt)
            for on in ((1, 0) if enabled_op else (None,)):
                if enabled_op:
                    args = (tx, torch.tensor([scale], dtype=torch.float32), torch.tensor([zp], dtype=torch.int32),
                            torch.tensor([on]), qmin, qmax)
                    case(cases, op, f"{dt}-{qmin}-{qmax}-on{on}", {**ins, "fake_quant_enabled": ("int32", np.int32(on))},
                         {"quant_min": qmin, "quant_max": qmax}, args, ["aimed", dt])
                else:
                    case(cases, op, f"{dt}-{qmin}-{qmax}", ins, {"quant_min": qmin, "quant_max": qmax},
                         (tx, scale, zp, qmin, qmax), ["aimed", dt])
        # shapes: empty, 0-d, rank 3, large
        for tag, x in (("empty", np.zeros((0, 3), np.float32)), ("scalar", np.array(0.35, np.float32)),
                       ("rank3", (rng.standard_normal((2, 3, 5)) * 4).astype(np.float32)),
                       ("large", (rng.standard_normal(1024) * 8).astype(np.float32))):
            x = x.astype(NP_DT[dt])
            ins = {"input": (dt, x), "scale": ("float32", np.float32(0.05)), "zero_point": ("int32", np.int32(-3))}
            tx = to_torch(x, dt)
            if enabled_op:
                args = (tx, torch.tensor([0.05], dtype=torch.float32), torch.tensor([-3], dtype=torch.int32),
                        torch.tensor([1]), -128, 127)
                ins["fake_quant_enabled"] = ("int32", np.int32(1))
            else:
                args = (tx, 0.05, -3, -128, 127)
            case(cases, op, f"{dt}-{tag}", ins, {"quant_min": -128, "quant_max": 127}, args, [tag, dt])
    # errors, in PyTorch's words
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    for cid, (qmin, qmax, zp) in (("err-range", (5, 2, 3)), ("err-zp", (0, 255, 300))):
        ins = {"input": ("float32", x), "scale": ("float32", np.float32(0.1)), "zero_point": ("int32", np.int32(zp))}
        args = (torch.from_numpy(x), 0.1, zp, qmin, qmax)
        if enabled_op:
            ins["fake_quant_enabled"] = ("int32", np.int32(1))
            args = (torch.from_numpy(x), torch.tensor([0.1]), torch.tensor([zp], dtype=torch.int32), torch.tensor([1]),
                    qmin, qmax)
        case(cases, op, cid, ins, {"quant_min": qmin, "quant_max": qmax}, args, ["error"])
    return cases


def per_channel_cases(op: str, rng) -> list:
    cases = []
    for dt in FLOATS:
        for zdt in ("int32", "float32", "float16"):
            for axis in (0, 1, 2):
                qmin, qmax = RANGES[(axis + len(cases)) % len(RANGES)]
                shape = [3, 4, 5]
                c = shape[axis]
                scale = rng.uniform(0.01, 0.3, c).astype(np.float32)
                zp = rng.integers(qmin, qmax + 1, c)
                if zdt != "int32":
                    zp = np.clip(zp + rng.uniform(-0.5, 0.5, c), qmin, qmax)
                zp = zp.astype(NP_DT[zdt])
                x = np.empty(shape, np.float32)
                moved = np.moveaxis(x, axis, 0)
                for ch in range(c):
                    moved[ch] = aimed(rng, float(scale[ch]), float(zp[ch]), qmin, qmax, 20, "float32")[:moved[ch].size] \
                        .reshape(moved[ch].shape)
                x = x.astype(NP_DT[dt])
                ins = {"input": (dt, x), "scale": ("float32", scale), "zero_point": (zdt, zp)}
                args = (to_torch(x, dt), torch.from_numpy(scale), torch.from_numpy(zp), axis, qmin, qmax)
                case(cases, op, f"{dt}-zp{zdt}-axis{axis}", ins, {"axis": axis, "quant_min": qmin, "quant_max": qmax},
                     args, ["aimed", dt, zdt])
        big = (rng.standard_normal((64, 33)) * 6).astype(np.float32).astype(NP_DT[dt])
        scale = rng.uniform(0.02, 0.2, 33).astype(np.float32)
        zp = rng.integers(-20, 20, 33).astype(np.int32)
        ins = {"input": (dt, big), "scale": ("float32", scale), "zero_point": ("int32", zp)}
        case(cases, op, f"{dt}-large", ins, {"axis": 1, "quant_min": -128, "quant_max": 127},
             (to_torch(big, dt), torch.from_numpy(scale), torch.from_numpy(zp), 1, -128, 127), ["large", dt])
    x = np.zeros((2, 3), np.float32)
    for cid, (axis, qmin, qmax, n) in (("err-axis", (2, -128, 127, 3)), ("err-len", (1, -128, 127, 2)),
                                       ("err-range", (1, 5, 2, 3))):
        scale, zp = np.full(n, 0.1, np.float32), np.full(n, 3, np.int32)
        ins = {"input": ("float32", x), "scale": ("float32", scale), "zero_point": ("int32", zp)}
        case(cases, op, cid, ins, {"axis": axis, "quant_min": qmin, "quant_max": qmax},
             (torch.from_numpy(x), torch.from_numpy(scale), torch.from_numpy(zp), axis, qmin, qmax), ["error"])
    return cases


def backward_cases(op: str, rng) -> list:
    cases = []
    for dt in FLOATS:
        specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -1e-45, 1e-40, -2.5], np.float32)
        g = np.concatenate([(rng.standard_normal(40) * 3).astype(np.float32), specials, specials]).astype(NP_DT[dt])
        mask = rng.random(g.size) < 0.6
        mask[-16:-8], mask[-8:] = False, True   # the specials dropped, then kept (a kept subnormal stays)
        case(cases, op, f"{dt}-mixed", {"grad": (dt, g), "mask": ("bool", mask)}, {},
             (to_torch(g, dt), torch.from_numpy(mask)), ["specials", dt])
        e = np.zeros((0,), NP_DT[dt])
        case(cases, op, f"{dt}-empty", {"grad": (dt, e), "mask": ("bool", np.zeros((0,), bool))}, {},
             (to_torch(e, dt), torch.from_numpy(np.zeros((0,), bool))), ["empty", dt])
    return cases


def learnable_cases(op: str, rng) -> list:
    """LSQ's forward and backward: float zero points (rounded by the op), grad_factor, per-tensor [1] qparams,
    per-channel on every axis; the backward's sums over up to 40,000 elements (PyTorch's two-thread split)."""
    cases = []
    per_channel = "per_channel" in op
    backward = op.endswith("_backward")
    dts = ("float32", "bfloat16") if backward else FLOATS
    for dt in dts:
        for i, (qmin, qmax) in enumerate(((-128, 127), (0, 255), (-8, 7), (0, 1), (-32768, 32767))):
            if backward and not qmin <= 0 <= qmax:
                continue
            # the backward's float32 per-tensor sum over 32,800 elements: PyTorch splits it over two threads
            big = (32800,) if backward and dt == "float32" and not per_channel else (64, 5)
            shape, axis = [((300,), None), ((3, 4, 5), 1), ((6, 33), 0), (big, None), ((2, 3, 4), 2)][i]
            if per_channel and axis is None:
                shape, axis = (5, 7), (i % 2)
            if not per_channel:
                axis = None
            c = shape[axis] if per_channel else 1
            scale = rng.uniform(0.01, 0.3, c).astype(np.float32)
            zp = rng.uniform(qmin - 0.7, qmax + 0.7, c).astype(np.float32)
            x = (rng.standard_normal(shape) * (qmax - qmin + 1) * 0.05).astype(np.float32)
            flat = x.reshape(-1)
            flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 1e-40, 0.5 * scale[0]]
            x = x.astype(NP_DT[dt])
            gf = [1.0, 0.5, 1 / 3, 2.0, 1.0][i]
            ins = {"input": (dt, x), "scale": ("float32", scale), "zero_point": ("float32", zp)}
            targs = [to_torch(x, dt), torch.from_numpy(scale), torch.from_numpy(zp)]
            attrs = {"quant_min": qmin, "quant_max": qmax, "grad_factor": gf}
            if per_channel:
                attrs = {"axis": axis, **attrs}
                targs.append(axis)
            if backward:
                g = rng.standard_normal(shape).astype(np.float32)
                g.reshape(-1)[6:8] = [1e-40, -0.0]
                ins = {"grad": ("float32", g), **ins}
                targs = [torch.from_numpy(g)] + targs
            case(cases, op, f"{dt}-{qmin}-{qmax}", ins, attrs, tuple(targs) + (qmin, qmax, gf), ["aimed", dt])
    return cases


def observer_cases(op: str, rng) -> list:
    """fused_moving_avg_obs_fake_quant: a QAT module's calls (the first, with an infinite running range; later
    ones), each switch on and off, per tensor (0-d running range, [1] qparams, as FakeQuantize keeps them) and
    per row, symmetric or not, 1- to 16-bit ranges, all-zero and tiny ranges (FBGEMM's 6.1e-5 scale floor),
    NaN; 16-bit and float64 inputs with the observer off (PyTorch observes float32 only); empty inputs."""
    cases = []

    def one(cid, x, dt, on, fq, rmin, rmax, scale, zp, c, qmin, qmax, ch_axis, per_row, sym, tags):
        state = [torch.from_numpy(a.copy()) for a in (rmin, rmax, scale, zp)]
        ins = {"input": (dt, x), "observer_on": ("int32", np.array([on], np.int32)),
               "fake_quant_on": ("int32", np.array([fq], np.int32)), "running_min": ("float32", rmin),
               "running_max": ("float32", rmax), "scale": ("float32", scale), "zero_point": ("int32", zp),
               "averaging_const": ("float32", np.float32(c))}
        attrs = {"quant_min": qmin, "quant_max": qmax, "ch_axis": ch_axis, "per_row_fake_quant": per_row,
                 "symmetric_quant": sym}
        args = (to_torch(x, dt), torch.tensor([on]), torch.tensor([fq]), *state, c, qmin, qmax, ch_axis, per_row, sym)
        case(cases, op, cid, ins, attrs, args, tags, mutated=state)
        if per_row and cases[-1]["expect"].get("error", {}).get("message", "").startswith("`zero_point` must be"):
            cases[-1]["deviation"] = ("per row, a NaN range (here a 2-level symmetric range: max / 0): PyTorch raises "
                                      "after mutating its state; a compiled program cannot raise, and returns the "
                                      "row's NaN scale, an INT32_MIN zero point and NaN outputs")

    for i, (qmin, qmax) in enumerate(RANGES):
        for per_row in (False, True):
            for sym in (False, True):
                rows = 3
                shape = (rows, 21) if per_row else (45,)
                kind = ["normal", "positive", "negative", "zeros", "tiny", "huge"][(i + 2 * per_row + sym) % 6]
                x = (rng.standard_normal(shape) * 2).astype(np.float32)
                x = {"positive": np.abs(x), "negative": -np.abs(x), "zeros": np.zeros_like(x), "tiny": x * 1e-6,
                     "huge": x * 1e4}.get(kind, x).astype(np.float32)
                if per_row:
                    x[1] = np.abs(x[1])                # a row with min 0 after std::min(min, 0)
                    if kind == "tiny":
                        x[2] = 0.0
                st = (rows,) if per_row else ()
                for step, (on, fq) in enumerate(((1, 1), (1, 1), (1, 0), (0, 1), (0, 0))):
                    first = step == 0
                    rmin = np.full(st, np.inf if first else float(rng.uniform(-3, 0)), np.float32)
                    rmax = np.full(st, -np.inf if first else float(rng.uniform(0, 3)), np.float32)
                    scale = np.full(st or (1,), 0.25, np.float32)
                    zp = np.full(st or (1,), max(qmin, min(qmax, 3)), np.int32)
                    c = [0.01, 0.5, 1.0, 0.1, 0.3][step]
                    one(f"{'row' if per_row else 'tensor'}-{'sym' if sym else 'affine'}-{qmin}-{qmax}-{kind}-on{on}-fq{fq}"
                        f"-{'first' if first else 'later'}", x, "float32", on, fq, rmin, rmax, scale, zp, c, qmin, qmax,
                        0, per_row, sym, [kind, "per_row" if per_row else "per_tensor"])
    # NaN in the data (per tensor: NaN range, scale NaN, zero point INT32_MIN, NaN outputs), a NaN running value
    x = (rng.standard_normal(40) * 2).astype(np.float32)
    x[5] = np.nan
    one("tensor-nan-data", x, "float32", 1, 1, np.array(np.inf, np.float32), np.array(-np.inf, np.float32),
        np.array([1.0], np.float32), np.array([0], np.int32), 0.01, 0, 255, 0, False, False, ["nan"])
    x[5] = 1.5
    one("tensor-nan-running", x, "float32", 1, 1, np.array(np.nan, np.float32), np.array(2.0, np.float32),
        np.array([1.0], np.float32), np.array([0], np.int32), 0.01, -128, 127, 0, False, True, ["nan"])
    # the other dtypes, observer off (PyTorch's observer takes float32 only): ATen's kernel in that type
    for dt in FLOATS:
        for per_row in (False, True):
            shape = (4, 30) if per_row else (3, 40)
            x = aimed(rng, 0.02, 5, -128, 127, 60, "float32")[:np.prod(shape)].reshape(shape).astype(NP_DT[dt])
            st = (4,) if per_row else ()
            one(f"{dt}-{'row' if per_row else 'tensor'}-observer-off", x, dt, 0, 1, np.full(st, -1.1, np.float32),
                np.full(st, 1.4, np.float32), np.full(st or (1,), 1.0, np.float32), np.full(st or (1,), 0, np.int32),
                0.01, -128, 127, 0, per_row, False, [dt])
    # shapes: a rank-3 input per tensor, a large one, the running range given as [1], empty inputs
    x = (rng.standard_normal((2, 3, 5)) * 3).astype(np.float32)
    one("tensor-rank3", x, "float32", 1, 1, np.array(-0.5, np.float32), np.array(0.5, np.float32),
        np.array([1.0], np.float32), np.array([0], np.int32), 0.2, 0, 255, 0, False, False, ["rank3"])
    x = (rng.standard_normal(4096) * 3).astype(np.float32)
    one("tensor-large", x, "float32", 1, 1, np.array([-1.0], np.float32), np.array([1.0], np.float32),
        np.array([1.0], np.float32), np.array([0], np.int32), 0.01, -128, 127, 0, False, False, ["large"])
    x = (rng.standard_normal((16, 256)) * 3).astype(np.float32)
    one("row-large", x, "float32", 1, 1, np.full(16, np.inf, np.float32), np.full(16, -np.inf, np.float32),
        np.ones(16, np.float32), np.zeros(16, np.int32), 0.01, -128, 127, 0, True, True, ["large"])
    for cid, x, per_row in (("tensor-empty", np.zeros((0,), np.float32), False),
                            ("row-empty-rows", np.zeros((2, 0), np.float32), True)):
        st = (2,) if per_row else ()
        one(cid, x, "float32", 1, 1, np.full(st, -1.0, np.float32), np.full(st, 1.0, np.float32),
            np.full(st or (1,), 0.5, np.float32), np.full(st or (1,), 1, np.int32), 0.01, 0, 255, 0, per_row, False,
            ["empty"])
    # errors, in PyTorch's words
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    for cid, kw in (("err-range", dict(qmin=5, qmax=2)), ("err-ch-axis", dict(per_row=True, ch_axis=1)),
                    ("err-ch-axis-rank", dict(ch_axis=2)), ("err-state-len", dict(per_row=True, n=3))):
        n = kw.get("n", 2)
        st = (n,) if kw.get("per_row") else ()
        one(cid, x, "float32", 1, 1, np.full(st, -1.0, np.float32), np.full(st, 1.0, np.float32),
            np.full(st or (1,), 0.5, np.float32), np.zeros(st or (1,), np.int32), 0.01, kw.get("qmin", 0),
            kw.get("qmax", 255), kw.get("ch_axis", 0), kw.get("per_row", False), False, ["error"])
    return cases


GENERATORS = {"fake_quantize_per_tensor_affine": per_tensor_cases,
              "fake_quantize_per_tensor_affine_cachemask": per_tensor_cases,
              "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams": per_tensor_cases,
              "fake_quantize_per_channel_affine": per_channel_cases,
              "fake_quantize_per_channel_affine_cachemask": per_channel_cases,
              "fake_quantize_per_tensor_affine_cachemask_backward": backward_cases,
              "fake_quantize_per_channel_affine_cachemask_backward": backward_cases,
              "_fake_quantize_learnable_per_tensor_affine": learnable_cases,
              "_fake_quantize_learnable_per_channel_affine": learnable_cases,
              "_fake_quantize_learnable_per_tensor_affine_backward": learnable_cases,
              "_fake_quantize_learnable_per_channel_affine_backward": learnable_cases,
              "fused_moving_avg_obs_fake_quant": observer_cases}


def main(argv=None) -> int:
    from .aten_torch_more import more_cases   # issue 48's classes and PyTorch's own tests, after each op's cases
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=OUT)
    args = p.parse_args(argv)
    torch.set_num_threads(2)   # the learnable gradients' sums split over the threads from 32768 elements
    os.makedirs(args.out, exist_ok=True)
    for i, (op, gen) in enumerate(GENERATORS.items()):
        cases = gen(op, np.random.default_rng(1000 + i)) + more_cases(op, 2000 + i)   # (more: seeds of their own)
        header = {"op": op, "torch_version": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                  "threads": torch.get_num_threads()}
        size = write_file(os.path.join(args.out, f"{op}.json"), header, cases)
        print(f"{op}: {len(cases)} cases, {size // 1024} KiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
