"""Issue 47 item 6: products and quotients next to the smallest normal, flushed as x86 flushes them under FTZ.

x86 detects tininess after rounding: a result that rounds below the smallest normal with an unbounded exponent
becomes 0, so one in [tiny*(1 - 2^-p), tiny*(1 - 2^-(p+1))), which the subnormal grid rounds up to tiny, is 0
in TF 2.21 (its CPU kernels and XLA:CPU) while NumPy and a target that keeps subnormals (lavapipe, CUDA) give
tiny. The oracle models it (numerics.ftz_mul/ftz_div), cpu and vmvx get it from the hardware, vulkan from the
templates' product functions (macros mul, div, ftz_op_func). TF below: tensorflow-cpu 2.21.0's own results for
these calls (eager and jit_compile=True, x86-64), recorded once; compared with numerics.bit_equal (raw bits, a
NaN's payload aside, as every golden here)."""
from fractions import Fraction

import numpy as np
import pytest

from qdq_compiler import compile as C
from qdq_compiler import emit, runtime, targets
from qdq_compiler import raw_ops as compiled
from qdq_compiler.config import OpConfig
from qdq_compiler.numerics import bit_equal, bits, flush, ftz_div, ftz_mul
from qdq_compiler.oracle import raw_ops as oracle

from checks import compile_ahead
from targets_util import RUN_TARGETS, require

F32 = np.float32


def f32s(*u):
    return np.array(u, np.uint32).view(F32)


# Inputs across the quantisation grids of the ranges below (whose outputs are NaN, 0 or a few ulps of 2^-126).
X = np.concatenate([f32s(0xbf800000, 0x80000000, 0x00000000, 0x00800000, 0x01000000, 0x3f800000),
                    np.linspace(-2, 2, 5, dtype=F32), f32s(0x83ffffff, 0x013fffff)])
BELOW, SLIVER, ABOVE = f32s(0x00fffffe, 0x00ffffff, 0x01000000)   # / 2: subnormal, (1 - 2^-24) 2^-126, 2^-126
# x * f32(1/3): below the sliver, in it, 2^-126 (XLA's scale = (max - min) * f32(1 / levels), 2-bit levels 3)
P_BELOW, P_SLIVER, P_ABOVE = f32s(0x013ffffe, 0x013fffff, 0x01400000)
# lo / -128 (QDQ's inv, 8-bit signed; XLA: lo * (1 / -128)): subnormal, (1 - 2^-24) 2^-126, 2^-126
L_BELOW, L_SLIVER, L_ABOVE = -f32s(0x03fffffe, 0x03ffffff, 0x04000000)
L64 = -np.array([0x007fffffffffffff], np.uint64).view(np.float64)[0]   # / -128: (1 - 2^-53) 2^-1022
XC = np.tile(X[:, None], (1, 3))   # one column per range: below, in, above the sliver
FQ2N = dict(num_bits=2, narrow_range=True)   # levels 2: scale = (max - min) / 2

