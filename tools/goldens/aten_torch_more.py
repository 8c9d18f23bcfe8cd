"""More PyTorch 2.13 golden cases, appended to the op files aten_torch.py writes (each op's own cases first, from
their own seeds, so their bits stay as they were): issue 48's classes and PyTorch's own tests ported.

Tags name the class of each case:
  ``zero-d``       a 0-d input: results 0-d as PyTorch gives them (every per-tensor op, every dtype);
  ``empty-lsq``    the learnable backward of an empty input: PyTorch returns (X, scale, zero_point) as given;
  ``zp-range``     a zero point outside [quant_min, quant_max], in each form of the per-tensor qparams;
  ``per-row-nd``   fused_moving_avg_obs_fake_quant per row on N-d inputs, other ch_axis values, empty inputs;
  ``ported``       test/quantization/core/test_workflow_ops.py's TestFusedObsFakeQuant calls with their shapes and
                   parameters (hypothesis' draws replaced by every value of each strategy; seeds of our own), then
                   its TestFakeQuantizeOps (aten_torch_ported.py: a fixed set of draws per test), after them.
Run through aten_torch.py (``python -m tools.goldens.aten_torch``); not on its own.
"""
from __future__ import annotations

import numpy as np
import torch

from .aten_torch import NP_DT, case, to_torch

F32, I32 = np.float32, np.int32
FLOATS = ("float32", "float64", "float16", "bfloat16")
PT_OPS = ("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask",
          "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams")


def _t(a):
    return torch.from_numpy(np.array(a, order="C"))


def per_tensor(op, rng):
    cases = []
    enabled = op.endswith("tensor_qparams")
    for dt in FLOATS:
        for v in (0.35, -1.26, np.inf):
            x = np.array(v, F32).astype(NP_DT[dt])
            ins = {"input": (dt, x), "scale": ("float32", F32(0.1)), "zero_point": ("int32", I32(3))}
            args = (to_torch(x, dt), 0.1, 3, -8, 7)
            for on in ((1, 0) if enabled else (None,)):
                if enabled:
                    ins["fake_quant_enabled"] = ("int32", I32(on))
                    args = (to_torch(x, dt), _t(np.array([0.1], F32)), _t(np.array([3], I32)), _t(np.array([on])),
                            -8, 7)
                case(cases, op, f"0d-{dt}-{v}" + (f"-on{on}" if enabled else ""), dict(ins),
                     {"quant_min": -8, "quant_max": 7}, args, ["zero-d", dt])
    if enabled:
        return cases
    # zero points out of range in each form torch.ops.aten takes: 0-d, [1] and [1, 1] tensors (the default overload:
    # .item(), truncated toward zero, then checked; a Python float matches no schema: tests/test_aten_conformance.py)
    x = np.linspace(-1, 1, 6, dtype=F32)
    for form, shape in (("0d", ()), ("1", (1,)), ("1x1", (1, 1))):
        for zp, zdt in ((300, "int32"), (-3.7, "float32"), (3.7, "float32"), (255.5, "float32")):
            sc, z = np.full(shape, 0.1, F32), np.full(shape, zp, NP_DT[zdt])
            case(cases, op, f"zp-{form}-{zp}", {"input": ("float32", x), "scale": ("float32", sc),
                                                "zero_point": (zdt, z)},
                 {"quant_min": 0, "quant_max": 255}, (_t(x), _t(sc), _t(z), 0, 255), ["zp-range"])
    return cases


def learnable_forward(op, rng):
    cases = []
    if "per_channel" in op:
        return cases
    for dt in FLOATS:
        x = np.array(0.35, F32).astype(NP_DT[dt])
        sc, zp = np.array([0.1], F32), np.array([2.6], F32)
        case(cases, op, f"0d-{dt}", {"input": (dt, x), "scale": ("float32", sc), "zero_point": ("float32", zp)},
             {"quant_min": -8, "quant_max": 7, "grad_factor": 1.0}, (to_torch(x, dt), _t(sc), _t(zp), -8, 7, 1.0),
             ["zero-d", dt])
    return cases


