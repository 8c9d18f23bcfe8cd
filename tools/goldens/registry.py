"""Which ops each golden set covers, and which generator makes their cases: one line per op.

A line is op name -> Entry(case-id prefix, family, number of random cases). A family makes the cases of
all its registered ops in one call; families run in the order of their first line, and a family takes its
ops in line order, which is the order of its random draws (so moving a line changes the files). The tf-cpu
families draw in turn from one shared stream: a new family goes last, and the existing files stay as they
are.

Adding an op: write its generator (a Family in a gen_*.py module, or extend one) and add one line here.
An op of qdq_compiler.ops with no line is reported and gets no file; nothing asserts the two lists agree.
"""
import os
import sys

from qdq_compiler.ops import OPS

from . import declared, gen_fq, gen_qdq, gen_xla_fq, gen_xla_qdq
from .caselib import ARGS, ARGSG, PC, PCG, V1, V2, V3, V4, V4G, VARS, VARSG, Entry, Gen, number
from .model import zero_sign_ambiguous

CPU_SEED = 20260121  # the tf-cpu families' shared stream
GRAPH_EVERY = 7      # every 7th tf-cpu success case also runs in graph mode, compared with eager

TF_CPU = {
    V4: Entry("QDQ4", gen_qdq.FORWARD, 330),
    V2: Entry("QDQ2", gen_qdq.FORWARD, 180),
    V3: Entry("QDQ3", gen_qdq.FORWARD, 240),
    V1: Entry("QDQ1", gen_qdq.FORWARD, 160),
    V4G: Entry("QDQ4G", gen_qdq.V4GRAD, 200),
    ARGS: Entry("FQA", gen_fq.FAKE_QUANT, 220),
    ARGSG: Entry("FQAG", gen_fq.FAKE_QUANT, 140),
    VARS: Entry("FQV", gen_fq.FAKE_QUANT, 220),
    VARSG: Entry("FQVG", gen_fq.FAKE_QUANT, 160),
    PC: Entry("FQPC", gen_fq.FAKE_QUANT, 170),
    PCG: Entry("FQPCG", gen_fq.FAKE_QUANT, 150),
}
TF_XLA = {
    V2: Entry("XQDQ2", gen_xla_qdq.FAMILY),
    V3: Entry("XQDQ3", gen_xla_qdq.FAMILY),
    V4: Entry("XQDQ4", gen_xla_qdq.FAMILY),
    ARGS: Entry("XFQA", gen_xla_fq.FAMILY),
    ARGSG: Entry("XFQAG", gen_xla_fq.FAMILY),
    VARS: Entry("XFQV", gen_xla_fq.FAMILY),
    VARSG: Entry("XFQVG", gen_xla_fq.FAMILY),
    PC: Entry("XFQPC", gen_xla_fq.FAMILY),
    PCG: Entry("XFQPCG", gen_xla_fq.FAMILY),
}
SETS = {"tf-cpu": TF_CPU, "tf-xla": TF_XLA}
# The half set (tf-cpu in float16/bfloat16): the ops whose 16-bit form is defined as "widen, run TF's
# float32 kernel, round once"; their cases come from their float32 tf-cpu files (gen_half.py).
HALF = (ARGS, VARS, PC, ARGSG, VARSG, PCG)


def entries(semantics):
    """The set's lines for the ops the package has; the package's ops without a line are reported."""
    table = SETS[semantics]
    missing = [op for op in OPS if op not in table]
    unknown = [op for op in table if op not in OPS]
    if missing:
        print("note: no %s generator for %s (no file written)" % (semantics, ", ".join(missing)))
    if unknown:
        print("note: %s generators for ops the package lacks, skipped: %s" % (semantics, ", ".join(unknown)))
    return {op: e for op, e in table.items() if op in OPS}


def families(ents):
    """family -> {op: Entry}, families in the order of their first line."""
    out = {}
    for op, e in ents.items():
        out.setdefault(e.family, {})[op] = e
    return out


def candidates(semantics, ents, spec_path=None):
    """(success candidates, error candidates) of a set, ids assigned: the whole case list, without TF.
    tf-cpu adds the spec's vectors (first) and the declared error cases (edge_data.ERRORS)."""
    cpu = semantics == "tf-cpu"
    cases = []
    if cpu:
        if os.path.exists(spec_path):
            cases += [c for c in declared.spec_cases(spec_path)[0] if c["op"] in ents]
        else:
            print("WARNING: spec not found, V-vectors skipped", file=sys.stderr)
    shared = Gen(CPU_SEED)
    for family, ops in families(ents).items():
        cases += family.generate(shared if family.seed is None else Gen(family.seed), ops)
    errors = (declared.error_cases(ents) if cpu else []) + [c for c in cases if c.get("expect_error")]
    cases = [c for c in cases if not c.get("expect_error")]
    if cpu:
        for i, c in enumerate(cases):
            if zero_sign_ambiguous(c) and not c.get("deviation"):
                c["deviation"] = "zero_sign"
                c["note"] += " (data max is a zero of either sign after DAZ)"
            c["graph_check"] = i % GRAPH_EVERY == 0 or c.get("id", "").startswith("V")
    number(cases + errors, ents)
    return cases, errors
