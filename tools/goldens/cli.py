"""The one command for the golden vectors: build a set's cases, run them through its reference, write it.

    python -m tools.goldens --semantics tf-cpu                            # -> qdq_compiler/goldens/
    python -m tools.goldens --semantics tf-xla                            # -> qdq_compiler/goldens/xla/
    python -m tools.goldens --semantics tf-cpu --dtypes float16,bfloat16  # -> qdq_compiler/goldens/half/

Run from the repository root under the TF 2.21 virtualenv (/work/tfvenv). ``--list JSON`` writes the case
list without running TF; ``--check`` (tf-cpu) compares TF with the numpy model; ``--oracle PATH`` (tf-xla)
compares XLA with a module's ``xla_forward``.
"""
import argparse
import json
import os
import time

from qdq_compiler.ops import OPS

from . import gen_half, model, registry, tf_cpu, tf_half, tf_xla
from .caselib import as_generated, expectation, number
from .child import TF_VERSION
from .fmt import enc_case, host_description, hexf, write_set

GOLDENS = os.path.join("qdq_compiler", "goldens")
HALF_DTYPES = tuple(gen_half.TYPES)


def listing(cases, errors, tags):
    """The case list as --list writes it: each case as it will be written, expectations left empty."""
    out = []
    for c, kind in [(c, "outputs") for c in cases] + [(c, "error") for c in errors]:
        d = enc_case(c, {kind: {}}, tags(c))
        d.update(graph_check=c.get("graph_check", False), v1_mode=c.get("v1_mode"),
                 spec_expect=[[hexf(v) for v in o] for o in c["spec_expect"]] if "spec_expect" in c else None)
        out.append(d)
    return out


def write_list(path, cases, errors, tags):
    with open(path, "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(c) for c in listing(cases, errors, tags)) + "\n]\n")
    print("%d success and %d error candidates -> %s" % (len(cases), len(errors), path))


def reference_set(args):
    """tf-cpu or tf-xla: the registry's generators, the semantics' runner, one file per op."""
    ents = registry.entries(args.semantics)
    cases, errors = registry.candidates(args.semantics, ents, args.spec)

    def tags(c):
        return ents[c["op"]].family.tags(c)

    if args.list:
        return write_list(args.list, cases, errors, tags)
    runner = tf_cpu if args.semantics == "tf-cpu" else tf_xla
    problems = runner.run(cases, errors)
    number(cases + errors, ents)  # as listed, unless TF moved a case between success and error
    final = {op: [] for op in OPS if op in ents}
    for c in cases:
        if "result" in c:
            final[c["op"]].append(enc_case(c, expectation(c), tags(c)))
    for c in errors:
        final[c["op"]].append(enc_case(c, c["expect"], tags(c)))
    hosts = {note: host_description(note) for note in (False, True)}

    def header(op):  # tf-xla files also say which CPU answered (XLA:CPU contracts to FMA where it can)
        if args.semantics == "tf-cpu":
            return {"op": op, "tf_version": TF_VERSION}
        return {"op": op, "tf_version": TF_VERSION, "semantics": "tf-xla", "host": hosts[ents[op].family.fma_note]}

    write_set(args.out, final, header)
    print("TOTAL: %d success, %d errors" % (sum("result" in c for c in cases), len(errors)))
    for p in problems:
        print("NOTE:", p)
    if args.check:
        model.check(cases, final)
    if args.oracle:
        tf_xla.oracle_check(cases, args.oracle)


def half_set(args, dtypes):
    """The half set: the float32 tf-cpu FakeQuant cases in 16-bit types, answered by the definition."""
    ops = [op for op in registry.HALF if op in OPS]
    cases, stats = gen_half.candidates(args.goldens, ops, dtypes)
    if args.list:
        return write_list(args.list, cases, [], as_generated)
    kept = tf_half.run(cases, stats)
    final = {op: [enc_case(c, c["expect"], c["tags"]) for c in kept if c["op"] == op] for op in ops}
    write_set(args.out, final, lambda op: {"op": op, "tf_version": TF_VERSION, "semantics": "tf-cpu",
                                          "definition": tf_half.DEFINITION})
    tf_half.report(final, stats)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tools.goldens", description=__doc__.split("\n")[0])
    ap.add_argument("--semantics", choices=sorted(registry.SETS), default="tf-cpu")
    ap.add_argument("--dtypes", help="float16,bfloat16 (tf-cpu only): the half set, FakeQuant's 16-bit "
                    "definition; default: the types of TF's own kernels")
    ap.add_argument("--out", help="default: qdq_compiler/goldens[/xla|/half]")
    ap.add_argument("--list", metavar="JSON", help="only write the case list (no TF needed) and exit")
    ap.add_argument("--check", action="store_true", help="tf-cpu: compare every success case with the numpy model")
    ap.add_argument("--oracle", metavar="PATH", help="tf-xla: a .py file with xla_forward(op, arrays, attrs)")
    ap.add_argument("--spec", default="/work/shared/spec/tf_fake_quant_semantics.md",
                    help="tf-cpu: the spec whose section-6 vectors become cases (skipped if missing)")
    ap.add_argument("--goldens", default=GOLDENS, help="half: the folder of the float32 tf-cpu goldens")
    args = ap.parse_args(argv)
    dtypes = tuple(args.dtypes.split(",")) if args.dtypes else ()
    if dtypes and (args.semantics != "tf-cpu" or not set(dtypes) <= set(HALF_DTYPES)):
        ap.error("--dtypes takes %s, with --semantics tf-cpu" % ",".join(HALF_DTYPES))
    if args.check and (args.semantics != "tf-cpu" or dtypes):
        ap.error("--check is for the tf-cpu set")
    if args.oracle and args.semantics != "tf-xla":
        ap.error("--oracle is for the tf-xla set")
    args.out = args.out or os.path.join(GOLDENS, *(["half"] if dtypes else ["xla"] if args.semantics == "tf-xla" else []))
    t0 = time.time()
    if dtypes:
        half_set(args, [d for d in HALF_DTYPES if d in dtypes])
    else:
        reference_set(args)
    print("done in %.1f s" % (time.time() - t0))
