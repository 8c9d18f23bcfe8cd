"""The wheel ships every golden and template (issue 47.4): a wheel built from a copy of this tree holds each file
of qdq_compiler/goldens/ and of templates/ byte for byte, and a wheel-installed qdq_compiler runs the same golden
cases as this one (it once ran none for ONNX and PyTorch, and said "64 of 64 cells exact")."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jinja2
import jinja2.meta
import pytest
import setuptools

from qdq_compiler import cli, goldens, ops
from qdq_compiler import semantics as SEM

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "qdq_compiler"
BUILD_INPUTS = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in", "README.md")
# A small validate run from the wheel: 16-bit tf-cpu goldens (half/) and PyTorch's (aten/), one configuration each.
VALIDATE = ["validate", "--no-progress", "--targets", "cpu", "--ops",
            "FakeQuantWithMinMaxArgs,fake_quantize_per_tensor_affine", "--semantics", "tf-cpu,torch-cpu",
            "--dtypes", "f16", "--sizes", "64", "--seed", "3"]
# The golden cases of one dynamic configuration per semantics, op and width (16-bit or not): every golden file
# validate reads, no compile.
COUNTS = """
import json
from qdq_compiler import dtypes as DT, semantics as SEM
from qdq_compiler.jobs.validate import build_matrix, golden_calls
from qdq_compiler.jobs.validate.inputs import golden_source
pick = {}
for e in build_matrix(None, None, tuple(SEM.SEMANTICS)):
    if not e.static:
        pick.setdefault((e.semantics, e.op, DT.get(e.dtype).narrow), e)
