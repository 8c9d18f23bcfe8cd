"""The lit suite can fail: break the templates on purpose and check that the lit tests guarding each part do.

For each mutation, the templates are copied to a scratch directory together with the qdq_compiler
package and lit_tests/ (emit.py reads its templates from ``<package>/../templates``), one template is
edited (floor -> ceil, round_nearest_even -> round_nearest_afz on the targets that still use it (vmvx,
vulkan), llvm-cpu's HALF_TO_EVEN select with its operands swapped, TF's clamp without its upper select,
reduce minimum <-> maximum), and lit runs the tests that guard that part with PYTHONPATH pointing at
the scratch package. Every one of those tests must FAIL; the same tests on the unbroken copy must pass
(so a failure is the mutation's doing, not the set-up's). QDQ_TEMPLATE_DIR is set as well, for when
emit.py honours it. The run's artifact cache is shared (scratch_cache).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (REPO / "lit_tests" / "lit.cfg.py").is_file() or importlib.util.find_spec("lit") is None,
                       reason="needs lit_tests/ and lit (pip install -e '.[test]')"),
]


@dataclass(frozen=True)
class Mutation:
    name: str
    template: str
    pattern: str           # regex on the template text
    replacement: str       # re.sub replacement (or a function)
    count: int             # how many places the pattern must hit (guards against a stale mutation)
    must_fail: tuple       # lit tests (relative to lit_tests/) that must each fail
    probe: tuple           # (qdqc emit arguments, text the mutated emit must contain)


def _drop_upper_clamp(m: re.Match) -> str:
    """TF's clamp without the select of its upper bound: the `_hi` select line goes, x is used instead."""
    body = m.group(0)
    body = re.sub(r"\n[ \t]*\{\{ out \}\}_hi = stablehlo\.select [^\n]*", "", body, count=1)
    return body.replace("{{ out }}_hi", "{{ x }}")


