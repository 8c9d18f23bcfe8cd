"""The keyword arguments of the calls a matrix entry runs: random inputs with special values, and the TF goldens."""
from __future__ import annotations

import functools
import json
import zlib

import numpy as np


from ... import dtypes as DT
from ... import goldens, ops
from ... import semantics as SEM
from ...numerics import three_d
from .matrix import MatrixEntry


def _shape_for(entry: MatrixEntry, size: int) -> tuple[int, ...]:
    spec = ops.get(entry.op)
    return spec.family.sample_shape(spec, entry.attr, size)


def _special(rng, x: np.ndarray, scale: float) -> np.ndarray:
    """Sprinkle the values that break naive lowerings: ties, NaN, +-inf, +-0, subnormals."""
    flat = x.reshape(-1)
    n = flat.size
    if n < 16:
        return x
    tiny = DT.get(x.dtype).finfo.tiny
    picks = rng.choice(n, size=min(n, 64), replace=False)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny / 4, -tiny / 2, 0.5 * scale, -0.5 * scale,
                         1.5 * scale, -2.5 * scale, 3.5 * scale], x.dtype)
    flat[picks[: len(specials)]] = specials[: len(picks)]
    return x


def random_calls(entry: MatrixEntry, size: int, seed: int) -> list[dict]:
    """Keyword arguments for several calls of ``entry``'s op at ``size`` elements (the family chooses
    the numeric attributes and ranges: ``Family.random_calls``)."""
    spec = ops.get(entry.op)
    rng = np.random.default_rng(seed)
    dt = DT.get(entry.dtype).np
    x = (rng.standard_normal(_shape_for(entry, size)) * 2).astype(dt)
    return spec.family.random_calls(spec, entry.attr, x, rng, lambda a, scale: _special(rng, a, scale))


def entry_calls(entry: MatrixEntry, sizes, seed: int, goldens: bool = True) -> tuple[list[dict], int]:
    """Every call a cell of ``entry`` runs, and how many of them (the first ones) are TF goldens.

    Dynamic configurations: the matching goldens, then random calls at each size. Static ones are
    compiled for one shape (the largest size): random calls at that size only."""
    calls = [] if entry.static or not goldens else [_canonical_kwargs(entry, kw) for kw in golden_calls(entry)]
    n_golden = len(calls)
    for i, size in enumerate(sizes):
        if entry.static and size != max(sizes):
            continue
        calls += random_calls(entry, size, seed + 1000 * i + zlib.crc32(entry.name.encode()) % 997)
    return calls, n_golden


# golden input dtypes written as numbers, not float hex (bool: aten's masks, 0/1; int64: PyTorch's switches)
INTEGRAL = ("int32", "int64", "bool")


