#!/usr/bin/env python3
"""torchao's MX fake quantization on the CPU at its best, in a process of its own: the other side of the MX
comparison (`qdqc bench --ops MXFakeQuantize --semantics torchao`); torchao is a reference, never a dependency.

Run it in a virtualenv with torch and torchao (`pip install torch==2.13.0 torchao==0.18.0 numpy`), on a quiet
machine, beside `qdqc bench --ops MXFakeQuantize --semantics torchao --sizes 24`:

    /work/torchaovenv/bin/python benchmarks/torchao_mx_bench.py [--log2n 24] [--repeat 9] [--threads 2]

Each case is torchao's eager reference on resident torch tensors, [2^n / 64, 64] float32 (blocks of 32 along the
last axis, as qdqc bench's MX cases): ``to_mx`` then ``to_dtype(..., float32)`` (the fake quantization:
quantize and dequantize, what our one program computes), and ``to_mx`` alone, with torch.set_num_threads
(--threads). It prints the minimum and median in ms and the ratio to a torch copy (``x.clone()``) of the same
bytes measured in this process. torch.compile's fused kernels (torchao's fast path) need a C++ toolchain and a
GPU for most formats; the eager path is what its CPU users get without one.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
import torch

from framework_timing import arguments, measure, write_json

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torchao.prototype.mx_formats.mx_tensor import ScaleCalculationMode, to_dtype, to_mx

ELEMS = {"mxfp8_e4m3": torch.float8_e4m3fn, "mxfp4_e2m1": torch.float4_e2m1fn_x2}
RULES = {"floor": ScaleCalculationMode.FLOOR, "rceil": ScaleCalculationMode.RCEIL}


def _cases(n: int, rng):
    x = torch.from_numpy((rng.standard_normal(n) * 2).astype(np.float32)).reshape(n // 64, 64)
    out = {}
    for elem, rule in (("mxfp8_e4m3", "floor"), ("mxfp4_e2m1", "rceil")):
        dt, mode = ELEMS[elem], RULES[rule]

        def fake(dt=dt, mode=mode):
            scale, data = to_mx(x, dt, 32, mode)
            return to_dtype(data, scale, dt, 32, torch.float32)

        out[f"MXFakeQuantize[{elem},{rule}]"] = (fake, [x])
        out[f"to_mx[{elem},{rule}]"] = ((lambda dt=dt, mode=mode: to_mx(x, dt, 32, mode)), [x])
    return out


def main(argv=None) -> int:
    args = arguments(__doc__.split("\n\n")[0], argv)
    torch.set_num_threads(args.threads)
    n = 1 << args.log2n
    import torchao
    print(f"torchao {torchao.__version__}, PyTorch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}), "
          f"{args.threads} threads, 2^{args.log2n} float32 elements, ms (min / median), x copy (median)")
    rows = [measure(name, "torchao", fn, lambda data=data: [d.clone() for d in data], args.repeat, 36)
            for name, (fn, data) in _cases(n, np.random.default_rng(0)).items()]
    write_json(args.json, {"torchao": torchao.__version__, "torch": torch.__version__}, rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