MUTATIONS = [
    Mutation("floor_to_ceil", "rounding.mlir.j2",
             r"stablehlo\.floor", "stablehlo.ceil", 1,
             ("emit/fake_quant_args.test", "emit/qdq_rounding.test", "lowering/rounding.test",
              "e2e/cpu/FakeQuantWithMinMaxArgs.test"),
             (["FakeQuantWithMinMaxArgs"], "stablehlo.ceil")),
    # round_nearest_even is left only on vmvx (sign restore) and vulkan/cuda (plain); llvm-cpu (cpu,
    # cpu-host) adds and subtracts 2^p instead (quirk roundeven_is_slow), see the next mutation.
    Mutation("round_even_to_afz", "rounding.mlir.j2",
             r"stablehlo\.round_nearest_even", "stablehlo.round_nearest_afz", 2,
             ("emit/target_vmvx.test", "lowering/rounding.test",
              "e2e/vmvx/QuantizeAndDequantize.test", "e2e/vmvx/QuantizeAndDequantizeV2.test"),
             (["QuantizeAndDequantizeV2", "--target", "vmvx"], "stablehlo.round_nearest_afz")),
    # llvm-cpu's HALF_TO_EVEN, select(|v| < 2^p, (|v| + 2^p) - 2^p, |v|), with the select's operands
    # swapped: small values pass unrounded, huge ones are "rounded". Same ops, only the dataflow differs.
    Mutation("cpu_round_select_swapped", "rounding.mlir.j2",
             r'select\(out ~ "_raw", out ~ "_small", out ~ "_down", out ~ "_abs"\)',
             'select(out ~ "_raw", out ~ "_small", out ~ "_abs", out ~ "_down")', 1,
             # one test of each kind and type (f32, f64, a data range); the others check the same lines
             ("emit/qdq_rounding.test", "emit/target_vmvx.test", "emit/qdq_data_range.test",
              "emit/qdq_f64.test", "lowering/rounding.test", "lowering/f64_stays_f64.test",
              "e2e/cpu/QuantizeAndDequantizeV2.test"),
             (["QuantizeAndDequantizeV2"], "%r_raw = stablehlo.select %r_small, %r_abs, %r_down")),
    Mutation("drop_clamp_select", "compare.mlir.j2",
             r"\{% macro clamp\(.*?\{%- endmacro %\}", _drop_upper_clamp, 1,
             ("emit/fake_quant_args.test", "emit/qdq_rounding.test", "lowering/rounding.test",
              "e2e/cpu/FakeQuantWithMinMaxArgs.test", "e2e/cpu/QuantizeAndDequantize.test"),
             (["FakeQuantWithMinMaxArgs"], "%clamped_lt = stablehlo.compare LT, %x_in,")),
    # tf-xla's last multiply-add rounded twice instead of once: the fma call becomes a multiply and an add.
    Mutation("xla_fma_split", "fake_quant.mlir.j2",
             r'\{\{ m\.fma\("%outputs", "%level", "%scale_b", "%nmin_b"\) \}\}',
             '  %out_prod = stablehlo.multiply %level, %scale_b : {{ k.ttype }}\n'
             '  %outputs = stablehlo.add %out_prod, %nmin_b : {{ k.ttype }}', 1,
             ("emit/semantics_xla.test", "e2e/cpu/xla_fma.test"),
             (["FakeQuantWithMinMaxVars", "--semantics", "tf-xla"], "%outputs = stablehlo.add %out_prod, %nmin_b")),
    Mutation("swap_reduce_min_max", "reductions.mlir.j2",
             r'"(minimum|maximum)"', lambda m: '"maximum"' if m.group(1) == "minimum" else '"minimum"', 6,
             ("emit/qdq_data_range.test", "emit/target_vulkan.test",
              "e2e/cpu/QuantizeAndDequantizeV4.test", "e2e/vmvx/QuantizeAndDequantizeV2.test"),
             (["QuantizeAndDequantizeV2", "--target", "vmvx"],
              "%lo = stablehlo.reduce(%x_in init: %lo_init) applies stablehlo.maximum")),
    # llvm-cpu's ranges as lane reductions (quirk single_chain_reductions; the flat, column, row, split and
    # row-group forms): min and max swapped.
    Mutation("cpu_fused_min_max_swapped", "reductions.mlir.j2",
             r"arith\.(minimumf|maximumf)", lambda m: "arith.maximumf" if m.group(1) == "minimumf" else "arith.minimumf",
             8, ("emit/qdq_data_range.test", "emit/qdq_v1.test", "e2e/cpu/QuantizeAndDequantizeV2.test"),
             (["QuantizeAndDequantizeV2"], "%lo_m = arith.maximumf %lo_acc, %lo_in")),
    # llvm-cpu's gradient sums in one linalg.generic: "below" counted with x <= nudged_min instead of <.
    Mutation("cpu_sum_below_not_strict", "reductions.mlir.j2",
             r"arith\.cmpf olt, \{\{ out_below \}\}_x", "arith.cmpf ole, {{ out_below }}_x", 1,
             ("emit/fake_quant_grad.test", "e2e/cpu/FakeQuantWithMinMaxVarsGradient.test"),
             (["FakeQuantWithMinMaxVarsGradient"], "arith.cmpf ole, %below_sum_raw_x, %below_sum_raw_lo")),
    # the generated storage conversion (ONNX's Q/DQ, and float16/bfloat16 narrowing): ties rounded up (the bias a
    # full half, not the kept lsb plus just under half)
    Mutation("storage_ties_up", "storage.mlir.j2",
             r"stablehlo\.add %\{\{ p \}\}_lsb, %\{\{ p \}\}_halfm1", "stablehlo.add %{{ p }}_1, %{{ p }}_halfm1", 1,
             ("e2e/cpu/QuantizeLinear.test", "emit/onnx_storage.test", "emit/narrow_types.test",
              "e2e/cpu/float16.test"),
             (["QuantizeLinear", "--attr", "output_dtype=float8_e4m3fn"], "stablehlo.add %y_1, %y_halfm1 :")),
    # the float8 Q/DQ pair's one-pass rounding to the grid (round_float): ties rounded up
    Mutation("round_float_ties_up", "storage.mlir.j2",
             r"stablehlo\.add %\{\{ p \}\}_halfm1, %\{\{ p \}\}_lsb", "stablehlo.add %{{ p }}_halfm1, %{{ p }}_1", 1,
             ("e2e/cpu/QuantizeDequantizeLinear.test",),
             (["QuantizeDequantizeLinear", "--attr", "output_dtype=float8_e4m3fn"], "stablehlo.add %rq_halfm1, %rq_1 :")),
    # ONNX's QuantizeLinear to an integer type rounds by adding 1.5 * 2^23: 2^23 alone leaves a negative
    # quotient's halves unrounded (-2.5 + 2^23 is a float32 with a half)
    Mutation("onnx_int_round_magic", "onnx_qdq.mlir.j2",
             r"\{% set magic = 1\.5 \* 2\.0 \*\* 23 %\}", "{% set magic = 2.0 ** 23 %}", 1,
             ("e2e/cpu/QuantizeLinear.test",),
             (["QuantizeLinear", "--attr", "output_dtype=int4"], "%magic_s = stablehlo.constant dense<0x4B000000>")),
    # torchao's MX byte 0 divides by 2^-126 (then multiplies back by 2^-127): OCP's 2^-127 both ways is another answer
    Mutation("mx_byte0_divisor", "mx_scale.mlir.j2",
             r"%b_cm = stablehlo\.maximum %b_code1, %b_byte0 :", "%b_cm = stablehlo.maximum %b_code1, %b_0 :", 1,
             ("e2e/cpu/MXFakeQuantize.test",),
             (["MXFakeQuantize", "--attr", "elem=mxfp8_e4m3", "--semantics", "torchao"],
              "%b_cm = stablehlo.maximum %b_code1, %b_0 :")),
]


def _copy_tree(scratch: Path) -> Path:
    """The package, the templates and lit_tests/ (without its Output/) under ``scratch``."""
    ignore = shutil.ignore_patterns("__pycache__", "Output", "*.pyc")
    shutil.copytree(REPO / "qdq_compiler", scratch / "qdq_compiler", symlinks=True, ignore=ignore)
    shutil.copytree(REPO / "templates", scratch / "templates", ignore=ignore)
    shutil.copytree(REPO / "lit_tests", scratch / "lit_tests", ignore=ignore)
    return scratch


