"""Memory (issue 8.5): 10,000 compiled calls in a loop keep the resident set flat.

The loop cycles through a single-output op, a multi-output op (namedtuple of three results) and a
per-channel op, so that argument marshalling, result copies and the namedtuple packing are all
exercised. After a warm-up (compiles, first loads, allocator pools), the growth of RSS over the
10,000 calls must stay under a few MB: a leak of one result buffer per call (>= 1 KiB here) would
be 10 MB or more.
"""
from __future__ import annotations

import gc
import os

import numpy as np

import qdq_compiler as q
from qdq_compiler.oracle import raw_ops as oracle
from qdq_compiler.numerics import bit_equal

CALLS = 10_000
MAX_GROWTH_MB = 4.0


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _calls():
    x = np.linspace(-3, 3, 256, dtype=np.float32)   # 1 KiB per array
    g = np.ones_like(x)
    x2 = x.reshape(32, 8)
    mn8, mx8 = np.full(8, -1, np.float32), np.full(8, 1, np.float32)
    return [
        (q.raw_ops.FakeQuantWithMinMaxArgs, oracle.FakeQuantWithMinMaxArgs, dict(inputs=x, min=-1.0, max=1.0)),
        (q.raw_ops.FakeQuantWithMinMaxVarsGradient, oracle.FakeQuantWithMinMaxVarsGradient,
         dict(gradients=g, inputs=x, min=np.float32(-1), max=np.float32(1), num_bits=4)),
        (q.raw_ops.QuantizeAndDequantizeV4, oracle.QuantizeAndDequantizeV4,
         dict(input=x2, input_min=mn8, input_max=mx8, range_given=True, axis=1)),
    ]


def test_rss_flat_over_10000_calls():
    calls = _calls()
    for fn, ref, kw in calls:  # compile/load, and check the loop computes the right thing
        got, want = fn(**kw), ref(**kw)
        for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert bit_equal(a, b)
    for i in range(600):  # warm-up: allocator pools, IREE's buffer caches
        fn, _, kw = calls[i % len(calls)]
        fn(**kw)
    gc.collect()
    before = rss_mb()
    for i in range(CALLS):
        fn, _, kw = calls[i % len(calls)]
        fn(**kw)
    gc.collect()
    growth = rss_mb() - before
    assert growth < MAX_GROWTH_MB, f"RSS grew by {growth:.1f} MB over {CALLS} calls (bound {MAX_GROWTH_MB} MB)"


def test_rss_flat_over_failing_calls():
    """Bad input that is rejected (validation errors with tracebacks) does not accumulate either."""
    x = np.linspace(-3, 3, 256, dtype=np.float32)
    bad = dict(inputs=x, min=np.float32(1), max=np.zeros(3, np.float32))
    for _ in range(300):
        try:
            q.raw_ops.FakeQuantWithMinMaxVars(**bad)
        except q.QDQError:
            pass
    gc.collect()
    before = rss_mb()
    for _ in range(3000):
        try:
            q.raw_ops.FakeQuantWithMinMaxVars(**bad)
        except q.QDQError:
            pass
    gc.collect()
    growth = rss_mb() - before
    assert growth < MAX_GROWTH_MB, f"RSS grew by {growth:.1f} MB over 3000 rejected calls"


