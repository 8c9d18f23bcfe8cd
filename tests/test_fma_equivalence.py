"""Issue 30, item 2: the target's fused multiply-add (math.fma: llvm-cpu's vfmadd on a host with FMA3,
CUDA's fma.rn) and the exact integer emulation (macros fma_func, fma64_func) give the same bits, and both
the oracle's (numerics.fma with x86's FTZ), on random triples built to hit the hard places: every
exponent (overflow, inf, NaN), products in and below the subnormal range, sums that cancel, sums on and
next to rounding ties, and results next to the smallest normal (x86 flushes by tininess after rounding).

The programs are the templates' own fma functions (``m.fma``/``m.fma_funcs``), rendered with a tf-xla
FakeQuant configuration's context for the target, compiled with the target's flags for each unit.
QDQ_FMA_TRIPLES sets how many triples per dtype (default 1,000,000; the device check runs 4,000,000)."""
import os

import numpy as np
import pytest

from qdq_compiler import compile as C
from qdq_compiler import emit, runtime, targets
from qdq_compiler.config import OpConfig
from qdq_compiler.numerics import bit_equal, fma

from targets_util import RUN_TARGETS, require

N = int(os.environ.get("QDQ_FMA_TRIPLES", "1000000"))
_PROGRAM = """{% import "macros.mlir.j2" as m with context %}
func.func @fma(%a: {{ k.ttype }}, %b: {{ k.ttype }}, %c: {{ k.ttype }}) -> {{ k.ttype }} {
{{ m.fma("%r", "%a", "%b", "%c") }}
  return %r : {{ k.ttype }}
}
{{ m.fma_funcs() }}
"""
# A configuration whose template rounds multiply-adds once (FakeQuant forward, tf-xla), for the context.
_CONFIG = {"float32": ("FakeQuantWithMinMaxArgs", {}), "float64": ("QuantizeAndDequantizeV4", {"round_mode": "HALF_UP"})}


def fma_program(target: str, dtype: str, unit: str):
    """(function, flags) of the fma alone on ``target`` with ``unit`` ("hardware" or "emulated")."""
    op, attrs = _CONFIG[dtype]
    cfg = OpConfig.make(op, attrs, dtype, "?", target, semantics="tf-xla", fma=unit)
    assert cfg.fma == unit
    text = emit._tidy(emit._env().from_string(_PROGRAM).render(k=emit.RenderContext(cfg, dict(cfg.attrs))))
    assert ("math.fma" in text) == (unit == "hardware")
    t = targets.get(target)
    flags = t.compile_flags + t.fma_flags(unit)
    _, vmfb = C.cached_compile(text, flags, what=f"fma {dtype} {unit}")
    return runtime.load(t.driver, C.cache_key(text, flags), vmfb, "fma", runtime.import_alignment(t.backend, flags))


def _daz(x: np.ndarray) -> np.ndarray:
    """The caller's contract (DAZ): subnormal operands are zeros of their sign."""
    tiny = np.finfo(x.dtype).tiny
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x) < tiny, np.copysign(x.dtype.type(0), x), x).astype(x.dtype)


