"""The semantics keyword and the 16-bit types: names, errors, the storage conversions on every target, and
the divergence view between TF's two answers."""
import json
from pathlib import Path
import xml.etree.ElementTree as ET

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler import QDQError
from qdq_compiler.jobs import diverge
from qdq_compiler.config import OpConfig
from qdq_compiler.emit import render
from qdq_compiler.numerics import bit_equal

from targets_util import RUN_TARGETS, require

BF16 = ml_dtypes.bfloat16


def test_unknown_semantics_names_the_argument_and_the_allowed_values():
    with pytest.raises(QDQError) as e:
        q.raw_ops.FakeQuantWithMinMaxArgs(inputs=np.zeros(3, np.float32), semantics="tf-gpu")
    assert e.value.arg == "semantics" and "'tf-cpu', 'tf-xla'" in str(e.value)


def test_tf_cpu_is_the_default_and_tf_xla_differs_where_tf_does():
    x = np.linspace(-1.2, 1.2, 1001, dtype=np.float32)
    default = q.raw_ops.FakeQuantWithMinMaxVars(inputs=x, min=np.float32(-0.7), max=np.float32(2.3))
    cpu = q.raw_ops.FakeQuantWithMinMaxVars(inputs=x, min=np.float32(-0.7), max=np.float32(2.3), semantics="tf-cpu")
    xla = q.raw_ops.FakeQuantWithMinMaxVars(inputs=x, min=np.float32(-0.7), max=np.float32(2.3), semantics="tf-xla")
    assert bit_equal(default, cpu) and not bit_equal(cpu, xla)
    assert bit_equal(xla, q.oracle.raw_ops.FakeQuantWithMinMaxVars(inputs=x, min=np.float32(-0.7),
                                                                    max=np.float32(2.3), semantics="tf-xla"))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_half_qdq_needs_tf_xla_and_says_so(dtype):
    x = np.zeros(4, dtype)
    with pytest.raises(QDQError, match="semantics='tf-xla'") as e:
        q.raw_ops.QuantizeAndDequantizeV4(input=x, input_min=dtype(-1), input_max=dtype(1))
    assert isinstance(e.value, TypeError) and e.value.arg == "input"


@pytest.mark.parametrize("target", RUN_TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_every_16_bit_pattern_round_trips_through_a_compiled_program(target, dtype):
    """FakeQuant over a range wider than the type with 16 bits keeps most values; every one of the 65536
    patterns goes in and out (widen exact, narrow to nearest even), NaN payloads and subnormals included."""
    require(target)
    x = np.arange(65536, dtype=np.uint16).view(dtype)
    got = q.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, min=-1e-3, max=1e-3, num_bits=16, target=target)
    want = q.oracle.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, min=-1e-3, max=1e-3, num_bits=16)
    assert got.dtype == dtype and bit_equal(got, want)
    nan = np.isnan(want)
    assert np.array_equal(got.view(np.uint16)[nan], want.view(np.uint16)[nan])  # payload and sign too


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_vmvx_reduces_over_16_bit_data_with_inputs_widened_on_the_host(dtype):
    """IREE 3.13's vmvx fails at run time when the in-program i16 widening feeds a reduction, so there a
    program that reduces takes float32 inputs (widened by NumPy: exact) and still returns 16-bit results;
    every 16-bit pattern goes through (NaNs and subnormals included), the sums exact (counts of 1.0)."""
    require("vmvx")
    name = "FakeQuantWithMinMaxVarsGradient"
    head = {t: render(OpConfig.make(name, {}, np.dtype(dtype).name, "?", t)).split("{")[0] for t in ("vmvx", "cpu")}
    assert "%gradients: tensor<?xf32>" in head["vmvx"] and "-> (tensor<?xi16>" in head["vmvx"]
    assert "%gradients_storage: tensor<?xi16>" in head["cpu"]
    x = np.arange(65536, dtype=np.uint16).view(dtype)
    kw = dict(gradients=np.ones(65536, dtype), inputs=x, min=dtype(-1), max=dtype(1))
    got = q.raw_ops.FakeQuantWithMinMaxVarsGradient(**kw, target="vmvx")
    want = q.oracle.raw_ops.FakeQuantWithMinMaxVarsGradient(**kw)
    assert all(g.dtype == dtype and bit_equal(g, w) for g, w in zip(got, want))
    assert float(want[1]) > 1000 and float(want[2]) > 1000


def test_divergence_view_counts_what_tf_counts(tmp_path, capsys):
    rows = diverge.diverge(["FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars"], ["float32"], size=20000)
    assert rows and all(r.elements > 0 for r in rows)
    vars_rows = [r for r in rows if r.configuration.startswith("FakeQuantWithMinMaxVars:")]
    assert any(r.differ > 0 for r in vars_rows)                     # Vars divides on CPU, multiplies under XLA
    # one level at most (the grids differ by an ulp of the scale, so "one level" measures a hair over 1)
    assert all(r.max_levels is None or r.max_levels <= 1.01 for r in rows if r.differ)
    assert any(r.nan_one_side for r in vars_rows)                   # XLA clamps a NaN input to nudged_min
    example = next(r.example for r in vars_rows if r.differ)
    assert example["tf-cpu"] != example["tf-xla"] and example["input"] is not None
    rc = diverge.run(["FakeQuantWithMinMaxVars"], ["f32"], 5000, 0, str(tmp_path / "d.json"), str(tmp_path / "d.md"),
                     str(tmp_path / "d.xml"))
    assert rc == 0 and "TF's two answers differ on" in capsys.readouterr().out
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["semantics"] == ["tf-cpu", "tf-xla"] and data["rows"][0]["elements"] == 5000
    assert diverge.from_json(data) == diverge.diverge(["FakeQuantWithMinMaxVars"], ["float32"], size=5000)
    assert "| configuration |" in (tmp_path / "d.md").read_text()
    suite = ET.parse(tmp_path / "d.xml").getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert suite.get("name") == "qdqc-diverge" and len(cases) == len(data["rows"]) and int(suite.get("failures")) == 0
    for case, row in zip(cases, data["rows"]):
        props = {p.get("name"): p.get("value") for p in case.find("properties")}
        assert int(props["differ"]) == row["differ"] and int(props["elements"]) == row["elements"]
        assert case.get("classname") == row["configuration"]


