"""Issue 49: the command line and bundles build the program the reference's attributes and the inputs' declared
shapes and types describe (ONNX's per-tensor, per-axis and blocked forms, DequantizeLinear's storage type, MX's
ragged blocks), never silently another; internal attributes are neither shown nor listed; errors quote the right
framework. Each form through ``qdqc compile`` (the module's function), ``qdqc run`` and a bundle, against the Python
call's bits."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import qdq_compiler as q
from qdq_compiler.cli import main

RNG = np.random.default_rng(49)
X = (RNG.standard_normal((4, 10)) * 2).astype(np.float32)
I4 = ml_dtypes.int4
FORMS = {   # name: (op, --attr, --shape / input_shapes, --input-dtype, the Python call's inputs and attributes)
    "q_tensor": ("QuantizeLinear", {"output_dtype": "int4"}, {}, {},
                 dict(x=X, y_scale=np.float32(0.3), y_zero_point=np.array(1, I4))),
    "q_axis": ("QuantizeLinear", {"axis": 1}, {"y_scale": "10"}, {"y_zero_point": "int4"},
               dict(x=X, y_scale=np.linspace(0.1, 1, 10, dtype=np.float32), y_zero_point=np.zeros(10, I4), axis=1)),
    "q_block": ("QuantizeLinear", {"output_dtype": "int4", "axis": 1, "block_size": 4}, {}, {},
                dict(x=X, y_scale=np.full((4, 3), 0.25, np.float32), y_zero_point=np.zeros((4, 3), I4), axis=1,
                     block_size=4)),
    "dq_axis": ("DequantizeLinear", {"axis": 0}, {"x_scale": "4"}, {"x": "int4"},
                dict(x=np.arange(-8, 32).reshape(4, 10).clip(-8, 7).astype(I4),
                     x_scale=np.array([0.5, 1, 2, 4], np.float32), x_zero_point=np.array([0, 1, -1, 2], I4), axis=0)),
    "mx_ragged": ("MXFakeQuantize", {"elem": "mxfp4_e2m1"}, {}, {}, dict(x=np.repeat(X, 4, axis=1), elem="mxfp4_e2m1")),
}
SIGNATURES = {"q_tensor": ["tensor<4x10xf32>", "tensor<f32>", "tensor<i8>"],
              "q_axis": ["tensor<4x10xf32>", "tensor<10xf32>", "tensor<10xi8>"],
              "q_block": ["tensor<4x10xf32>", "tensor<4x3xf32>", "tensor<4x3xi8>"],
              "dq_axis": ["tensor<4x10xi8>", "tensor<4xf32>", "tensor<4xi8>"],
              "mx_ragged": ["tensor<4x40xf32>"]}


def _python(op, kw):
    spec = q.ops.get(op)
    return getattr(getattr(q, {"onnx": "onnx_ops", "mx": "mx"}[spec.namespace]), spec.function_name)(**kw)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint8 if a.dtype.itemsize == 1 else f"u{a.dtype.itemsize}")


def _cli_args(attrs, shapes, types, shape="4x10"):
    out = [f"--attr={k}={v}" for k, v in attrs.items()] + ["--shape", shape]
    out += [f"--shape={n}={v}" for n, v in shapes.items()] + [f"--input-dtype={n}={v}" for n, v in types.items()]
    return out


def test_compile_and_bundle_build_the_declared_program(tmp_path, capsys):
    """Per-tensor, per-axis (the scale's declared shape), blocked (block_size alone) and a declared storage type:
    `qdqc compile`'s module and a bundle entry take what the reference would, and the entry computes the Python
    call's bits."""
    import iree.runtime as rt
    entries = []
    for name, (op, attrs, shapes, types, kw) in FORMS.items():
        shape = "x".join(map(str, kw["x"].shape))
        out = tmp_path / f"{name}.vmfb"
        assert main(["compile", op, *_cli_args(attrs, shapes, types, shape), "-o", str(out)]) == 0, name
        module = rt.VmModule.copy_buffer(rt.VmInstance(), out.read_bytes())
        decl = module.lookup_function(op).reflection["iree.abi.declaration"]
        assert decl.split("->")[0].count("tensor<") == len(SIGNATURES[name]), decl
        for t in SIGNATURES[name]:
            assert t in decl.split("->")[0], (name, decl)
        entries.append({"name": name, "op": op, "attrs": attrs, "shape": shape, "input_shapes": shapes,
                        "input_dtypes": types})
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"targets": ["cpu"], "entries": entries}))
    assert main(["build", "--config", str(config), "--out", str(tmp_path / "b")]) == 0
    b = q.load_bundle(tmp_path / "b", target="cpu")
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    recorded = {a["name"]: a["attrs"] for a in manifest["artifacts"]}
    assert recorded["q_block"]["block_size"] == 4 and recorded["q_block"]["granularity"] == "block"
    for name, (op, attrs, shapes, types, kw) in FORMS.items():
        want = _python(op, kw)
        inputs = {k: v for k, v in kw.items() if k in q.ops.get(op).input_names}
        assert np.array_equal(_bits(b[name](**inputs)), _bits(want)), name
    # a per-axis entry refuses a per-tensor scale, naming what decided it (the scale), not an internal attribute
    with pytest.raises(q.QDQError, match="do not fit bundle entry 'q_axis': set from the scale") as info:
        b.q_axis(x=X, y_scale=np.float32(0.3), y_zero_point=np.array(0, I4))
    assert "granularity" not in str(info.value)
    with pytest.raises(q.QDQError, match=r"blocks of 4 along axis 1 of x \[4, 10\] need shape \[4, 3\]"):
        b.q_block(x=X, y_scale=np.float32(0.3), y_zero_point=np.array(0, I4))