def triples(dtype: str, n: int, seed: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dt = np.dtype(dtype)
    u = np.dtype(f"u{dt.itemsize}")
    bits, man = dt.itemsize * 8, np.finfo(dt).nmant
    rng = np.random.default_rng(seed)
    k = n // 6

    def raw(m):          # every bit pattern: all exponents, inf, NaN
        return rng.integers(0, 2 ** bits, m, dtype=np.uint64).astype(u).view(dt)

    def scaled(m, lo, hi, short=False):   # random sign and mantissa (or a short one), exponents in [lo, hi)
        mant = rng.random(m) + 1.0
        if short:        # 1 + a few bits: products and sums land exactly on ties
            mant = 1.0 + np.floor(rng.random(m) * 64) / 64
        v = np.ldexp(mant, rng.integers(lo, hi, m)) * rng.choice([-1.0, 1.0], m)
        return v.astype(dt)

    emin, emax = np.finfo(dt).minexp, np.finfo(dt).maxexp
    parts = [
        (raw(k), raw(k), raw(k)),
        # products around and below the smallest normal, small or cancelling addends
        (scaled(k, emin // 2 - 12, emin // 2 + 4), scaled(k, emin // 2 - 12, emin // 2 + 4),
         scaled(k, emin - 4, emin + 8)),
        # near overflow
        (scaled(k, emax // 2 - 2, emax // 2 + 2), scaled(k, emax // 2 - 2, emax // 2 + 2), scaled(k, emax - 3, emax)),
        # short mantissas: exact ties and values one bit off
        (scaled(k, -8, 8, True), scaled(k, -8, 8, True), scaled(k, -8 - man, 8, True)),
    ]
    # c cancels a*b to its rounding error (the residual alone), and results next to the smallest normal
    a, b = scaled(k, -20, 20), scaled(k, -20, 20)
    p = (a.astype(np.float64) * b.astype(np.float64)).astype(dt) if dt == np.float32 else a * b
    parts.append((a, b, -p))
    a = scaled(k, -2, 2)
    b = np.full(k, np.finfo(dt).tiny, dt) * dt.type(2) ** rng.integers(0, 3, k).astype(dt)
    c = (np.finfo(dt).tiny * rng.integers(-3, 4, k) * dt.type(2) ** -rng.integers(0, man + 2, k)).astype(dt)
    parts.append((a, b, c))
    a, b, c = (np.concatenate(x) for x in zip(*parts))
    return _daz(a), _daz(b), _daz(c)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_oracle_fma_flushes_by_tininess_after_rounding(dtype):
    """x86 under FTZ (TF 2.21, measured): a result that rounds to the smallest normal only on the
    subnormal grid is 0; one that rounds to it at full precision is kept."""
    dt = np.dtype(dtype)
    tiny, eps = np.finfo(dt).tiny, np.finfo(dt).epsneg        # epsneg = 2^-(p): 1 - epsneg is the largest below 1
    one_below = dt.type(1) - dt.type(eps)
    assert fma(one_below, tiny, dt.type(0), dt, ftz=True) == 0           # tiny*(1 - 2^-p): below after rounding
    assert fma(one_below, tiny, dt.type(0), dt) == tiny                  # the subnormal grid rounds it up
    assert fma(dt.type(1), tiny, dt.type(0), dt, ftz=True) == tiny
    assert np.signbit(fma(-one_below, tiny, dt.type(0), dt, ftz=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("target", ["cpu"] + [t for t in RUN_TARGETS if t != "cpu"] + ["cuda"])
def test_hardware_and_emulated_fma_agree(target, dtype):
    require(target)
    units = targets.get(target).fma_units()
    a, b, c = triples(dtype, N)
    want = fma(a, b, c, dtype, ftz=True)
    if dtype == "float64":   # the float64 emulations (the oracle's, macro fma64_func) are exact while
        #   |a*b| >= 2^-969 and no operand is near overflow (Veltkamp's split multiplies by 2^27 + 1) or
        #   below 2^-900 (its halves underflow): XLA's HALF_UP in float64 is x * scale + 0.5, where a
        #   product that small vanishes beside 0.5 whichever way it rounds
        with np.errstate(all="ignore"):
            prod = np.abs(a.astype(np.float64) * b)
            keep = (((prod >= 2.0 ** -969) & (prod < 2.0 ** 960)) | (a == 0) | (b == 0))
            for v in (a, b, c):
                keep &= ((np.abs(v) < 2.0 ** 960) & (np.abs(v) >= 2.0 ** -900)) | (v == 0)
        a, b, c, want = a[keep], b[keep], c[keep], want[keep]
    got = {u: fma_program(target, dtype, u)([a, b, c])[0] for u in units}
    for u, g in got.items():
        bad = ~((g.view(f"u{g.itemsize}") == want.view(f"u{g.itemsize}")) | (np.isnan(g) & np.isnan(want)))
        i = np.flatnonzero(bad)[:3]
        assert not bad.any(), (f"{target} {u}: {bad.sum()} of {len(a)} differ from the oracle, e.g. "
                               f"{[(a[j], b[j], c[j], g[j], want[j]) for j in i]}")
    if len(got) == 2:
        assert bit_equal(got["hardware"], got["emulated"])


@pytest.mark.parametrize("op,kw", [("FakeQuantWithMinMaxArgs", {"min": -1.5, "max": 2.0}),
                                   ("QuantizeAndDequantizeV4", {"input_min": np.float32(-1.0), "input_max": np.float32(2.0),
                                                                "range_given": False, "round_mode": "HALF_UP"})])
def test_fma_programs_import_numpy_arrays_as_they_are(op, kw):
    """+fma implies AVX, whose aligned 32-byte loads segfaulted on NumPy's 16-byte aligned arrays: the unit's
    programs keep 16-byte vectors (no lane forms), so large inputs at an address that is 16 mod 32 are
    imported, not copied, and give the oracle's bits (QDQ HALF_UP from the data: fma and a reduction)."""
    from qdq_compiler import execute, raw_ops
    from qdq_compiler.oracle import raw_ops as oracle_ops
    from qdq_compiler.validation import bind
    if "hardware" not in targets.get("cpu").fma_units():
        pytest.skip("this host's CPU has no FMA3 unit: the cpu target emulates")
    n = 1 << 20
    raw = np.empty(n + 16, np.float32)
    off = next(i for i in range(16) if (raw[i:].ctypes.data % 32) == 16)
    x = raw[off:off + n]
    x[:] = np.random.default_rng(5).standard_normal(n).astype(np.float32) * 2
    key = "inputs" if op.startswith("FakeQuant") else "input"
    call = bind(op, {key: x, **kw}, semantics="tf-xla")
    plan = execute.plan_for(call, "cpu")
    assert plan.fn.import_alignment == 16
    got = getattr(raw_ops, op)(**{key: x}, **kw, target="cpu", semantics="tf-xla")
    want = getattr(oracle_ops, op)(**{key: x}, **kw, semantics="tf-xla")
    assert bit_equal(got, want)