def _env(scratch: Path, cache: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(scratch)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["QDQ_TEMPLATE_DIR"] = str(scratch / "templates")
    env["QDQ_CACHE_DIR"] = str(cache)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    return env


def _qdqc() -> list[str]:
    exe = BIN / "qdqc"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "qdq_compiler"]


def _lit(scratch: Path, env: dict, tests) -> tuple[int, set[str], str]:
    """Run lit on ``tests``; (exit status, the failing tests as 'dir/name.test', the output)."""
    cmd = [sys.executable, "-c", "import sys; from lit.main import main; sys.exit(main())",
           "-sv", "--no-progress-bar", *[str(scratch / "lit_tests" / t) for t in tests]]
    proc = subprocess.run(cmd, env=env, cwd=scratch, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    failed = set(re.findall(r"^FAIL: qdq_compiler :: (\S+) \(", out, re.M))
    return proc.returncode, failed, out


def _mutate(templates: Path, mut: Mutation) -> None:
    path = templates / mut.template
    text = path.read_text()
    new, n = re.subn(mut.pattern, mut.replacement, text, flags=re.S)
    assert n == mut.count and new != text, (
        f"mutation {mut.name} no longer applies to templates/{mut.template} ({n} matches, expected "
        f"{mut.count}): the template changed; update the mutation in tests/test_lit_mutation.py")
    path.write_text(new)


@pytest.fixture(scope="module")
def scratch_cache(tmp_path_factory):
    """The run's shared artifact cache (tools/run_tests.py runs lit first, so the unbroken baseline loads what
    lit compiled). Sharing is safe: an artifact's key covers its rendered MLIR and the template sources, so a
    mutated template never meets an unbroken artifact."""
    shared = os.environ.get("QDQ_CACHE_DIR")
    return Path(shared) if shared else tmp_path_factory.mktemp("lit_mutation_cache")


# One test of each kind, run on the unbroken copy when lit has just run every guarding test on the real tree.
COPY_SMOKE = ("emit/qdq_rounding.test", "e2e/cpu/QuantizeAndDequantizeV2.test")


def _this_runs_lit_results() -> dict | None:
    """{test: lit's result code} from this run's lit (tools/run_tests.py runs lit first, on this tree, and
    names its JSON results in QDQ_LIT_RESULTS), or None."""
    path = os.environ.get("QDQ_LIT_RESULTS")
    if not path or not Path(path).is_file():
        return None
    data = json.loads(Path(path).read_text())
    return {t["name"].split(" :: ", 1)[-1]: t["code"] for t in data["tests"]}


def test_guarding_tests_pass_unmutated(tmp_path, scratch_cache):
    """The baseline: every guarding test passes unbroken, and so does the copy the mutations run in (the
    set-up itself is sound). Where this run's lit has just run them on the real tree, its results say so, and
    the copy runs one test of each kind and those that lit left out; otherwise the copy runs them all."""
    tests = sorted({t for m in MUTATIONS for t in m.must_fail})
    lit_results = _this_runs_lit_results()
    if lit_results is not None:
        # The CI tier's lit samples the vmvx/vulkan e2e files (tests/tiers.py): a guarding test it left out runs
        # here, in the copy.
        not_passed = {t: lit_results[t] for t in tests if t in lit_results and lit_results[t] != "PASS"}
        assert not not_passed, f"guarding lit tests did not pass in this run's lit: {not_passed}"
        assert set(COPY_SMOKE) <= set(tests)
        tests = sorted(set(COPY_SMOKE) | {t for t in tests if t not in lit_results})
    scratch = _copy_tree(tmp_path)
    rc, failed, out = _lit(scratch, _env(scratch, scratch_cache), tests)
    assert rc == 0 and not failed, f"guarding lit tests fail without any mutation:\n{out[-4000:]}"


# The CI tier runs one mutation in 3 (each ~20 s of lit on 2 cores) and the first; the full tier every one.
@pytest.mark.sample(every=3)
@pytest.mark.parametrize("mut", MUTATIONS, ids=lambda m: m.name)
def test_lit_fails_on_broken_template(mut, tmp_path, scratch_cache):
    scratch = _copy_tree(tmp_path)
    _mutate(scratch / "templates", mut)
    env = _env(scratch, scratch_cache)
    # The broken templates are the ones in use (the lit tests' qdqc resolves the same way).
    probe_args, probe_text = mut.probe
    probe = subprocess.run(_qdqc() + ["emit", *probe_args], env=env, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, f"the mutated template does not render:\n{probe.stderr}"
    assert probe_text in probe.stdout, f"qdqc did not pick up the mutated templates (no {probe_text!r})"
    rc, failed, out = _lit(scratch, env, mut.must_fail)
    assert rc != 0, f"lit passed with the {mut.name} mutation:\n{out[-4000:]}"
    missed = sorted(set(mut.must_fail) - failed)
    assert not missed, f"these lit tests did not catch the {mut.name} mutation: {missed}\n{out[-4000:]}"