CASES = {
    # FakeQuant, TF's Nudge: scale = (max - min) / 2; XlaNudge: (max - min) * 0.5
    "fq_per_channel_scale": ("FakeQuantWithMinMaxVarsPerChannel",
                             dict(inputs=XC, min=np.zeros(3, F32), max=np.array([BELOW, SLIVER, ABOVE]), **FQ2N)),
    "fq_vars_scale": ("FakeQuantWithMinMaxVars", dict(inputs=X, min=F32(0), max=SLIVER, **FQ2N)),
    "fq_vars_scale_negative": ("FakeQuantWithMinMaxVars", dict(inputs=X, min=-SLIVER, max=F32(0), **FQ2N)),
    "fq_vars_gradient_scale": ("FakeQuantWithMinMaxVarsGradient",
                               dict(gradients=np.ones_like(X), inputs=X, min=F32(0), max=SLIVER, **FQ2N)),
    "fq_per_channel_gradient_scale": ("FakeQuantWithMinMaxVarsPerChannelGradient",
                                      dict(gradients=np.ones_like(XC), inputs=XC, min=np.zeros(3, F32),
                                           max=np.array([BELOW, SLIVER, ABOVE]), **FQ2N)),
    # Args: the host's nudge (tf-xla folds it at compile time: IEEE, no tininess test, 2^-126 kept)
    "fq_args_scale": ("FakeQuantWithMinMaxArgs", dict(inputs=X, min=0.0, max=float(SLIVER), **FQ2N)),
    "fq_args_gradient_scale": ("FakeQuantWithMinMaxArgsGradient",
                               dict(gradients=np.ones_like(X), inputs=X, min=0.0, max=float(SLIVER), **FQ2N)),
    # XlaNudge's product (max - min) * f32(1/3)
    "fq_per_channel_product": ("FakeQuantWithMinMaxVarsPerChannel",
                               dict(inputs=XC, min=np.zeros(3, F32), max=np.array([P_BELOW, P_SLIVER, P_ABOVE]),
                                    num_bits=2, narrow_range=False)),
    # QuantizeAndDequantize: inv = lo / qmin (signed 8-bit, hi = 0: the min side sets the scale)
    "qdq_v2_inv": ("QuantizeAndDequantizeV2", dict(input=X, input_min=L_SLIVER, input_max=F32(0), range_given=True)),
    "qdq_v2_inv_half_up": ("QuantizeAndDequantizeV2", dict(input=X, input_min=L_SLIVER, input_max=F32(0),
                                                           range_given=True, round_mode="HALF_UP")),
    "qdq_v3_inv_per_channel": ("QuantizeAndDequantizeV3",
                               dict(input=XC, input_min=np.array([L_BELOW, L_SLIVER, L_ABOVE]),
                                    input_max=np.zeros(3, F32), num_bits=np.int32(8), range_given=True, axis=1)),
    "qdq_v4_inv_data_range": ("QuantizeAndDequantizeV4",
                              dict(input=np.concatenate([[L_SLIVER], -np.arange(5, dtype=F32) * F32(1e-37),
                                                         [0]]).astype(F32),
                                   input_min=F32(0), input_max=F32(0))),
    "qdq_v2_inv_f64": ("QuantizeAndDequantizeV2", dict(input=X.astype(np.float64), input_min=L64,
                                                       input_max=np.float64(0), range_given=True)),
    # XLA's V2/V4 inverse scale hi * f32(1/qmax), signed 3 bits (qmax 3); the kernel divides (no sliver)
    **{f"qdq_v2_product{sfx}": ("QuantizeAndDequantizeV2", dict(input=X, input_min=F32(0), input_max=hi,
                                                                range_given=True, num_bits=3))
       for sfx, hi in (("_below", P_BELOW), ("", P_SLIVER), ("_above", P_ABOVE))},
    # element-wise products and quotients in the sliver: x86's 0 and the subnormal grid's 2^-126 give one level
    **{f"qdq_x_times_scale{sfx}": ("QuantizeAndDequantizeV2",
                                   dict(input=f32s(0x07418306, 0x87418306, 0x07418305, 0x07418307), range_given=True,
                                        input_min=F32(-1572864), input_max=F32(1572864), round_mode=mode))
       for sfx, mode in (("", "HALF_TO_EVEN"), ("_half_up", "HALF_UP"))},
    "fq_shifted_times_inv": ("FakeQuantWithMinMaxVarsPerChannel",
                             dict(inputs=f32s(0x06808080, 0x0680807f, 0x06808081), min=np.zeros(3, F32),
                                  max=np.full(3, 2.0 ** 20, F32))),
    "fq_shifted_over_scale": ("FakeQuantWithMinMaxVars",
                              dict(inputs=f32s(0x0a7fffff, 0x0a7ffffe, 0x0a800000), min=F32(0), max=F32(2.0 ** 21),
                                   **FQ2N)),
}

