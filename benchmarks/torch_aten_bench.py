#!/usr/bin/env python3
"""PyTorch's CPU fake-quant kernels at their best, in a process of their own: the side of the aten ops'
comparison that `qdqc bench` cannot time in its process (PyTorch is a reference framework, never a dependency).

Run it in a virtualenv with PyTorch, on a quiet machine, beside `qdqc bench --ops <the same ops> --sizes 24`:

    /work/torchvenv/bin/python benchmarks/torch_aten_bench.py [--log2n 24] [--repeat 9] [--threads 2]

Each op runs on resident torch tensors (the same shapes and qparams as qdqc bench's aten cases: 2^n float32
elements, per-channel as [2^n / 64, 64] on axis 1 or axis 0), its result left a torch tensor ("op alone"),
with torch.set_num_threads(--threads). It prints the minimum and median in ms, and the ratio to a torch copy
(``x.clone()``) of the same bytes measured in this process.
"""
from __future__ import annotations

import sys

import numpy as np
import torch

from framework_timing import arguments, measure, write_json


def _cases(n: int, rng):
    x = torch.from_numpy((rng.standard_normal(n) * 2).astype(np.float32))
    g = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    mask = torch.from_numpy(rng.random(n) < 0.9)
    x2 = x.reshape(n // 64, 64)
    s64, z64 = torch.full((64,), 0.05), torch.zeros(64, dtype=torch.int32)
    s_rows, z_rows = torch.full((n // 64,), 0.05), torch.zeros(n // 64, dtype=torch.int32)
    sc, zp = torch.tensor([0.05]), torch.tensor([3.0])
    on = torch.tensor([1])
    aten = torch.ops.aten
    return {
        "fake_quantize_per_tensor_affine": (lambda: aten.fake_quantize_per_tensor_affine(x, 0.05, 3, -128, 127), [x]),
        "fake_quantize_per_tensor_affine_cachemask":
            (lambda: aten.fake_quantize_per_tensor_affine_cachemask(x, 0.05, 3, -128, 127), [x]),
        "fake_quantize_per_channel_affine[axis=1]":
            (lambda: aten.fake_quantize_per_channel_affine(x2, s64, z64, 1, -128, 127), [x]),
        "fake_quantize_per_channel_affine[axis=0]":
            (lambda: aten.fake_quantize_per_channel_affine(x2, s_rows, z_rows, 0, -128, 127), [x]),
        "fake_quantize_per_tensor_affine_cachemask_backward":
            (lambda: aten.fake_quantize_per_tensor_affine_cachemask_backward(g, mask), [g]),
        "_fake_quantize_learnable_per_tensor_affine_backward":
            (lambda: aten._fake_quantize_learnable_per_tensor_affine_backward(g, x, sc, zp, -128, 127, 1.0), [g, x]),
        "_fake_quantize_learnable_per_channel_affine_backward[axis=1]":
            (lambda: aten._fake_quantize_learnable_per_channel_affine_backward(g.reshape(n // 64, 64), x2, s64,
                                                                              z64.float(), 1, -128, 127, 1.0), [g, x]),
        # the fused observer (a later call: finite running range), per tensor and per row of [2^n / 64, 64]
        "fused_moving_avg_obs_fake_quant":
            (lambda: aten.fused_moving_avg_obs_fake_quant(x, on, on, torch.tensor(-1.5), torch.tensor(1.5),
                                                          torch.tensor([1.0]), torch.tensor([0], dtype=torch.int32),
                                                          0.01, -128, 127, 0), [x]),
        "fused_moving_avg_obs_fake_quant[per_row]":
            (lambda: aten.fused_moving_avg_obs_fake_quant(x2, on, on, torch.full((n // 64,), -1.5),
                                                          torch.full((n // 64,), 1.5), s_rows.clone(), z_rows.clone(),
                                                          0.01, -128, 127, 0, True), [x]),
    }


def main(argv=None) -> int:
    args = arguments(__doc__.split("\n\n")[0], argv)
    torch.set_num_threads(args.threads)
    n = 1 << args.log2n
    rows = []
    print(f"PyTorch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}), {args.threads} threads, "
          f"2^{args.log2n} float32 elements, ms (min / median), x copy of the same bytes (median)")
    for name, (fn, data) in _cases(n, np.random.default_rng(0)).items():
        rows.append(measure(name, "torch", fn, lambda data=data: [d.clone() for d in data], args.repeat, 60))
    write_json(args.json, {"torch": torch.__version__}, rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