def learnable_backward(op, rng):
    cases = []
    pc = "per_channel" in op
    for dt in ("float32", "bfloat16"):
        shape, axis, c = ((0, 3), 1, 3) if pc else ((0, 3), None, 2)
        e = np.zeros(shape, F32).astype(NP_DT[dt])
        g = np.zeros(shape, F32)
        sc, zp = rng.uniform(0.05, 0.3, c).astype(F32), np.array([3.7, 300.2, -4.4][:c], F32)
        ins = {"grad": ("float32", g), "input": (dt, e), "scale": ("float32", sc), "zero_point": ("float32", zp)}
        attrs = {"quant_min": 0, "quant_max": 255, "grad_factor": 0.5}
        targs = [_t(g), to_torch(e, dt), _t(sc), _t(zp)]
        if pc:
            attrs = {"axis": axis, **attrs}
            targs.append(axis)
        case(cases, op, f"empty-{dt}", ins, attrs, tuple(targs) + (0, 255, 0.5), ["empty-lsq", dt])
    if not pc:
        for dt in ("float32", "bfloat16"):
            x = np.array(0.37, F32).astype(NP_DT[dt])
            g = np.array(-1.5, F32)
            sc, zp = np.array([0.1], F32), np.array([2.6], F32)
            case(cases, op, f"0d-{dt}", {"grad": ("float32", g), "input": (dt, x), "scale": ("float32", sc),
                                         "zero_point": ("float32", zp)},
                 {"quant_min": -8, "quant_max": 7, "grad_factor": 1.0},
                 (_t(g), to_torch(x, dt), _t(sc), _t(zp), -8, 7, 1.0), ["zero-d", dt])
    else:   # a NaN zero point: PyTorch's words are its int64 conversion's
        x = np.linspace(-1, 1, 6, dtype=F32).reshape(2, 3)
        sc, zp = np.full(3, 0.1, F32), np.array([1.0, np.nan, 2.0], F32)
        case(cases, op, "zp-nan", {"grad": ("float32", np.ones_like(x)), "input": ("float32", x),
                                   "scale": ("float32", sc), "zero_point": ("float32", zp)},
             {"axis": 1, "quant_min": 0, "quant_max": 255, "grad_factor": 1.0},
             (_t(np.ones_like(x)), _t(x), _t(sc), _t(zp), 1, 0, 255, 1.0), ["zp-range", "error"])
    return cases


def _observe(cases, cid, x, on, fq, state, qmin, qmax, ch_axis, per_row, sym, tags, c=0.01):
    """One observer call; ``state`` (running_min, running_max, scale, zero_point) as NumPy arrays, which the call
    mutates (the next call reads them)."""
    ts = [torch.from_numpy(a) for a in state]
    ins = {"input": ("float32", x), "observer_on": ("int32", np.array([int(on)], I32)),
           "fake_quant_on": ("int32", np.array([int(fq)], I32)), "running_min": ("float32", state[0].copy()),
           "running_max": ("float32", state[1].copy()), "scale": ("float32", state[2].copy()),
           "zero_point": ("int32", state[3].copy()), "averaging_const": ("float32", F32(c))}
    attrs = {"quant_min": qmin, "quant_max": qmax, "ch_axis": ch_axis, "per_row_fake_quant": per_row,
             "symmetric_quant": sym}
    case(cases, "fused_moving_avg_obs_fake_quant", cid, ins, attrs,
         (_t(x), torch.tensor(on), torch.tensor(fq), *ts, c, qmin, qmax, ch_axis, per_row, sym), tags, mutated=ts)


def _row_state(n, first=True, rng=None):
    lo = np.full(n, np.inf, F32) if first else rng.uniform(-3, -0.5, n).astype(F32)
    hi = np.full(n, -np.inf, F32) if first else rng.uniform(0.5, 3, n).astype(F32)
    return [lo, hi, np.full(n, 0.25, F32), np.full(n, 3, I32)]


def observer(op, rng):
    cases = []
    tag = ["per-row-nd"]
    # per row on N-d inputs along ch_axis 0 (PyTorch: permuted to the front, the rest flattened), every switch
    for shape in ((5, 4, 3), (2, 3, 4, 5), (3, 1, 2, 1, 4)):
        for sym in (False, True):
            for step, (on, fq) in enumerate(((1, 1), (1, 1), (0, 1), (1, 0))):
                x = (rng.standard_normal(shape) * 2).astype(F32)
                _observe(cases, f"nd-{'x'.join(map(str, shape))}-{'sym' if sym else 'affine'}-on{on}-fq{fq}-s{step}",
                         x, on, fq, _row_state(shape[0], step == 0, rng), 0, 255, 0, True, sym, tag)
    # another ch_axis: with the observer off PyTorch fake-quantizes along it (qparams from the running range);
    # with it on, its aminmax check refuses
    for shape, axis in (((4, 6), 1), ((3, 4, 5), 2), ((3, 4, 5), 1), ((2, 3, 4, 2), 3)):
        for on, fq in ((0, 1), (0, 0), (1, 1)):
            x = (rng.standard_normal(shape) * 2).astype(F32)
            _observe(cases, f"axis{axis}-{'x'.join(map(str, shape))}-on{on}-fq{fq}", x, on, fq,
                     _row_state(shape[axis], False, rng), -128, 127, axis, True, False, tag)
    x = (rng.standard_normal((4, 6)) * 2).astype(F32)
    for on, fq in ((0, 0), (0, 1), (1, 0)):   # a negative ch_axis on a 2-D input: no permutation in PyTorch
        _observe(cases, f"axis-1-4x6-on{on}-fq{fq}", x, on, fq, _row_state(6, False, rng), -128, 127, -1, True,
                 False, tag)
    _observe(cases, "axis3-rank3", (rng.standard_normal((2, 3, 4))).astype(F32), 1, 1, _row_state(2, False, rng),
             0, 255, 3, True, False, tag)
    # empty inputs: PyTorch returns a copy before reading anything (state of any shape, ch_axis unchecked)
    for cid, shape, n, axis, per_row in (("empty-rows-0x3", (0, 3), 0, 0, True), ("empty-2x0x3", (2, 0, 3), 2, 0, True),
                                         ("empty-0x5-state3", (0, 5), 3, 0, True), ("empty-3x0-axis1", (3, 0), 0, 1, True),
                                         ("empty-0-axis4", (0,), 4, 4, True), ("empty-tensor-axis3", (0, 5), 0, 3, False)):
        st = _row_state(n, False, rng) if per_row else [np.array(-1.0, F32), np.array(1.0, F32),
                                                         np.array([0.5], F32), np.array([2], I32)]
        _observe(cases, cid, np.zeros(shape, F32), 1, 1, st, 0, 255, axis, per_row, False, tag + ["empty"])
    # a 0-d input per tensor: ch_axis 0 is refused (ch_axis < dim), -1 and -2 answer; per row, flatten(1) refuses
    for axis, per_row in ((0, False), (-1, False), (-2, False), (-1, True)):
        _observe(cases, f"0d-axis{axis}" + ("-per-row" if per_row else ""), np.array(1.7, F32), 1, 1,
                 [np.array(np.inf, F32), np.array(-np.inf, F32), np.array([1.0], F32), np.array([0], I32)], 0, 255,
                 axis, per_row, False, ["zero-d"])
    return cases + ported_observer(rng)