# TF 2.21 for each case: the raw bits of each output, in hex (one tuple when tf-cpu and tf-xla agree).
TF = {
    'fq_per_channel_scale': {
        'tf-cpu':
            (('0 0 0 0 0 0 0 0 0 0 0 800000 0 0 1000000 0 0 1000000 0 0 0 0 0 0 0 0 0 0 0 1000000 0 0 '
              '1000000 0 0 0 0 0 1000000'),),
        'tf-xla':
            (('ffc00000 ffc00000 0 ffc00000 ffc00000 0 ffc00000 ffc00000 0 ffc00000 ffc00000 800000 '
              'ffc00000 ffc00000 1000000 ffc00000 ffc00000 1000000 ffc00000 ffc00000 0 ffc00000 '
              'ffc00000 0 ffc00000 ffc00000 0 ffc00000 ffc00000 1000000 ffc00000 ffc00000 1000000 '
              'ffc00000 ffc00000 0 ffc00000 ffc00000 1000000'),),
    },
    'fq_vars_scale':
        (('ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 '
          'ffc00000 ffc00000 ffc00000'),),
    'fq_vars_scale_negative':
        (('ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 ffc00000 '
          'ffc00000 ffc00000 ffc00000'),),
    'fq_vars_gradient_scale': {
        'tf-cpu':
            ('0 3f800000 3f800000 0 0 0 0 0 3f800000 0 0 0 0',
             '40800000',
             '40c00000',),
        'tf-xla':
            ('0 0 0 0 0 0 0 0 0 0 0 0 0',
             '0',
             '0',),
    },
    'fq_per_channel_gradient_scale': {
        'tf-cpu':
            (('0 0 0 3f800000 3f800000 3f800000 3f800000 3f800000 3f800000 0 0 3f800000 0 0 3f800000 0 '
              '0 0 0 0 0 0 0 0 3f800000 3f800000 3f800000 0 0 0 0 0 0 0 0 0 0 0 0'),
             '40800000 40800000 40800000',
             '40c00000 40c00000 40800000',),
        'tf-xla':
            (('0 0 0 0 0 3f800000 0 0 3f800000 0 0 3f800000 0 0 3f800000 0 0 0 0 0 0 0 0 0 0 0 '
              '3f800000 0 0 0 0 0 0 0 0 0 0 0 0'),
             '0 0 40800000',
             '0 0 40800000',),
    },
    'fq_args_scale': {
        'tf-cpu':
            ('0 0 0 0 0 0 0 0 0 0 0 0 0',),
        'tf-xla':
            ('0 0 0 800000 1000000 1000000 0 0 0 1000000 1000000 0 1000000',),
    },
    'fq_args_gradient_scale': {
        'tf-cpu':
            ('0 3f800000 3f800000 0 0 0 0 0 3f800000 0 0 0 0',),
        'tf-xla':
            ('0 0 0 0 0 0 0 0 0 0 0 0 0',),
    },
    'fq_per_channel_product': {
        'tf-cpu':
            (('0 0 0 0 0 0 0 0 0 0 0 800000 0 0 1000000 0 0 1400000 0 0 0 0 0 0 0 0 0 0 0 1400000 0 0 '
              '1400000 0 0 0 0 0 1400000'),),
        'tf-xla':
            (('ffc00000 ffc00000 0 ffc00000 ffc00000 0 ffc00000 ffc00000 0 ffc00000 ffc00000 800000 '
              'ffc00000 ffc00000 1000000 ffc00000 ffc00000 1400000 ffc00000 ffc00000 0 ffc00000 '
              'ffc00000 0 ffc00000 ffc00000 0 ffc00000 ffc00000 1400000 ffc00000 ffc00000 1400000 '
              'ffc00000 ffc00000 0 ffc00000 ffc00000 1400000'),),
    },
    'qdq_v2_inv':
        ('80000000 80000000 0 0 0 0 80000000 80000000 0 0 0 80000000 0',),
    'qdq_v2_inv_half_up':
        ('80000000 0 0 0 0 0 80000000 80000000 0 0 0 80000000 0',),
    'qdq_v3_inv_per_channel':
        (('80000000 80000000 84000000 80000000 80000000 80000000 0 0 0 0 0 800000 0 0 1000000 0 0 '
          '3fe0000 80000000 80000000 84000000 80000000 80000000 84000000 0 0 0 0 0 3fe0000 0 0 3fe0000 '
          '80000000 80000000 84000000 0 0 1400000'),),
    'qdq_v4_inv_data_range':
        ('80000000 80000000 80000000 80000000 80000000 80000000 0',),
    'qdq_v2_inv_f64':
        (('8000000000000000 8000000000000000 0 0 0 0 8000000000000000 8000000000000000 0 0 0 '
          '8000000000000000 0'),),
    'qdq_v2_product_below': {
        'tf-cpu':
            ('80000000 80000000 0 0 0 0 80000000 80000000 0 0 0 80000000 0',),
        'tf-xla':
            ('80000000 80000000 80000000 0 0 0 80000000 80000000 80000000 0 0 80000000 0',),
    },
    'qdq_v2_product': {
        'tf-cpu':
            ('80000000 80000000 0 0 0 0 80000000 80000000 0 0 0 80000000 0',),
        'tf-xla':
            ('80000000 80000000 80000000 0 0 0 80000000 80000000 80000000 0 0 80000000 0',),
    },
    'qdq_v2_product_above':
        (('81800000 80000000 0 800000 1000000 1400000 81800000 81800000 0 1400000 1400000 81800000 '
          '1400000'),),
    'qdq_x_times_scale':
        ('0 80000000 0 0',),
    'qdq_x_times_scale_half_up':
        ('0 0 0 0',),
    'fq_shifted_times_inv':
        ('0 0 0',),
    'fq_shifted_over_scale':
        ('0 0 0',),
}


