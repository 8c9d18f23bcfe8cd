"""One TensorFlow raw op timed in a process of its own (``qdqc bench``): TF at its best, its inputs resident
as ``tf.constant``, not sharing the process (or its cores' thread pools) with IREE.

Two rows: the op alone (its result left as a tensor; TF's CPU ops return when done) and the NumPy round trip
(NumPy in, ``.numpy()`` out, as a user holding NumPy arrays calls it); TF's intra-op threads set to ``threads``
(the bench's, equal to ours), and a NumPy copy of the data timed beside them in this process. ``xla`` runs the op inside
``tf.function(jit_compile=True)``: XLA's answer, semantics tf-xla. Run as a script by any Python that has
TensorFlow (it imports only NumPy and TF): ``python tf_child.py '<json spec>'``; prints one JSON line.
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _timed(f, repeat: int) -> list[float]:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = f()
        ts.append(time.perf_counter() - t0)
        del r
    return ts


def main(spec: dict) -> dict:
    import numpy as np
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(spec.get("threads", 0))
    with np.load(spec["inputs"]) as data:
        arrays = {k: data[k] for k in data.files}
    op = getattr(tf.raw_ops, spec["op"])
    attrs = spec["attrs"]

    def call(**tensors):
        return op(**tensors, **attrs)
    fn = tf.function(call, jit_compile=True) if spec["xla"] else call
    resident = {k: tf.constant(v) for k, v in arrays.items()}

    def alone():
        return fn(**resident)

    def round_trip():
        out = fn(**{k: tf.constant(v) for k, v in arrays.items()})
        return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else out.numpy()
    round_trip()          # compiles (XLA) and warms the allocator
    alone()
    data = arrays[spec["data"]] if spec.get("data") in arrays else next(iter(arrays.values()))
    times = {"op": [], "round_trip": [], "copy": []}
    for _ in range(spec["repeat"]):   # interleaved, as the parent interleaves its variants
        times["op"] += _timed(alone, 1)
        times["round_trip"] += _timed(round_trip, 1)
        times["copy"] += _timed(data.copy, 1)
    return {"tensorflow": tf.__version__, "xla": spec["xla"],
            "threads": tf.config.threading.get_intra_op_parallelism_threads(),
            **{k: {"median_s": statistics.median(v), "min_s": min(v),
                 "p90_s": sorted(v)[min(len(v) - 1, max(0, -(-9 * len(v) // 10) - 1))], "runs": len(v)} for k, v in times.items()}}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