def ported_observer(rng):
    """TestFusedObsFakeQuant (test_workflow_ops.py), CPU: its calls with their shapes and parameters, every value of
    each hypothesis strategy the CPU takes (fp32 only; symmetric_quant and use_bool both ways)."""
    cases = []
    for sym in (False, True):
        for use_bool in (False, True):
            # test_fused_obs_fake_quant_moving_avg: 10 calls on 5x5, observer on after 2, fake quant after 4
            state = [np.array(np.inf, F32), np.array(-np.inf, F32), np.array([1.0], F32), np.array([0], I32)]
            name = f"ported-moving_avg-{'sym' if sym else 'affine'}-{'bool' if use_bool else 'int'}"
            for i in range(10):
                on, fq = i > 2, i > 4
                x = rng.standard_normal((5, 5)).astype(F32)
                _observe(cases, f"{name}-call{i}" + ("" if i in (0, 5) else "-later"), x,
                         on if use_bool else int(on), fq if use_bool else int(fq), state, 0, 255, 0, False, sym,
                         ["ported", "test_fused_obs_fake_quant_moving_avg"])
            _observe(cases, f"{name}-empty", np.zeros((0, 5), F32), 1, 1, state, 0, 255, 0, False, sym,
                     ["ported", "test_fused_obs_fake_quant_moving_avg", "empty"])
            # test_fused_obs_fake_quant_moving_avg_per_channel: sizes [5, 5] and [5, 4, 3], per row, m = 5
            for size in ((5, 5), (5, 4, 3)):
                state = [np.full(5, np.inf, F32), np.full(5, -np.inf, F32), np.full(5, 0.1, F32), np.zeros(5, I32)]
                name = (f"ported-per_channel-{'x'.join(map(str, size))}-{'sym' if sym else 'affine'}-"
                        f"{'bool' if use_bool else 'int'}")
                for i in range(10):
                    on, fq = i > 2, i > 4
                    x = rng.standard_normal(size).astype(F32)
                    _observe(cases, f"{name}-call{i}" + ("" if i in (0, 5) else "-later"), x,
                             on if use_bool else int(on), fq if use_bool else int(fq), state, 0, 255, 0, True, sym,
                             ["ported", "test_fused_obs_fake_quant_moving_avg_per_channel"])
    # test_fused_obs_fake_quant_backward_op / test_fused_backward_op_fake_quant_off: 10x10 and 4x4, the running
    # range the batch's own (0-d), both switches on, then both off
    for cid, n, sw in (("ported-backward_op", 10, 1), ("ported-backward_op_fake_quant_off", 4, 0)):
        x = rng.standard_normal((n, n)).astype(F32)
        state = [np.array(x.min(), F32), np.array(x.max(), F32), np.array([1.0], F32), np.array([0], I32)]
        _observe(cases, cid, x, sw, sw, state, 0, 255, 0, False, False, ["ported", cid[7:]])
    return cases


MORE = {**{op: per_tensor for op in PT_OPS},
        "_fake_quantize_learnable_per_tensor_affine": learnable_forward,
        "_fake_quantize_learnable_per_tensor_affine_backward": learnable_backward,
        "_fake_quantize_learnable_per_channel_affine_backward": learnable_backward,
        "fused_moving_avg_obs_fake_quant": observer}


def more_cases(op: str, seed: int) -> list:
    from .aten_torch_ported import ported_cases   # TestFakeQuantizeOps: seeds of their own, after the rest
    gen = MORE.get(op)
    return (gen(op, np.random.default_rng(seed)) if gen else []) + ported_cases(op)