def test_small_calls_take_the_short_path_only_where_it_is_exact():
    """runtime.LoadedFunction.call_small binds only plain arrays (C-contiguous, writable, native, aligned,
    small); anything else declines (None) and the general path copies it. Both give the oracle's bits."""
    from qdq_compiler import execute
    from qdq_compiler.validation import bind
    base = np.linspace(-2, 2, 33, dtype=np.float32)
    base[5] = np.nan
    readonly = base[:16].copy()
    readonly.setflags(write=False)
    cases = {"plain": (base[:16].copy(), True), "reshaped view": (base[:16].copy().reshape(4, 4), True),
             "offset view": (base[1:17], False), "read-only": (readonly, False),
             "strided": (base[::2][:16], True),  # bind makes it contiguous: a fresh array
             "big-endian": (base[:16].astype(">f4"), True)}  # bind makes it native
    for what, (x, short) in cases.items():
        kw = dict(inputs=x, min=-1.0, max=1.5)
        call = bind("FakeQuantWithMinMaxArgs", kw)
        fn, args, view = execute.prepare(call, "cpu")
        assert fn.storage_args == (0,)  # cpu programs write their result into caller storage
        storage = [execute.caller_storage(call, fn, view)[0]]
        got = fn.call_small(args[:1], args[1:], storage)
        assert (got is not None) == short, what
        assert fn.call_small(args[:1], args[1:]) is None, what  # storage missing: the general path
        want = oracle.FakeQuantWithMinMaxArgs(**kw)
        assert bit_equal(q.raw_ops.FakeQuantWithMinMaxArgs(**kw), want), what
        if got is not None:
            assert got[0] is storage[0], what  # the result is the storage itself, not a copy
            assert bit_equal(got[0].reshape(want.shape), want), what
    big = np.zeros(1 << 15, np.float32)  # 128 KiB: results are views of device memory, never the short path
    call = bind("FakeQuantWithMinMaxArgs", dict(inputs=big, min=-1.0, max=1.0))
    fn, args, view = execute.prepare(call, "cpu")
    assert fn.call_small(args[:1], args[1:], [execute.caller_storage(call, fn, view)[0]]) is None


def test_large_results_come_from_a_pool_and_run_on_every_core():
    """A large result is written into caller storage from the local-sync device's caching pool: a
    dropped result's buffer serves the next call (its pages stay faulted in), and with nothing for the
    module to allocate, inputs above TASK_MAX_BYTES still go to local-task's workers. ``out=`` arrays the
    module cannot write in place (misaligned, or sharing memory with an input) are filled from pooled
    storage; every way gives the oracle's bits."""
    from qdq_compiler import dtypes, execute, runtime
    from qdq_compiler.validation import bind
    x = np.linspace(-3, 3, 1 << 18, dtype=np.float32)
    x[::97] = -0.0
    kw = dict(inputs=x, min=np.float32(-2.5), max=np.float32(3.1))
    want = oracle.FakeQuantWithMinMaxVars(**kw)
    got = q.raw_ops.FakeQuantWithMinMaxVars(**kw)
    assert bit_equal(got, want)
    owner = got
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    assert type(owner.base).__name__ == "_Keep"  # a view of the pooled buffer, no copy
    first = got.ctypes.data
    del got, owner
    again = q.raw_ops.FakeQuantWithMinMaxVars(**kw)
    assert again.ctypes.data == first  # the dropped buffer came back from the pool
    assert bit_equal(again, want)
    held = again  # kept alive: the next result must get other memory
    third = q.raw_ops.FakeQuantWithMinMaxVars(**kw)
    assert third.ctypes.data != held.ctypes.data and bit_equal(third, want) and bit_equal(held, want)
    for narrow in ("float16", "bfloat16"):  # pooled storage in an extension dtype keeps its dtype
        kw16 = {k: v.astype(dtypes.get(narrow).np) for k, v in kw.items()}
        got16 = q.raw_ops.FakeQuantWithMinMaxVars(**kw16)
        assert got16.dtype == kw16["inputs"].dtype and bit_equal(got16, oracle.FakeQuantWithMinMaxVars(**kw16))
    # execute.run's out=: aligned (written in place), misaligned, and the input itself (in place over x)
    call = bind("FakeQuantWithMinMaxVars", kw)
    aligned = np.empty_like(x)
    assert execute.run(call, "cpu", out=aligned)[0] is aligned and bit_equal(aligned, want)
    offset = np.empty(x.size + 1, np.float32)[1:]  # 4 bytes past NumPy's 16-byte alignment
    assert execute.run(call, "cpu", out=offset)[0] is offset and bit_equal(offset, want)
    inplace = x.copy()
    r = execute.run(bind("FakeQuantWithMinMaxVars", dict(kw, inputs=inplace)), "cpu", out=inplace)
    assert r[0] is inplace and bit_equal(inplace, want)
    fn, args, _ = execute.prepare(call, "cpu")
    huge = [np.empty(runtime.task_max_bytes() // 4 + 16, np.float32)] + args[1:]  # never touched
    assert fn.pick_driver(huge) == "local-task"
    assert fn.pick_driver(args) == "local-task"  # 1 MiB of input: the task threshold
    assert fn.pick_driver([args[0][:4096]] + args[1:]) == "local-sync"  # 16 KiB: under it