def _expected(name: str, semantics: str, outputs) -> list:
    want = TF[name]
    want = want[semantics] if isinstance(want, dict) else want
    out = []
    for text, got in zip(want, outputs):
        u = np.array([int(h, 16) for h in text.split()], np.uint64 if got.dtype == np.float64 else np.uint32)
        out.append(u.view(got.dtype).reshape(got.shape))
    return out


def _run(name: str, semantics: str, target: str | None = None) -> list:
    """The case's outputs from the oracle, or compiled for ``target``."""
    op, kw = CASES[name]
    r = getattr(oracle, op)(**kw, semantics=semantics) if target is None else \
        getattr(compiled, op)(**kw, semantics=semantics, target=target)
    return list(r) if isinstance(r, tuple) else [r]


def _hex(a) -> str:
    return " ".join(f"{int(u):x}" for u in bits(a).reshape(-1))


def _mismatches(got, name: str, semantics: str) -> list:
    want = _expected(name, semantics, got)
    if len(got) != len(want):
        return [f"{name} {semantics}: {len(got)} outputs, TF has {len(want)}"]
    return [f"{name} {semantics} output {i}: got {_hex(g)}, TF {_hex(w)}"
            for i, (g, w) in enumerate(zip(got, want)) if not bit_equal(g, w)]


# -- the rule, in the oracle's arithmetic ------------------------------------------------------------------


def _x86(op, a, b, p: int, emin: int):
    """The rule from its definition, in exact rationals: the result rounded to p bits (ties to even) with an
    unbounded exponent; 0 of its sign if that is below 2^emin, else the IEEE result."""
    exact = Fraction(float(a)) * Fraction(float(b)) if op == "mul" else Fraction(float(a)) / Fraction(float(b))
    ieee = (np.multiply if op == "mul" else np.divide)(a, b)
    if exact == 0:
        return ieee
    q = abs(exact)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    e += 1 if q >= Fraction(2) ** (e + 1) else (-1 if q < Fraction(2) ** e else 0)   # 2^e <= q < 2^(e+1)
    m = q / Fraction(2) ** (e - p + 1)
    n, rest = divmod(m.numerator, m.denominator)
    n += 1 if 2 * rest > m.denominator or (2 * rest == m.denominator and n % 2) else 0
    tiny = Fraction(n) * Fraction(2) ** (e - p + 1) < Fraction(2) ** emin
    return np.copysign(ieee.dtype.type(0), ieee) if tiny else ieee


def _pairs(dtype, n: int, seed: int = 47):
    """(a, b) normal or zero, whose products and quotients land around the smallest normal: products a * b with
    b = tiny / a jittered by a few ulps, quotients by powers of two (the only divisors whose quotient can land in
    the sliver) of all-ones and nearby significands, plus the sliver's two ends and its neighbours."""
    dt = np.dtype(dtype)
    fi = np.finfo(dt)
    rng = np.random.default_rng(seed)
    a = np.ldexp(1 + rng.random(n), rng.integers(-20, -1, n)) * rng.choice([-1.0, 1.0], n)   # b stays normal
    b = (np.float64(fi.tiny) / a * (1 + (rng.random(n) - 0.5) * 2.0 ** -(fi.nmant - 2))).astype(dt)
    a = a.astype(dt)
    ones = np.float64(2) - np.ldexp(rng.integers(1, 8, n).astype(np.float64), -fi.nmant)   # 2 - k ulp
    k = rng.integers(-40, 1, n)
    qa = np.ldexp(ones, k).astype(dt) * rng.choice([-1, 1], n).astype(dt)
    qb = np.ldexp(np.float64(1), k - fi.minexp + 1).astype(dt)   # qa / qb = ones * 2^(minexp - 1)
    one_below = dt.type(1) - dt.type(fi.epsneg)
    tie_a, tie_b = TIE[dt.name]
    ends_a = np.array([one_below, one_below, 1, -one_below, 1, tie_a], dt)
    ends_b = np.array([fi.tiny, np.nextafter(fi.tiny, dt.type(1)), fi.tiny, fi.tiny, 0, tie_b], dt)
    return flush(np.concatenate([a, qa, ends_a])), flush(np.concatenate([b, qb, ends_b]))   # DAZ, as the callers


