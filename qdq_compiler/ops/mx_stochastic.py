"""Counter-based stochastic rounding for block-scaled (OCP MX) fake quantization, in NumPy.

The contract, the same on every target and every tiling:

* the key is the seed: ``(seed & 0xFFFFFFFF, seed >> 32)``, a seed in ``[0, 2**64)``;
* the counter is the element's flat C-order index ``i``: ``(i & 0xFFFFFFFF, i >> 32)``;
* the element's random word ``r`` is the first output word of Threefry-2x32 (20 rounds);
* a magnitude between two grid points rounds up iff ``r < F``, ``F`` the fraction of the way from the lower
  point truncated to 32 bits, so ``P(up) = F / 2**32`` (exactly the fraction when it has at most 32 bits).

Why Threefry and not Philox: Threefry needs only 32-bit wrapping add, xor and rotate (two shifts and an or),
which StableHLO has on every target (``templates/threefry.mlir.j2`` is the same function); Philox needs the high
half of a 32x32->64 multiply, which StableHLO lacks (it would need i64 on targets that do not all have it).
A counter (the index) rather than a stream makes each element's bits independent of how the work is split.
"""
from __future__ import annotations

import numpy as np

U32 = np.uint32
ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
KS_PARITY = 0x1BD11BDA
ROUNDS = 20
SEED_LIMIT = 1 << 64


def _rotl(x: np.ndarray, n: int) -> np.ndarray:
    return (x << U32(n)) | (x >> U32(32 - n))


def threefry2x32(key0, key1, ctr0, ctr1) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32, 20 rounds (Random123, JAX's ``threefry_2x32``), elementwise over broadcast uint32 arrays.

    Only wrapping uint32 add, xor and rotate-left: the operations the StableHLO macro uses, so both agree bit
    for bit."""
    k0, k1, x0, x1 = np.broadcast_arrays(*(np.asarray(a, dtype=U32) for a in (key0, key1, ctr0, ctr1)))
    ks = (k0, k1, k0 ^ k1 ^ U32(KS_PARITY))
    with np.errstate(over="ignore"):
        x0 = x0 + ks[0]
        x1 = x1 + ks[1]
        for r in range(ROUNDS):
            x0 = x0 + x1
            x1 = _rotl(x1, ROTATIONS[r % 8]) ^ x0
            if r % 4 == 3:  # key injection after every 4 rounds
                i = (r + 1) // 4
                x0 = x0 + ks[i % 3]
                x1 = x1 + ks[(i + 1) % 3] + U32(i)
    return x0, x1


def _check_seed(seed) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < SEED_LIMIT:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return int(seed)


def element_random_bits(seed: int, shape) -> np.ndarray:
    """Each element's random word: Threefry keyed by the seed, counted by the flat C-order index (first word).

    Depends only on (seed, index): any tiling of the array that keeps the flat index gets the same bits."""
    seed = _check_seed(seed)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.uint64)
    lo = (index & np.uint64(0xFFFFFFFF)).astype(U32)
    hi = (index >> np.uint64(32)).astype(U32)
    out0, _ = threefry2x32(U32(seed & 0xFFFFFFFF), U32(seed >> 32), lo, hi)
    return out0.reshape(shape)


def round_stochastic(v: np.ndarray, step: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Round ``|v|`` to a multiple of ``step`` (a power of two), up iff ``r < floor(frac * 2**32)``; sign kept.

    ``|v| / step`` and its floor are exact in float64 (step is a power of two), so ``frac`` is exact and its
    truncation to 32 bits is the one integer the compiled code compares too. A zero result keeps ``v``'s sign;
    NaN passes through."""
    v = np.asarray(v, dtype=np.float64)
    step = np.asarray(step, dtype=np.float64)
    r = np.asarray(r, dtype=U32)
    with np.errstate(invalid="ignore"):
        scaled = np.abs(v) / step
        whole = np.floor(scaled)
        frac = scaled - whole
        threshold = np.floor(np.ldexp(frac, 32))  # F: the fraction truncated to 32 bits, in [0, 2**32)
        up = r.astype(np.float64) < threshold
        magnitude = (whole + up) * step
    return np.where(np.isnan(v), v, np.copysign(magnitude, v))


def grid_step(a: np.ndarray, mbits: int, emin: int) -> np.ndarray:
    """The spacing of a binary float grid (``mbits`` mantissa bits, smallest normal exponent ``emin``) at ``a >= 0``:
    ``2**(max(floor(log2 a), emin) - mbits)``; subnormals (and 0) share the spacing of the smallest binade.

    ``np.frexp`` gives floor(log2 a) exactly (a = m * 2**e with m in [0.5, 1), so floor(log2 a) = e - 1)."""
    a = np.asarray(a, dtype=np.float64)
    _, e = np.frexp(a)
    exponent = np.where(a > 0, e - 1, emin)
    return np.ldexp(1.0, np.maximum(exponent, emin) - mbits)