counts = {e.name: len(golden_calls(e)) for e in pick.values()}
read = sorted({golden_source(e)[0] for e in pick.values() if counts[e.name]})
"""


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (a link followed) by its path relative to it, less Python's caches."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the copy of this tree it was built from): a build in the tree would leave build/ there, stale
    files included; the copy is what the wheel is compared with, byte for byte (the tree may change meanwhile)."""
    assert importlib.util.find_spec("wheel") or tuple(map(int, setuptools.__version__.split(".")[:2])) >= (70, 1), \
        "pip wheel --no-build-isolation needs the 'wheel' package (or setuptools >= 70.1) in this environment"
    d = tmp_path_factory.mktemp("wheel")
    src = d / "src"
    shutil.copytree(PKG, src / "qdq_compiler", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", src / "templates")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                          "--no-index", "-q", "-w", str(d / "dist")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr + out.stdout
    (whl,) = (d / "dist").glob("qdq_compiler-*.whl")
    return whl, src


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[0]


def _wheel_files(whl: Path, prefix: str) -> dict[str, bytes]:
    with zipfile.ZipFile(whl) as z:
        return {n[len(prefix):]: z.read(n) for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")}


def test_the_wheel_ships_every_golden_file_byte_for_byte(built):
    wheel, src = built
    tree = {n: b for n, b in _files(src / "qdq_compiler" / "goldens").items() if not n.endswith(".py")}
    assert sorted(tree) == sorted(n for n in _files(PKG / "goldens") if not n.endswith(".py"))
    shipped = {n: b for n, b in _wheel_files(wheel, "qdq_compiler/goldens/").items() if not n.endswith(".py")}
    assert sorted(shipped) == sorted(tree) and len(tree) == 48
    assert all(shipped[n] == tree[n] for n in tree), [n for n in tree if shipped[n] != tree[n]]
    for folder in ("aten/", "onnx/", "onnx/ort/", "mx/", "xla/", "half/"):   # the first three were missing
        assert any(n.startswith(folder) for n in shipped), folder
    # the declarations (goldens.DECLARED, HALF_DECLARED, OTHER) name exactly these files
    assert goldens.files() == tuple(sorted(tree))


def test_the_wheel_ships_every_template_the_package_renders(built):
    wheel, src = built
    assert (PKG / "templates").resolve() == (ROOT / "templates").resolve()   # the package's link to them
    tree = _files(src / "templates")
    assert sorted(tree) == sorted(_files(ROOT / "templates"))
    shipped = _wheel_files(wheel, "qdq_compiler/templates/")
    assert sorted(shipped) == sorted(tree) and len(tree) == 30
    assert all(shipped[n] == tree[n] for n in tree), [n for n in tree if shipped[n] != tree[n]]
    # what an op renders (its rules' template under every semantics its family answers) and what that includes
    env, seen = jinja2.Environment(), set()
    todo = [spec.family.rules(s).template for spec in ops.OPS.values() for s in SEM.SEMANTICS if spec.family.answers(s)]
    while todo:
        name = todo.pop()
        if name not in seen:
            assert name in shipped, name
            seen.add(name)
            todo += [r for r in jinja2.meta.find_referenced_templates(env.parse(shipped[name].decode())) if r]
    assert len(seen) == 30 and {"fake_quant.mlir.j2", "onnx_qdq.mlir.j2", "aten_observer.mlir.j2", "mx_fake_quant.mlir.j2",
                                "macros.mlir.j2"} <= seen


def test_a_wheel_installed_package_runs_the_same_golden_cases(wheel, tmp_path, capsys):
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile", "-q",
                          "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    # from the wheel (PYTHONPATH before this venv's editable install): the golden counts, then qdqc validate
    script = COUNTS + (f"import qdq_compiler, pathlib\nfrom qdq_compiler import cli\n"
                       f"rc = cli.main({VALIDATE + ['--report', str(tmp_path / 'wheel.json')]!r})\n"
                       f"pathlib.Path({str(tmp_path / 'counts.json')!r}).write_text(json.dumps("
                       f"{{'file': qdq_compiler.__file__, 'rc': rc, 'counts': counts}}))\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(site)})
    assert ran.returncode == 0, ran.stderr + ran.stdout
    got = json.loads((tmp_path / "counts.json").read_text())
    assert Path(got["file"]).is_relative_to(site) and got["rc"] == 0, got["file"]   # the wheel's, not this tree's
    here: dict = {}
    exec(COUNTS, here)
    mine = here["counts"]
    assert got["counts"] == mine and len(mine) > 80
    # every golden file validate reads was read (half/, xla/, aten/, onnx/, onnx/ort/ and the top level)
    assert here["read"] == [f"goldens/{f}" for f in goldens.files() if f not in goldens.OTHER]
    # qdqc validate from this tree: the same cells, each with the same golden cases
    assert cli.main(VALIDATE + ["--report", str(tmp_path / "tree.json")]) == 0
    capsys.readouterr()
    cells = {k: [(c["entry"], c["status"], c["cases"], c["goldens"])
                 for c in json.loads((tmp_path / f"{k}.json").read_text())["cells"]] for k in ("wheel", "tree")}
    assert cells["wheel"] == cells["tree"]
    # each the usable cases of its file in its dtype, counted from the JSON here
    want = {"FakeQuantWithMinMaxArgs:f16:dynamic": _usable(PKG / "goldens" / "half" / "FakeQuantWithMinMaxArgs.json"),
            "fake_quantize_per_tensor_affine:f16:dynamic@torch-cpu":
                _usable(PKG / "goldens" / "aten" / "fake_quantize_per_tensor_affine.json")}
    assert {e: g for e, _, _, g in cells["wheel"]} == want and list(want.values()) == [300, 25]
    assert "2 of 2 cells exact" in ran.stdout and "325 golden cases run" in ran.stdout


def _usable(path: Path, dtype: str = "float16") -> int:
    """The cases of a golden file with an answer (not an error, not a deviation) whose first input is ``dtype``."""
    return sum("outputs" in c["expect"] and not c.get("deviation") and next(iter(c["inputs"].values()))["dtype"] == dtype
               for c in json.loads(path.read_text())["cases"])
