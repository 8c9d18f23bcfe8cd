#!/usr/bin/env python3
"""The memory roof of an element-wise op on this machine: how fast NumPy moves the same bytes on every core.

A kernel that reads ``in_bytes`` and writes ``out_bytes`` per element cannot beat the time this machine
takes to read and write that much, whatever its arithmetic. Each pattern here is a NumPy cast over
pre-faulted arrays (no allocation in the timed call), split over one thread per core (NumPy releases the
GIL), so the figure is the machine's, not one framework's:

    python benchmarks/memory_roof.py [--log2n 24] [--repeat 15] [--threads N]

Q (float32 -> int8: reads 4, writes 1 byte per element), DQ (int8 -> float32: 1 and 4), the pair (float32 ->
float32: 4 and 4). A claim such as "2x faster than onnxruntime" is only possible where onnxruntime's time
is at least twice the roof.
"""
from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np

PATTERNS = (("Q: float32 -> int8 (4 + 1 bytes)", np.int32, np.int8),
            ("DQ: int8 -> float32 (1 + 4 bytes)", np.int8, np.float32),
            ("pair: float32 -> float32 (4 + 4 bytes)", np.float32, np.float32))


def _timed(fn, threads: int, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        workers = [threading.Thread(target=fn, args=(i,)) for i in range(threads)]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        out.append(time.perf_counter() - t0)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    n = 1 << args.log2n
    print(f"2^{args.log2n} elements, {args.threads} threads, ms (min / median) and GB/s at the minimum")
    for name, src_t, dst_t in PATTERNS:
        src = np.ones(n, src_t)
        dst = np.zeros(n, dst_t)   # touched: no page faults in the timed calls
        part = -(-n // args.threads)

        def move(i, src=src, dst=dst):
            np.copyto(dst[i * part:(i + 1) * part], src[i * part:(i + 1) * part], casting="unsafe")

        ts = _timed(move, args.threads, args.repeat)
        nbytes = src.nbytes + dst.nbytes
        print(f"  {name:42s} {min(ts) * 1e3:7.2f} / {np.median(ts) * 1e3:7.2f} ms  {nbytes / min(ts) / 1e9:5.1f} GB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
