"""``qdqc``: the command line. Argument parsing only; the work is done by the package's jobs.

Every bad input exits with status 2 and one line on stderr (``qdqc: error: ...``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import numpy as np

from . import dtypes, ops, semantics
from .errors import QDQError, QDQWarning
from .cli_cluster import add_cluster_options, add_worker, cluster_address
from .cli_help import EXAMPLES
from .cli_config import attrs_from, config_from, dtype_from, input_types, parse_attr_value  # noqa: F401 (the API)
from .cli_inputs import as_saved, negative_literals, read_inputs
from .cli_interrupt import interrupted, run_interruptible
from .outputs import check_writable, save_arrays, write_atomic

_DTYPE_ALIASES = ", ".join(d.short for d in dtypes.FLOATS.values())   # the dtype table's CLI names



def _count(n: int, word: str) -> str:
    """'1 input', '3 inputs'."""
    return f"{n} {word}{'' if n == 1 else 's'}"


# -- commands ----------------------------------------------------------------------------------------


def cmd_ops(args):
    if args.json:
        out = {name: {"namespace": s.namespace, "family": s.family.name, "inputs": list(s.input_names),
                      "outputs": list(s.outputs),
                      "dtypes": {sem: list(s.family.rules(sem).dtypes) for sem in semantics.names() if s.family.answers(sem)},
                      "attrs": {a.name: {"type": a.kind.__name__, "default": a.default,
                                         **({"choices": list(a.choices)} if a.choices else {})} for a in s.user_attrs}}
               for name, s in ops.OPS.items()}
        print(json.dumps(out, indent=1))
        return 0
    shown = None
    for name, s in sorted(ops.OPS.items(), key=lambda kv: list(semantics.FRAMEWORKS).index(kv[1].namespace)):
        if s.namespace != shown:
            shown = s.namespace
            where = {"tf": "qdq_compiler.raw_ops", "aten": "qdq_compiler.aten"}.get(shown, shown)
            print(f"# {semantics.framework(shown)} ({where}; semantics {', '.join(semantics.names(shown))})")
        attrs = ", ".join(f"{a.name}={a.default!r}" for a in s.user_attrs)
        dts = "; ".join(f"{', '.join(s.family.rules(sem).dtypes)} ({sem})" for sem in semantics.names()
                        if s.family.answers(sem))
        print(f"{name}\n    inputs:  {', '.join(s.input_names)}\n    outputs: {', '.join(s.outputs)}\n"
              f"    attrs:   {attrs or '-'}\n    dtypes:  {dts}\n    {s.doc}")
    return 0


def cmd_emit(args):
    from .emit import render
    sys.stdout.write(render(config_from(args)))
    return 0


def cmd_compile(args):
    from .execute import artifact_for
    check_writable(args.output, "-o")
    art = artifact_for(config_from(args))
    write_atomic(args.output, art.vmfb, "-o")
    print(f"wrote {args.output} ({len(art.vmfb)} bytes, function @{args.op}, flags: {' '.join(art.flags)})",
          file=sys.stderr)
    return 0


def cmd_run(args):
    from .opfuncs import run_compiled
    spec = ops.get(args.op)
    inputs = args.input or []
    if len(inputs) != len(spec.inputs):
        raise QDQError(f"{args.op} takes {_count(len(spec.inputs), 'input')} ({', '.join(spec.input_names)}), "
                       f"got {len(inputs)} --input", arg="--input")
    attrs = attrs_from(args)
    types = input_types(args, spec)
    named = {i.dtype[5:]: types[i.name] for i in spec.inputs if i.name in types and i.dtype.startswith("attr:")}
    kwargs = {**attrs, **read_inputs(spec, inputs, {**attrs, **named})}
    check_writable(args.output, "-o")
    result = run_compiled(args.op, {**kwargs, "target": args.target, "semantics": args.semantics})
    outs = result if isinstance(result, tuple) else (result,)
    if args.output:
        outs, note = as_saved(outs)
        print(f"wrote {save_arrays(args.output, dict(zip(spec.outputs, outs)), '-o')}{note}", file=sys.stderr)
    else:
        with np.printoptions(precision=9, threshold=200):
            for name, o in zip(spec.outputs, outs):
                print(f"{name}: {o!r}")
    return 0


def cmd_targets(args):
    """Every target: whether it runs here (and why not), what it is, its dtypes and limits."""
    from . import targets as T
    rows = []
    for name, t in T.TARGETS.items():
        ok, why = t.availability()
        rows.append({"name": name, "available": ok, "why_not": why, "backend": t.backend, "driver": t.driver,
                     "bit_exact": t.bit_exact, "description": t.description, "dtypes": list(t.dtypes),
                     "max_loop_iterations": t.limits.max_loop_iterations,
                     "fused_multiply_add": t.fma_units()[0]})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        state = "runs here" if r["available"] else f"not here: {r['why_not']}"
        print(f"{r['name']:<9} {state}\n          {r['description']}; dtypes {', '.join(r['dtypes'])}; "
              f"tf-xla's FMAs {'in hardware' if r['fused_multiply_add'] == 'hardware' else 'emulated exactly'}")
    print(f"{T.REFERENCE.name:<9} always (--target oracle: {T.REFERENCE.description})")
    return 0


class _Version(argparse.Action):
    """--version: the package's and IREE's versions (found only when asked: the compiler's takes a moment)."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, help="print the versions of qdqc and IREE and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from .version import __version__
        from .iree_tools import compiler_version, runtime_release
        print(f"qdqc {__version__} (IREE compiler {compiler_version()}, runtime "
              f"{runtime_release()[0] or 'not importable'})")
        parser.exit(0)


def cmd_cache(args):
    from . import compile as C
    if args.action == "info":
        print(json.dumps(C.cache_info(), indent=1))
    else:
        print(f"removed {_count(C.cache_clear(), 'artifact')} from {C.cache_dir()}")
    return 0


def _csv(text: str | None) -> list[str] | None:
    return [s.strip() for s in text.split(",")] if text else None


def cmd_diverge(args):
    from .jobs.diverge import run
    if args.exported:
        from .jobs.export_diverge import run as run_exported
        return run_exported(args.exported, args.size, args.seed, args.json, args.markdown)
    dts = [dtype_from(d) for d in _csv(args.dtypes)] if args.dtypes else None
    for o in _csv(args.ops) or []:
        ops.get(o)
    if args.size < 1:
        raise QDQError("--size must be a positive element count", arg="--size")
    pair = semantics.pair(tuple(_csv(args.semantics)) if args.semantics else None)
    for option in ("json", "markdown", "junit"):
        check_writable(getattr(args, option), f"--{option}")
    return run(_csv(args.ops), dts, args.size, args.seed, args.json, args.markdown, args.junit, pair)


def cmd_validate(args):
    from .jobs.validate import DEFAULT_SIZES, run_validation
    sizes = DEFAULT_SIZES
    if args.sizes:
        try:
            sizes = tuple(int(s) for s in args.sizes.split(","))
        except ValueError:
            raise QDQError(f"--sizes {args.sizes!r}: expected comma-separated element counts", arg="--sizes") from None
        if any(s < 1 for s in sizes):
            raise QDQError("--sizes must be positive element counts", arg="--sizes")
    shard = None
    if args.shard:
        try:
            shard = tuple(int(v) for v in args.shard.split("/"))
        except ValueError:
            shard = ()
        if len(shard) != 2 or not 1 <= shard[0] <= shard[1]:
            raise QDQError(f"--shard {args.shard!r}: expected i/n with 1 <= i <= n", arg="--shard")
    for option in ("report", "junit", "markdown"):
        check_writable(getattr(args, option), f"--{option}")
    if args.jobs is not None and args.jobs < 1:
        raise QDQError(f"--jobs {args.jobs}: must be >= 1 (leave it out for one per core)", arg="--jobs")
    if args.jobs is not None and args.cluster:
        raise QDQError("--jobs applies to a local run; with --cluster the workers' threads (qdqc worker --nthreads) "
                       "set how much runs at once", arg="--jobs")
    dts = [dtype_from(d) for d in _csv(args.dtypes)] if args.dtypes else None
    return run_validation(
        ops=_csv(args.ops), targets=_csv(args.targets), dtypes=dts, sizes=sizes, shard=shard, jobs=args.jobs or 0,
        semantics=semantics.parse_list(args.semantics), cluster=cluster_address(args),
        min_workers=args.min_workers,
        seed=args.seed, progress="off" if args.no_progress else ("bar" if sys.stderr.isatty() else "lines"), json_path=args.report,
        junit_path=args.junit, markdown_path=args.markdown)


def cmd_bench(args):
    from .jobs import bench
    cases = bench.select_cases(args.ops, semantics.parse_list(args.semantics))
    targets = [t.strip() for t in (args.targets or "cpu").split(",") if t.strip()]
    sizes = bench.parse_sizes(args.sizes) if args.sizes else list(bench.DEFAULT_SIZES)
    repeat = args.repeat
    if repeat < 1:
        raise QDQError(f"--repeat {repeat}: must be >= 1", arg="--repeat")
    frameworks = bench.parse_frameworks(args.frameworks)
    check_writable(args.json, "--json")
    check_writable(args.plot, "--plot")
    return bench.benchmark(cases, targets, sizes, repeat, json_path=args.json, plot_path=args.plot,
                           frameworks=frameworks)


def cmd_build(args):
    from .jobs.bundle import build_bundle

    def progress(entry, target, seconds):
        print(f"  {entry.name}.{target}.vmfb  ({seconds:.2f} s)", file=sys.stderr)
    res = build_bundle(args.config, args.out, targets=args.targets, target_cpu=args.target_cpu, progress=progress,
                       cluster=cluster_address(args), min_workers=args.min_workers)
    print(res.summary(), file=sys.stderr)
    return 0


# -- parser ------------------------------------------------------------------------------------------


def _op_args(p, target_default="cpu"):
    p.add_argument("op", help="raw op name (see 'qdqc ops')")
    p.add_argument("--attr", action="append", metavar="NAME=VALUE", help="an attribute (repeatable)")
    p.add_argument("--dtype", default="f32", help=f"f32 (default), or one of {_DTYPE_ALIASES} (which ones an op takes: "
                                                   "'qdqc ops')")
    p.add_argument("--shape", action="append", metavar="[NAME=]DIMS",
                   help="the data's dims joined by x, '?' = dynamic (default '?'; 'scalar' = rank 0); NAME=DIMS "
                        "another input's, e.g. an ONNX scale's: y_scale=4 (1-D: per axis; default per tensor)")
    p.add_argument("--input-dtype", action="append", metavar="NAME=DTYPE",
                   help="an input's type where it is not the op's (repeatable): x=int4 (DequantizeLinear's x), "
                        "y_zero_point=int4, y_scale=float16")
    p.add_argument("--target", default=target_default, help="cpu (default), cpu-host, vmvx, vulkan, cuda")
    p.add_argument("--params", default="baked", choices=("baked", "runtime", "arguments"),
                   help="numeric attributes as constants (default) or trailing 0-d arguments: 'arguments' with "
                        "the results returned, 'runtime' as the Python path compiles them (results into caller "
                        "storage on cpu)")
    p.add_argument("--tuning", default="",
                   help="a code-generation tuning of the target, as the Python path asks for by the data's shape "
                        "(cpu: long-rows, split-rows, split-columns; default none)")
    _semantics_arg(p)


def _semantics_arg(p, many=False):
    names = ", ".join(semantics.names())
    defaults = ", ".join(f"{sem} for {semantics.framework(ns)}'s" for ns, sem in semantics.NAMESPACE_DEFAULTS.items())
    p.add_argument("--semantics", default=None,
                   help=(f"comma-separated, of {names} (default: each op namespace's own, {defaults}; TF's two "
                         f"answers: tf-cpu,tf-xla)" if many
                         else f"whose answer: {names} (default: the op's namespace's, {defaults}; tf-xla: TF's XLA "
                              f"lowering, jit_compile=True)"))


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit status 2 (like every other bad input)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    ap = _Parser(
        prog="qdqc", formatter_class=fmt,
        description="Fake quantization as TensorFlow, PyTorch, ONNX and the OCP MX/NVFP4 texts compute it, compiled "
                    "ahead of time with IREE, bit-exact with each reference (qdqc ops lists the ops).",
        epilog="examples:\n  " + "\n  ".join(v.splitlines()[0] for v in EXAMPLES.values()))
    ap.add_argument("--version", action=_Version)
    ap.add_argument("--cache-dir", help="the artifact cache for this command (default: QDQ_CACHE_DIR, else "
                                        "$XDG_CACHE_HOME/qdq_compiler or ~/.cache/qdq_compiler)")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name, help_, func):
        p = sub.add_parser(name, help=help_, description=help_, formatter_class=fmt,
                           epilog="examples:\n  " + EXAMPLES[name])
        p.set_defaults(func=func)
        return p

    p = add("ops", "list the ops with their inputs, attributes and outputs", cmd_ops)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add("emit", "print the StableHLO of one op configuration", cmd_emit)
    _op_args(p)
    p = add("compile", "compile one op configuration to a .vmfb", cmd_compile)
    _op_args(p)
    p.add_argument("-o", "--output", required=True, help="the .vmfb to write")
    p = add("run", "run an op on .npy files or numbers (in the op's input order) and print or save the result", cmd_run)
    p.add_argument("op", help="the raw op's name, as in tf.raw_ops (qdqc ops lists them)")
    p.add_argument("--attr", action="append", metavar="NAME=VALUE",
                   help="an attribute of the op, repeatable (e.g. --attr num_bits=4 --attr narrow_range=true)")
    p.add_argument("--input", action="append", metavar="FILE.npy|NUMBER",
                   help="one per op input, in order: a .npy file, or a number for a scalar input (min, max, "
                        "num_bits), typed like the data; a bfloat16 array saved with np.save (stored as |V2) is "
                        "read as bfloat16")
    p.add_argument("--input-dtype", action="append", metavar="NAME=DTYPE",
                   help="the storage type of an input saved as .npy (np.save writes int4, float8... as void or "
                        "codes), repeatable: x=int4 (DequantizeLinear), y_zero_point=int4")
    p.add_argument("--target", default="cpu", help="a target, or 'oracle' for the NumPy reference")
    _semantics_arg(p)
    p.add_argument("-o", "--output", help=".npy (one output) or .npz (several) to write")
    p = add("validate", "compare every target with the oracle over a matrix of configurations", cmd_validate)
    p.add_argument("--ops", help="comma-separated op names (default: all)")
    p.add_argument("--targets", help="comma-separated targets, or 'all': cpu and every other available one "
                                      "(default: cpu)")
    p.add_argument("--dtypes", help=f"comma-separated, of {_DTYPE_ALIASES} (default: every one the op allows under "
                                    "the semantics)")
    _semantics_arg(p, many=True)
    p.add_argument("--sizes", help="comma-separated element counts of the random inputs (default 1000,70000)")
    p.add_argument("--report", help="write the JSON report here")
    p.add_argument("--junit", help="write a JUnit XML report here")
    p.add_argument("--markdown", help="write a Markdown table here")
    p.add_argument("--shard", help="i/n: run the i-th of n slices of the matrix (1-based)")
    p.add_argument("--jobs", type=int, default=None, help="parallel compiles, >= 1 (default: one per core)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0): the same seed, "
                                                         "sizes and matrix give the same calls on any machine")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress (default: a bar on a terminal, one line per step in a pipe or log)")
    add_cluster_options(p)
    p = add("diverge", "where two semantics' answers (default: TF's, tf-cpu and tf-xla) differ, per configuration",
            cmd_diverge)
    p.add_argument("--semantics", help="the two semantics to compare, of one namespace, as 'a,b' (default: "
                                       f"{','.join(semantics.pair())})")
    p.add_argument("--ops", help="comma-separated op names (default: all)")
    p.add_argument("--dtypes", help=f"comma-separated, of {_DTYPE_ALIASES} (default: every one both semantics take)")
    p.add_argument("--size", type=int, default=100_000, help="elements per call (default 100000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--json", help="write the JSON report here")
    p.add_argument("--markdown", help="write a Markdown table here")
    p.add_argument("--junit", help="write JUnit XML here (a passing testcase per row, the figures as properties)")
    p.add_argument("--exported", nargs="?", const="onnx", metavar="ONNX_SEMANTICS", help="compare TF's FakeQuant "
                   "and PyTorch's per-tensor op with the Q/DQ pair tf2onnx/torch.onnx write, under onnx or ort-cpu")
    p = add("targets", "list the targets: which run here (and why not the others), their dtypes", cmd_targets)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add("cache", "inspect or clear the artifact cache (QDQ_CACHE_DIR or --cache-dir, else "
            "$XDG_CACHE_HOME/qdq_compiler or ~/.cache/qdq_compiler)", cmd_cache)
    p.add_argument("action", choices=("info", "clear"))
    p = add("bench", "measure throughput against a memory copy and the NumPy oracle (TF and PyTorch too where installed)", cmd_bench)
    p.add_argument("--ops", help="comma-separated op names (default: one per family)")
    p.add_argument("--targets", default="cpu",
                   help="comma-separated compiled targets to time (default: cpu; unavailable ones are skipped "
                        "with the reason)")
    p.add_argument("--sizes", default="10,14,18,22,24",
                   help="log2 element counts, 0..30 (default 10,14,18,22,24: 2^10..2^24 elements; validate's "
                        "--sizes are element counts)")
    p.add_argument("--repeat", type=int, default=7,
                   help="timed runs per variant and size; the median is reported (default: 7)")
    p.add_argument("--json", help="write results as JSON")
    p.add_argument("--plot", help="write a PNG plot (needs matplotlib)")
    p.add_argument("--frameworks", default="tf,torch",
                   help="frameworks timed beside ours where installed: tf, torch, both (default) or 'none' "
                        "(their threads also load the machine the other variants run on)")
    _semantics_arg(p, many=True)
    p = add("build", "build a deployment bundle from a TOML/JSON config", cmd_build)
    p.add_argument("--config", required=True, help="the bundle's description: a .toml or .json file "
                                                    "(examples/qat_bundle.toml; README, Deployment bundles)")
    p.add_argument("--out", required=True, help="the bundle's directory (made if missing): .vmfb files and manifest.json")
    p.add_argument("--targets", help="override the config's targets")
    p.add_argument("--target-cpu", default=None,
                   help="'host' or an LLVM CPU name (haswell, x86-64-v3, znver4...) for a tuned cpu build with FMA "
                        "off (bit-exact); append ',+fma' to keep FMA/AVX-512 (faster, recorded bit_exact: false)")
    add_cluster_options(p, "compile there")
    add_worker(add)
    return ap