def test_diverge_compares_any_two_semantics_of_one_namespace(capsys):
    """The pair is an argument (issue 22): reversed, the same elements differ, each answer under its own name;
    a pair that is not two semantics of one namespace is refused before anything runs."""
    ab = diverge.diverge(["FakeQuantWithMinMaxVars"], ["float32"], size=3000)
    ba = diverge.diverge(["FakeQuantWithMinMaxVars"], ["float32"], size=3000, semantics=("tf-xla", "tf-cpu"))
    assert [r.differ for r in ab] == [r.differ for r in ba] and any(r.differ for r in ab)
    assert all(r.configuration.endswith("@tf-xla") for r in ba)
    e_ab, e_ba = next(r.example for r in ab if r.differ), next(r.example for r in ba if r.differ)
    assert e_ab["tf-cpu"] == e_ba["tf-cpu"] and e_ab["tf-xla"] == e_ba["tf-xla"]
    assert diverge.run(["FakeQuantWithMinMaxVars"], ["f32"], 3000, 0, semantics=("tf-xla", "tf-cpu")) == 0
    assert "tf-xla and tf-cpu differ on" in capsys.readouterr().out
    for bad in (("tf-cpu",), ("tf-cpu", "tf-cpu"), ("tf-cpu", "tf-gpu")):
        with pytest.raises(QDQError) as info:
            diverge.diverge(["FakeQuantWithMinMaxVars"], ["float32"], size=10, semantics=bad)
        assert info.value.arg == "semantics" and "tf-cpu" in str(info.value) and "tf-xla" in str(info.value)


def test_each_family_answers_each_semantics_through_its_rules():
    """Semantics are rules registered per family (ops/rules.py), not names the families compare."""
    from qdq_compiler import ops, semantics
    for family in ops.FAMILIES:
        # a family answers semantics of one op namespace, not necessarily all of them, and none of another's
        namespaces = {semantics.get(name).namespace for name in family.rules_by_semantics}
        assert len(namespaces) == 1 and set(family.rules_by_semantics) <= set(semantics.names(*namespaces)), family.name
        assert {s.namespace for s in ops.OPS.values() if s.family is family} == namespaces, family.name
        foreign = next(n for n in semantics.names() if semantics.get(n).namespace not in namespaces)
        with pytest.raises(QDQError, match="has no rules"):
            family.rules(foreign)
    for path in sorted((Path(ops.__file__).parent).glob("*.py")):
        text = path.read_text()
        assert '== "tf-xla"' not in text and '!= "tf-xla"' not in text and 'semantics ==' not in text, path.name


def _representable(a, dtype) -> bool:
    a = np.asarray(a, np.float32)
    with np.errstate(over="ignore"):  # out of the 16-bit range: inf, so not representable
        back = a.astype(dtype).astype(np.float32)
    return bool(np.array_equal(np.isnan(a), np.isnan(back)) and np.array_equal(a[~np.isnan(a)], back[~np.isnan(back)]))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
def test_16_bit_fake_quant_is_tfs_float32_answer_rounded(dtype):
    """The definition, cross-checked against TF itself: wherever a TF 2.21 float32 golden's inputs are exactly
    representable in the 16-bit type, our 16-bit result is TF's float32 output rounded to that type."""
    from goldens import kwargs_of, success_cases
    checked = 0
    for case in success_cases():
        if not case["op"].startswith("FakeQuant") or case.get("deviation"):
            continue
        kw = kwargs_of(case)
        arrays = {k: v for k, v in kw.items() if isinstance(v, np.ndarray) and v.dtype == np.float32}
        floats = [v for k, v in kw.items() if k in ("min", "max") and isinstance(v, float)]
        if not all(_representable(v, dtype) for v in list(arrays.values()) + floats) or \
                any(abs(f) > float(ml_dtypes.finfo(dtype).max) for f in floats):
            continue
        narrow = {k: (v.astype(dtype) if k in arrays else v) for k, v in kw.items()}
        got = getattr(q.oracle.raw_ops, case["op"])(**narrow)
        got = got if isinstance(got, tuple) else (got,)
        name = q.ops.get(case["op"]).outputs[0]
        want = np.array([float.fromhex(v) if v not in ("nan", "-nan") else np.nan
                         for v in case["expect"]["outputs"][name]["values"]], np.float32).astype(dtype)
        assert bit_equal(got[0].reshape(-1), want), case["id"]
        checked += 1
    assert checked > 50
