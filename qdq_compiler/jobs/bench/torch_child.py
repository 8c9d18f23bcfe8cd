"""PyTorch's nearest op timed in a process of its own (``qdqc bench``, torch_process.py): PyTorch at its best, its
input resident as a tensor, ``threads`` intra-op threads (the bench states them, equal to ours), not sharing the
process with IREE. ``torch.fake_quantize_per_tensor_affine`` or ``_per_channel_affine`` (axis 1), levels 0..255.

Two rows: the op alone (its result left as a tensor; PyTorch's CPU ops return when done) and the NumPy round trip
(``torch.from_numpy`` in, ``.numpy()`` out, as a user holding NumPy arrays calls it). Run as a script by any
Python that has PyTorch (it imports only NumPy and torch): ``python torch_child.py '<json spec>'``; prints one
JSON line. A NumPy copy of the data is timed beside them in this process (the rows' ratio to a copy).
"""
import json
import statistics
import sys
import time


def main(spec: dict) -> dict:
    import numpy as np
    import torch
    torch.set_num_threads(spec["threads"])
    with np.load(spec["inputs"]) as data:
        x, scale, zero_point = data["x"], data["scale"], data["zero_point"]
    if spec["kind"] == "per-tensor":
        s, z = float(scale), int(zero_point)

        def op(t):
            return torch.fake_quantize_per_tensor_affine(t, s, z, 0, 255)
    else:
        st, zt = torch.from_numpy(scale), torch.from_numpy(zero_point)

        def op(t):
            return torch.fake_quantize_per_channel_affine(t, st, zt, 1, 0, 255)
    resident = torch.from_numpy(x.copy())

    def alone():
        return op(resident)

    def round_trip():
        return op(torch.from_numpy(x)).numpy()
    round_trip()
    alone()
    times = {"op": [], "round_trip": [], "copy": []}
    for _ in range(spec["repeat"]):   # interleaved, as the parent interleaves its variants
        for key, f in (("op", alone), ("round_trip", round_trip), ("copy", x.copy)):
            t0 = time.perf_counter()
            r = f()
            times[key].append(time.perf_counter() - t0)
            del r
    return {"torch": torch.__version__, "threads": torch.get_num_threads(),
            **{k: {"median_s": statistics.median(v), "min_s": min(v),
                 "p90_s": sorted(v)[min(len(v) - 1, max(0, -(-9 * len(v) // 10) - 1))], "runs": len(v)} for k, v in times.items()}}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
