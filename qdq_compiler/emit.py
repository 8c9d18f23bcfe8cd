"""Render an ``OpConfig`` into StableHLO text from the Jinja2 templates in ``templates/``.

Only validated numbers (as exact hex bit patterns) and identifiers from the registry reach a
template. Every rendered module is parsed and verified with ``iree.compiler.ir`` before it is
returned, so a template bug surfaces here, with the rendered text and the line, not inside iree-compile.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import registry as R
from .config import OpConfig
from .errors import TemplateError
from .oracle import fake_quant as _fq
from .oracle.qdq import int_range
from .oracle.numerics import bits, int_to

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
if not TEMPLATE_DIR.is_dir():  # installed as a wheel: templates ship inside the package
    TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
if os.environ.get("QDQ_TEMPLATE_DIR"):  # tests/test_lit_mutation.py renders from a (broken) copy
    TEMPLATE_DIR = Path(os.environ["QDQ_TEMPLATE_DIR"])

_MLIR_TYPES = {"float32": "f32", "float64": "f64"}
_TEMPLATE_OF_FAMILY = {
    R.QDQ: "qdq.mlir.j2",
    R.QDQ_GRAD: "qdq_grad.mlir.j2",
    R.FAKE_QUANT: "fake_quant.mlir.j2",
    R.FAKE_QUANT_GRAD: "fake_quant_grad.mlir.j2",
}


@functools.lru_cache(maxsize=1)
def _env():
    import jinja2  # imported on first render only: a cached artifact loads without it
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             autoescape=False)
    env.filters["extract"] = lambda i, seq: seq[i]
    env.filters["dimstr"] = lambda d: "?" if d is None else str(d)
    env.tests["none"] = lambda v: v is None
    return env


@dataclass(frozen=True)
class Param:
    """One numeric attribute-derived parameter: a trailing 0-d argument, or a baked constant."""
    name: str
    etype: str          # MLIR element type
    value: Any          # numpy scalar (baked) or None (runtime)
    baked: bool


def param_values(spec: R.OpSpec, attrs: dict, dtype: str) -> list[tuple[str, str, np.generic]]:
    """The parameters a program needs from its numeric attributes, computed on the host, exactly.

    QDQ: the integer range converted to T. V1 with a given range: its float attrs in T. FakeQuant Args:
    the whole nudged range (a host computation with TF's float32 order and FTZ, like the oracle).
    Vars/PerChannel: the quantisation levels; the nudge itself runs on device from the min/max tensors.
    """
    T = np.dtype(dtype)
    t = _MLIR_TYPES[dtype]
    if spec.family == R.QDQ and not spec.num_bits_input:
        qmin, qmax = int_range(attrs["signed_input"], attrs["num_bits"], attrs.get("narrow_range", False))
        out = [("qmin", t, int_to(qmin, T)[()]), ("qmax", t, int_to(qmax, T)[()])]
        if spec.range_from == "attr" and attrs["range_given"]:
            out += [("range_lo", t, np.float32(attrs["input_min"]).astype(T)),
                    ("range_hi", t, np.float32(attrs["input_max"]).astype(T))]
        return out
    if spec.family in (R.FAKE_QUANT, R.FAKE_QUANT_GRAD):
        if spec.range_from == "attr":
            n = _fq.nudge(np.float32(attrs["min"]), np.float32(attrs["max"]), attrs["num_bits"], attrs["narrow_range"])
            return [(name, "f32", np.float32(getattr(n, name)))
                    for name in ("nudged_min", "nudged_max", "scale", "inv", "qzero")]
        quant_min = 1 if attrs["narrow_range"] else 0
        return [("quant_min", "f32", np.float32(quant_min)), ("quant_max", "f32", np.float32((1 << attrs["num_bits"]) - 1))]
    return []


def _dim(d) -> str:
    return "?" if d is None else str(d)


class RenderContext:
    """Everything a template may use: types, rank, axis, the argument list and parameters."""

    def __init__(self, cfg: OpConfig, attrs: dict):
        spec = cfg.spec
        self.cfg, self.spec, self.op, self.fn = cfg, spec, cfg.op, cfg.op
        self.T = _MLIR_TYPES[cfg.dtype]
        self.rank = cfg.rank
        self.dims = list(cfg.shape)
        self.attrs = attrs
        if spec.per_channel_last:
            self.axis = self.rank - 1
        elif spec.has_axis and attrs["axis"] >= 0:
            self.axis = attrs["axis"]
        else:
            self.axis = None
        self.ttype = self.tensor_type(self.T)
        self.ptype = self.param_type(self.T)
        self.reduce_dims = [d for d in range(self.rank) if d != self.axis]
        self.reduce_dims_static = all(self.dims[d] is not None for d in self.reduce_dims)
        self.range_given = attrs.get("range_given", spec.range_from != "data")
        self.half_up = attrs.get("round_mode") == "HALF_UP"
        self.signed = attrs.get("signed_input", True)
        self.narrow = attrs.get("narrow_range", False)
        pv = param_values(spec, dict(attrs), cfg.dtype)
        self.params = [Param(n, t, v, cfg.params == "baked") for n, t, v in pv]
        self.np = np
        from .targets import TARGETS
        target = TARGETS.get(cfg.target)
        self.quirks = target.quirks if target else ()
        self.np_dtype = np.dtype(cfg.dtype)

    # -- types --------------------------------------------------------------------------------
    def tensor_type(self, etype: str) -> str:
        return "tensor<" + "".join(_dim(d) + "x" for d in self.dims) + etype + ">"

    def param_type(self, etype: str) -> str:
        if self.axis is None:
            return f"tensor<{etype}>"
        return f"tensor<{_dim(self.dims[self.axis])}x{etype}>"

    def i1_of(self, type_: str) -> str:
        head = type_[: type_.rfind("x") + 1] if "x" in type_[7:] else "tensor<"
        return head + "i1>"

    def hex(self, value, etype: str | None = None) -> str:
        """The exact bit pattern of a float constant (MLIR's hex form), or a plain integer literal."""
        etype = etype or self.T
        if etype.startswith("i"):
            return str(int(value))
        np_t = {"f32": np.float32, "f64": np.float64}[etype]
        b = int(bits(np.asarray(value, np_t)))
        return f"0x{b:0{np.dtype(np_t).itemsize * 2}X}"

    def reduce_window(self, budget: int = 4096) -> list[int]:
        """Window sizes for a two-stage reduction: 1 on the channel, about budget^(1/r) on each reduced dim."""
        r = len(self.reduce_dims)
        per = max(int(round(budget ** (1.0 / r))), 2) if r else 1
        while r and per ** r > budget:
            per -= 1
        # A window wider than a static dimension trips IREE's reduce_window lowering: clip it.
        return [1 if d == self.axis else max(1, min(per, self.dims[d])) if self.dims[d] is not None else per
                for d in range(self.rank)]

    def window_padding(self, window: list[int]) -> list[int]:
        """High padding per dimension: exact for static dims, w - 1 (enough for any size) for dynamic ones."""
        return [(-d) % w if d is not None else w - 1 for d, w in zip(self.dims, window)]

    def partial_type(self, window: list[int]) -> str:
        """The result type of the first stage: ceil(n / w) per reduced dimension."""
        dims = []
        for d, w in zip(self.dims, window):
            dims.append("?" if d is None else str(-(-d // w) if d else 0))
        return "tensor<" + "".join(x + "x" for x in dims) + self.T + ">"

    def sign_mask(self, itype: str) -> str:
        """The sign bit of a float of the integer width ``itype``, as a signed decimal literal."""
        return str(-(1 << 63) if itype == "i64" else -(1 << 31))

    # -- the function signature -----------------------------------------------------------------
    def input_type(self, inp: R.Input) -> str:
        if inp.role in ("data", "grad"):
            return self.ttype
        if inp.role == "num_bits":
            return "tensor<i32>"
        return self.ptype  # min / max: 0-d per-tensor, [C] per-channel

    @property
    def arguments(self) -> list[tuple[str, str]]:
        args = [(i.name, self.input_type(i)) for i in self.spec.inputs]
        args += [(p.name, f"tensor<{p.etype}>") for p in self.params if not p.baked]
        return args

    @property
    def signature(self) -> str:
        return ", ".join(f"%{n}: {t}" for n, t in self.arguments)

    @property
    def result_types(self) -> list[str]:
        if self.spec.family in (R.QDQ, R.FAKE_QUANT) or self.spec.outputs == ("backprops",):
            return [self.ttype]
        return [self.ttype, self.ptype, self.ptype]


def render(cfg: OpConfig, attrs: dict | None = None) -> str:
    """StableHLO text for ``cfg``; parsed and verified before it is returned."""
    attrs = dict(cfg.attrs) if attrs is None else dict(attrs)
    ctx = RenderContext(cfg, attrs)
    tmpl = _env().get_template(_TEMPLATE_OF_FAMILY[cfg.spec.family])
    text = _tidy(tmpl.render(k=ctx))
    verify(text, what=cfg.describe())
    return text


def _tidy(text: str) -> str:
    """Drop the blank lines that Jinja leaves inside functions; one blank line between functions."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith(("func.func", "// ")) and out and out[-1] == "}":
            out.append("")
        out.append(line)
    return "\n".join(out) + "\n"


def verify(text: str, what: str = "module") -> None:
    """Parse and verify MLIR text in-process (about a millisecond); raise TemplateError with the line."""
    from iree.compiler import ir
    try:
        with ir.Context():
            module = ir.Module.parse(text)
            if not module.operation.verify():
                raise TemplateError(f"rendered {what} does not verify:\n{text}")
    except TemplateError:
        raise
    except Exception as e:  # ir.MLIRError: diagnostics with locations
        lines = text.splitlines()
        detail = str(e)
        import re
        m = re.search(r"loc\(\"-\":(\d+):(\d+)\)|:(\d+):(\d+)", detail)
        where = ""
        if m:
            ln = int(m.group(1) or m.group(3))
            if 0 < ln <= len(lines):
                where = f"\n  at line {ln}: {lines[ln - 1].strip()}"
        raise TemplateError(f"template bug: rendered {what} does not parse: {detail}{where}\n--- rendered text ---\n{text}") from None