def main(argv=None) -> int:
    """The command line; Ctrl-C anywhere exits 130 with one line (cli_interrupt)."""
    return run_interruptible(lambda: _main(argv))


def _main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(negative_literals([str(a) for a in (sys.argv[1:] if argv is None else argv)]))
    previous_cache = os.environ.get("QDQ_CACHE_DIR")
    if args.cache_dir:
        os.environ["QDQ_CACHE_DIR"] = args.cache_dir   # read by compile.cache_dir() at each use
    try:
        with warnings.catch_warnings():
            if args.command in ("validate", "diverge"):  # its matrix runs TF's edge cases (min > max...) on purpose
                warnings.simplefilter("ignore", QDQWarning)
            show = warnings.showwarning  # a QDQWarning as one line, like the errors

            def one_line(message, category, *rest, **kw):
                if not issubclass(category, QDQWarning):
                    return show(message, category, *rest, **kw)
                print(f"qdqc: warning: {message}", file=sys.stderr)
            warnings.showwarning = one_line
            return args.func(args) or 0
    except QDQError as e:
        if interrupted():  # e.g. a compile the interrupt stopped: the interrupt is the news
            return 130
        msg = " ".join(str(e).split("\n")[0].split()) if not getattr(e, "mlir", "") else str(e).split("\n")[0]
        print(f"qdqc: error: {msg}", file=sys.stderr)
        return 2
    except OSError as e:  # an unwritable -o, a missing config file
        if interrupted():
            return 130
        print(f"qdqc: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    finally:  # in-process callers (tests) keep their own cache
        if args.cache_dir and previous_cache is None:
            del os.environ["QDQ_CACHE_DIR"]
        elif args.cache_dir:
            os.environ["QDQ_CACHE_DIR"] = previous_cache


if __name__ == "__main__":
    sys.exit(main())
