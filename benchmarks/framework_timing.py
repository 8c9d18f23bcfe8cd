"""What the scripts that time a reference framework in its own process share (torch_aten_bench.py,
onnxruntime_bench.py): their arguments and the timing loop. Standard library only: it runs in the framework's
virtualenv."""
from __future__ import annotations

import argparse
import statistics
import time


def arguments(description: str, argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--log2n", type=int, default=24)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", help="write the rows here")
    return p.parse_args(argv)


def time_ms(fn, repeat: int) -> list[float]:
    """``repeat`` timings of ``fn()`` in ms, after one warm-up call."""
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def result_row(case: str, prefix: str, t: list[float], copy: list[float], **extra) -> dict:
    """One result row: min and median of ``t``, the copy's median and the ratio of the medians."""
    return {"case": case, **extra, f"{prefix}_min_ms": min(t), f"{prefix}_median_ms": statistics.median(t),
            "copy_median_ms": statistics.median(copy), "x_copy": statistics.median(t) / statistics.median(copy)}


def measure(case: str, prefix: str, fn, copy_fn, repeat: int, width: int, **extra) -> dict:
    """Time ``fn`` and ``copy_fn`` (a copy of the same input bytes), print the row and return it."""
    copy = time_ms(copy_fn, repeat)
    r = result_row(case, prefix, time_ms(fn, repeat), copy, **extra)
    print(f"  {case:{width}s} {r[prefix + '_min_ms']:8.2f} / {r[prefix + '_median_ms']:8.2f}   x copy {r['x_copy']:6.2f}")
    return r


def write_json(path, header: dict, rows: list[dict], args) -> None:
    """The rows and what they were measured with, where --json says."""
    import json
    if path:
        with open(path, "w") as f:
            json.dump({**header, "threads": args.threads, "log2n": args.log2n, "rows": rows}, f, indent=1)