@functools.lru_cache(maxsize=None)
def _parsed(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def _declared(f, op: str, semantics: str) -> dict | None:
    """The parsed golden file ``f`` of ``op`` (read once per run; read-only), None when none is declared; a
    declared file that is missing is a QDQError naming it (a cell must not pass having run no golden case)."""
    if f is None:
        return None
    if not f.is_file():
        goldens.require([(op, semantics)])
    return _parsed(str(f))


def _golden_file(op: str, semantics: str = SEM.DEFAULT) -> dict | None:
    """The parsed golden file of ``op`` under ``semantics``, None when none is declared (``goldens.DECLARED``)."""
    return _declared(goldens.path(op, semantics), op, semantics)


def golden_tf_version(op: str, semantics: str = SEM.DEFAULT) -> str | None:
    """The TensorFlow version that wrote ``op``'s golden file (its ``tf_version``), None without one."""
    data = _golden_file(op, semantics)
    return data.get("tf_version") if data else None


def golden_reference(op: str, semantics: str = SEM.DEFAULT) -> str | None:
    """Who wrote ``op``'s golden file under ``semantics``, as its header says ("TF 2.21.0", "PyTorch 2.13.0+cpu",
    "onnx 1.23.2 reference implementation (opset 28)"), None without one."""
    data = _golden_file(op, semantics)
    if not data:
        return None
    if data.get("tf_version"):
        return f"TF {data['tf_version']}"
    if data.get("torch_version"):
        return f"PyTorch {data['torch_version']}"
    ref = data.get("reference")
    return f"{ref} (opset {data['opset']})" if ref and data.get("opset") else ref


def _half_file(op: str, semantics: str) -> dict | None:
    """The parsed float16/bfloat16 golden file of ``op`` under ``semantics`` (``half/`` in its folder: tf-cpu's
    FakeQuant ops have one; read-only), None when none is declared."""
    return _declared(goldens.half_path(op, semantics), op, semantics)


def golden_source(entry: MatrixEntry) -> tuple[str | None, str]:
    """(the golden file ``entry`` reads, relative to the package, or None; why it runs none, '' where it may)."""
    if entry.static:
        return None, "a static configuration runs random inputs at its one shape only"
    f = (goldens.half_path(entry.op, entry.semantics) if DT.get(entry.dtype).narrow else None) \
        or goldens.path(entry.op, entry.semantics)
    if f is None:
        return None, goldens.none_because(entry.op, entry.semantics)
    return f"goldens/{f.relative_to(goldens.DIR).as_posix()}", ""


def golden_calls(entry: MatrixEntry) -> list[dict]:
    """Golden cases (if present) whose structure and dtype match ``entry``."""
    narrow = DT.get(entry.dtype).narrow
    half = _half_file(entry.op, entry.semantics) if narrow else None
    # A 16-bit FakeQuant configuration under tf-cpu takes goldens/half/<Op>.json: every float32 TF case with
    # its inputs rounded to the type, answered by TF's float32 kernel on their exact value and rounded once
    # (FakeQuant's 16-bit definition; tools/goldens/tf_half.py). It holds every case the exact
    # narrowing below would derive, and more (issue 29.10). Cases marked "deviation" (an Args range beyond
    # float16's) the package rejects, and are skipped like the float32 deviations.
    # A 16-bit configuration without such a file (tf-xla) takes the float32 cases whose every float input its type
    # holds exactly: their edge values as inputs (the oracle gives the answer: XLA rounds after every op).
    data = half if half is not None else _golden_file(entry.op, entry.semantics)
    if data is None:
        return []
    derive = narrow and half is None
    spec = ops.get(entry.op)
    out = []
    path = goldens.half_path(entry.op, entry.semantics) if half is not None else goldens.path(entry.op, entry.semantics)
    for kw in _case_kwargs(str(path), entry.op):
        kw = dict(kw)   # (its arrays are shared between configurations, read-only)
        typed = next((i.name for i in spec.inputs if i.typed_by_op), None)   # of the op's type T (data, a scale)
        x = kw[typed] if typed else None
        if derive and x is not None and x.dtype.name == "float32":
            kw = _narrowed(kw, entry.dtype)
            if kw is None:
                continue
            x = kw[typed]
        elem = spec.family.element_dtype(spec, kw)   # where no operand carries T (ONNX's DequantizeLinear)
        if DT.name_of(elem if elem is not None else x.dtype) != entry.dtype:
            continue
        full = {a.name: kw.get(a.name, a.default) for a in spec.attrs}
        rank = kw[spec.data_input].ndim
        ax = _axis_or_none(spec.family.channel_axis(spec, full, rank))
        want_axis = _axis_or_none(spec.family.channel_axis(
            spec, {**{a.name: a.default for a in spec.attrs}, **entry.attr}, rank))
        if ax != want_axis and not (want_axis == 1 and ax >= 0 and rank > ax):
            continue
        if any(full.get(k) != v for k, v in entry.attrs if k != "axis"):
            continue
        # per-axis goldens along any axis run through the [outer, C, inner] program: _canonical_kwargs
        out.append(kw)
    return out


@functools.lru_cache(maxsize=None)
def _case_kwargs(path: str, op: str) -> tuple[dict, ...]:
    """The keyword arguments of each usable case of one golden file, as the op's public functions convert them:
    parsed once per file, not once per configuration (ONNX's 196 configurations read the same ~500 cases; a warm
    run's first line waited 11.6 s for them, issue 49)."""
    data, spec, out = _parsed(path), ops.get(op), []
    for case in data["cases"]:
        if "outputs" not in case["expect"] or (case.get("deviation") and not _text_deviation_only(case)):
            continue
        kw = {}
        for name, value in case["attrs"].items():
            a = spec.attr_map.get(name)
            kw[name] = float.fromhex(value) if a is not None and a.kind is float and isinstance(value, str) else value
        for name, e in case["inputs"].items():
            if "codes" in e:   # a storage type or float by its bit patterns (the ONNX sets)
                dt = DT.np_of(e["dtype"])
                kw[name] = np.array(e["codes"], f"uint{dt.itemsize * 8}").view(dt).reshape(e["shape"])
                continue
            vals = e["values"]
            if e["dtype"] in INTEGRAL:
                kw[name] = np.array(vals, np.dtype(e["dtype"])).reshape(e["shape"])
            else:
                kw[name] = np.array([float.fromhex(v) if v not in ("nan", "-nan") else np.nan for v in vals],
                                    np.float64).astype(DT.get(e["dtype"]).np).reshape(e["shape"])
        if spec.namespace != "tf":   # the framework's argument kinds (1-element qparams, float zero points...)
            kw = spec.family.public_arguments(spec, kw)
            for inp in spec.inputs:   # an attribute an input's dtype names, as bind derives it
                if inp.dtype.startswith("attr:") and isinstance(kw.get(inp.name), np.ndarray):
                    kw.setdefault(inp.dtype[5:], DT.name_of(kw[inp.name].dtype))
        for v in kw.values():   # shared by every configuration that reads the file: read-only
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
        out.append(kw)
    return tuple(out)



def _text_deviation_only(case: dict) -> bool:
    """A case whose one deviation is the onnx reference's from the operator's text (its int32 cast of NaN, +-inf,
    huge quotients: "text" holds the text's answer, which the oracle gives): it runs like any other."""
    return "text" in case and "subnormal" not in case.get("deviation", "")


def _axis_or_none(axis) -> int:
    return -1 if axis is None else axis


def _narrowed(kw: dict, dtype: str) -> dict | None:
    """``kw`` with its float32 arrays in ``dtype``, or None if one of their values would change (NaN stays NaN)."""
    t = DT.get(dtype).np
    out = dict(kw)
    for name, v in kw.items():
        if isinstance(v, np.ndarray) and v.dtype == np.float32:
            with np.errstate(over="ignore"):
                n = v.astype(t)
            back = n.astype(np.float32)
            same = (back.view(np.uint32) == v.view(np.uint32)) | (np.isnan(back) & np.isnan(v))
            if not same.all():
                return None
            out[name] = n
    return out


def _canonical_kwargs(entry: MatrixEntry, kw: dict) -> dict:
    """Golden per-axis cases along any axis run through the entry's [outer, C, inner] program."""
    spec = ops.get(entry.op)
    ax = kw.get("axis", -1)
    if entry.attr.get("axis", -1) == 1 and ax >= 0:
        kw = dict(kw)
        for inp in spec.inputs:   # the data, and parameters of its rank (ONNX's blocked scales)
            if inp.layout == ops.DATA or spec.family.operand_layout(spec, {**entry.attr, **kw}, inp) == ops.BLOCKS:
                kw[inp.name] = three_d(kw[inp.name], ax)
        kw["axis"] = 1
    return kw