# a * b = tiny * (1 - 2^-(p+1)) exactly, the sliver's upper (open) end: a tie at full precision, rounded up to
# tiny and kept ((2^25 - 1) = 31 * 1082401, (2^54 - 1) = 3 * 6004799503160661)
TIE = {"float32": (31 * 2.0 ** -12, 1082401 * 2.0 ** -139),
       "float64": (3 * 2.0 ** -12, 6004799503160661 * 2.0 ** -1064)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_oracle_multiplies_and_divides_as_x86(dtype):
    """numerics.ftz_mul/ftz_div (the doubled-operand test) against the rule computed exactly; the sliver's
    lower end 0x3f7fffff * 2^-126 is 0, 1 * 2^-126 is kept; 0x3f7fffff / 2^126 is 0."""
    dt = np.dtype(dtype)
    fi = np.finfo(dt)
    a, b = _pairs(dt, 3000)
    want_mul = np.array([_x86("mul", x, y, fi.nmant + 1, fi.minexp) for x, y in zip(a, b)], dt)
    nz = b != 0
    want_div = np.array([_x86("div", x, y, fi.nmant + 1, fi.minexp) for x, y in zip(a[nz], b[nz])], dt)
    assert bit_equal(ftz_mul(a, b), want_mul)
    assert bit_equal(ftz_div(a[nz], b[nz]), want_div)
    with np.errstate(all="ignore"):
        hits = (flush(a * b) != want_mul).sum() + (flush(a[nz] / b[nz]) != want_div).sum()
    assert hits > 100   # the inputs do reach the sliver, where flushing NumPy's result is not enough
    one_below, tiny = dt.type(1) - dt.type(fi.epsneg), fi.tiny
    assert ftz_mul(one_below, tiny) == 0 and np.signbit(ftz_mul(-one_below, tiny))
    assert ftz_mul(dt.type(1), tiny) == tiny
    assert ftz_mul(*(dt.type(v) for v in TIE[dtype])) == tiny
    two_emin = dt.type(2.0 ** -fi.minexp)
    assert ftz_div(one_below, two_emin) == 0 and ftz_div(dt.type(1), two_emin) == tiny


# -- the templates' product and quotient, compiled ---------------------------------------------------------

_PROGRAM = """{% import "macros.mlir.j2" as m with context %}
func.func @ops(%a: {{ k.ptype }}, %b: {{ k.ptype }}) -> ({{ k.ptype }}, {{ k.ptype }}) {
{{ m.mul("%p", "%a", "%b") }}
{{ m.div("%q", "%a", "%b") }}
  return %p, %q : {{ k.ptype }}, {{ k.ptype }}
}
{{ m.flush_funcs() }}
{{ m.ftz_op_funcs() }}
"""


def ops_program(target: str, dtype: str):
    """macros mul and div on per-channel parameters ([C]) of a QuantizeAndDequantizeV2 configuration."""
    cfg = OpConfig.make("QuantizeAndDequantizeV2", {"axis": 0, "range_given": True}, dtype, "?", target)
    text = emit._tidy(emit._env().from_string(_PROGRAM).render(k=emit.RenderContext(cfg, dict(cfg.attrs))))
    assert ("@multiply_ftz_param" in text) == targets.get(target).quirks.keeps_denormals
    t = targets.get(target)
    _, vmfb = C.cached_compile(text, t.compile_flags, what=f"mul/div {dtype}")
    return runtime.load(t.driver, C.cache_key(text, t.compile_flags), vmfb, "ops",
                        runtime.import_alignment(t.backend, t.compile_flags))


# cuda keeps subnormals as lavapipe does (the same product functions); it runs where a device is.
TARGETS = RUN_TARGETS + [t for t in ("cuda",) if t not in RUN_TARGETS]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("target", TARGETS)
def test_targets_multiply_and_divide_as_x86(target, dtype):
    """The range parameters' products and quotients (macros mul, div) give numerics.ftz_mul/ftz_div's bits:
    cpu and vmvx by their FTZ hardware, vulkan and cuda (subnormals kept) by the doubled-operand test."""
    require(target)
    a, b = _pairs(dtype, 20000)
    p, q = ops_program(target, dtype)([a, b])
    assert bit_equal(p, ftz_mul(a, b)), f"{target}: {(p != ftz_mul(a, b)).sum()} products differ"
    assert bit_equal(q, ftz_div(a, b)), f"{target}: {(q != ftz_div(a, b)).sum()} quotients differ"


# -- the ops at the sliver, against TF 2.21 -------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_oracle_matches_tf_at_the_sliver(name):
    bad = [m for sem in ("tf-cpu", "tf-xla") for m in _mismatches(_run(name, sem), name, sem)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("target", TARGETS)
def test_compiled_matches_tf_at_the_sliver(target):
    """Every case under both semantics on one target, so that a failure lists them all."""
    require(target)
    compile_ahead(lambda n=name, s=sem: _run(n, s, target) for name in CASES for sem in ("tf-cpu", "tf-xla"))
    bad = []
    for name in CASES:
        for sem in ("tf-cpu", "tf-xla"):
            bad += _mismatches(_run(name, sem, target), name, sem)
    assert not bad, "\n".join(bad)