def test_run_matches_the_python_call(tmp_path):
    """`qdqc run` of each form (inputs as .npy, their types and shapes read from the files) gives the call's bits."""
    for name in ("q_axis", "q_block", "dq_axis"):
        op, attrs, _, types, kw = FORMS[name]
        files = []
        for n in q.ops.get(op).input_names:
            np.save(tmp_path / f"{n}.npy", kw[n])
            files += ["--input", str(tmp_path / f"{n}.npy")]
        assert main(["run", op, *[f"--attr={k}={v}" for k, v in attrs.items()], *files,
                     *[f"--input-dtype={n}={v}" for n, v in types.items()],
                     "-o", str(tmp_path / "y.npy")]) == 0
        got, want = np.load(tmp_path / "y.npy"), _python(op, kw)
        got = got.view(want.dtype) if got.dtype.itemsize == want.dtype.itemsize and want.dtype.kind != "f" else got
        assert np.array_equal(_bits(got), _bits(want)), name


@pytest.mark.parametrize("argv, words, absent", [
    (["emit", "QuantizeLinear", "--attr", "output_dtype=int5"], "output_dtype='int5' is not allowed", "TensorFlow"),
    (["emit", "MXFakeQuantize", "--attr", "elem=foo"], "elem='foo' is not allowed", "TensorFlow"),
    (["emit", "QuantizeLinear", "--attr", "scale=2"], "attributes: axis, block_size, saturate, output_dtype, "
     "precision", "tiny_scale"),
    (["emit", "QuantizeLinear", "--attr", "granularity=block"], "blocks need block_size > 0", "Traceback"),
    (["emit", "QuantizeLinear", "--shape", "4x10", "--shape", "y_scale=4x3"], "Input 2 must be a vector", "granular"),
    (["emit", "QuantizeLinear", "--attr", "axis=0", "--shape", "4x10", "--shape", "y_scale=10"],
     "input y_scale of shape 10 does not fit: for data of shape 4x10 and axis=0, block_size=0 it has shape 4",
     "granular"),
    (["emit", "QuantizeLinear", "--attr", "block_size=-2", "--shape", "4x10"], "block_size=-2 must be positive",
     "Traceback"),
    (["emit", "QuantizeLinear", "--input-dtype", "y_scale=int8"], "input y_scale of type int8 is not allowed",
     "scale_dtype"),
])
def test_cli_errors_in_the_references_words(capsys, argv, words, absent):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and absent not in err, err


def test_ops_lists_the_references_attributes_only(capsys):
    assert main(["ops", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert list(listed["QuantizeLinear"]["attrs"]) == ["axis", "block_size", "saturate", "output_dtype", "precision"]
    assert list(listed["DequantizeLinear"]["attrs"]) == ["axis", "block_size", "output_dtype"]
    assert "elem_type" not in listed["MXQuantize"]["attrs"] and "ragged" not in listed["MXFakeQuantize"]["attrs"]
    assert main(["ops"]) == 0
    text = capsys.readouterr().out
    for internal in ("granularity", "tiny_scale", "x_dtype", "scale_dtype", "elem_type", "one_element", "ragged"):
        assert internal not in text.split("# OCP")[0].replace("granularity:", "") or internal == "ragged", internal


def test_python_errors_name_the_input_and_the_right_framework():
    x = np.ones(4, np.float32)
    with pytest.raises(q.QDQError, match=r"input y_zero_point has dtype int32.*\(ONNX: Type Error: Type "
                                         r"\(tensor\(int32\)\) of input parameter \(y_zero_point\)"):
        q.onnx_ops.QuantizeLinear(x, np.float32(0.5), np.array(0, np.int32))
    with pytest.raises(q.QDQError, match="input x has dtype int64") as info:
        q.onnx_ops.DequantizeLinear(np.ones(4, np.int64), np.float32(0.5))
    assert "x_dtype" not in str(info.value)
