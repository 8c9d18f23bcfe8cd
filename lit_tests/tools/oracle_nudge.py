#!/usr/bin/env python3
"""oracle_nudge.py MIN MAX NUM_BITS NARROW: the oracle's nudged FakeQuant range as exact hex bit patterns.

Prints one line, "nudged_min=0x... nudged_max=0x... scale=0x... inv=0x... qzero=0x...", from
qdq_compiler.numerics.nudge (the host arithmetic the oracle and the emitter share), so that a lit test can check the constants that `qdqc emit`
bakes into FakeQuantWithMinMaxArgs against the oracle, not only against numbers pasted by hand.
"""
import sys

import numpy as np

from qdq_compiler.numerics import bits, nudge


def main(argv):
    mn, mx, num_bits, narrow = float(argv[1]), float(argv[2]), int(argv[3]), argv[4].lower() in ("1", "true")
    n = nudge(np.float32(mn), np.float32(mx), num_bits, narrow)
    print(" ".join(f"{name}=0x{int(bits(np.asarray(getattr(n, name), np.float32))):08X}"
                   for name in ("nudged_min", "nudged_max", "scale", "inv", "qzero")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
