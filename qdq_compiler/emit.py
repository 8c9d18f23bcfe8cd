"""Render an ``OpConfig`` into StableHLO text from the Jinja2 templates in ``templates/``.

Only validated numbers (as exact hex bit patterns) and identifiers from the op registry reach a
template. Every rendered module is parsed and verified with ``iree.compiler.ir`` before it is
returned, so a template bug surfaces here, with the rendered text and the line, not inside iree-compile.
"""
from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import compile as compile_
from . import dtypes, ops, semantics, storage, targets
from .config import LONG_ROWS, SPLIT_COLUMNS, SPLIT_ROWS, OpConfig
from .errors import TemplateError
from .numerics import bits

# The package's own folder first (a wheel's copy; in the checkout, a link to the top-level templates/): an installed
# package must never render another distribution's site-packages/templates.
TEMPLATE_DIR = (Path(__file__).resolve().parent / "templates").resolve()
if not TEMPLATE_DIR.is_dir():  # a copy of the checkout without the link
    TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
if os.environ.get("QDQ_TEMPLATE_DIR"):  # tests/test_lit_mutation.py renders from a (broken) copy
    TEMPLATE_DIR = Path(os.environ["QDQ_TEMPLATE_DIR"])



@functools.lru_cache(maxsize=1)
def _env():
    """The Jinja environment of TEMPLATE_DIR, made once per process: a new one per render compiled every template
    again (Jinja still reloads a template whose file changed)."""
    return _env_of(str(TEMPLATE_DIR))


@functools.lru_cache(maxsize=None)
def _env_of(template_dir: str):
    import jinja2  # imported on first render only: a cached artifact loads without it
    try:   # the compiled templates, shared by every process on the cache (Jinja checks each against its source)
        where = compile_.template_bytecode_dir()
        where.mkdir(parents=True, exist_ok=True)
        bytecode = jinja2.FileSystemBytecodeCache(str(where))
    except OSError:   # a cache dir we cannot write: compile the templates in this process
        bytecode = None
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir), undefined=jinja2.StrictUndefined,
                             bytecode_cache=bytecode,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             autoescape=False)
    env.tests["none"] = lambda v: v is None
    return env


@dataclass(frozen=True)
class Param:
    """One numeric attribute-derived parameter: a trailing 0-d argument, or a baked constant."""
    name: str
    etype: str          # MLIR element type
    value: Any          # numpy scalar (baked) or None (runtime)
    baked: bool


def param_values(spec: ops.OpSpec, attrs: dict, dtype: str,
                 semantics: str = semantics.DEFAULT) -> list[tuple[str, str, np.generic]]:
    """The parameters a program needs from its numeric attributes, computed on the host, exactly
    (each family says which: ``Family.params``)."""
    return spec.family.rules(semantics).params(spec, attrs, dtype)


def _dim(d) -> str:
    return "?" if d is None else str(d)


class _Vars(dict):
    """The family's template switches (``k.v.<name>``); a name the family does not define is an error."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"the family defines no template variable {name!r}; it has: {', '.join(self)}") \
                from None


class RenderContext:
    """Everything a template may use: types, rank, axis, the argument list, parameters, the family's
    switches (``k.v``), the target's typed quirks (``k.quirks``) and limits."""

    def __init__(self, cfg: OpConfig, attrs: dict):
        spec = cfg.spec
        target = targets.get(cfg.target)
        self.cfg, self.spec, self.op, self.fn = cfg, spec, cfg.op, cfg.op
        self.data_name = spec.data_input                 # the data tensor, whose shape the frame reads (_function)
        self.dtype = dtypes.get(cfg.dtype)              # the storage type (the function's inputs and outputs)
        self.compute = dtypes.get(self.dtype.compute)   # the type the arithmetic runs in (f32 for f16/bf16)
        self.T = self.compute.mlir
        self.S = self.dtype.mlir
        self.narrow = self.dtype.narrow                 # inputs widened on entry, outputs rounded on return
        # its row of the storage table: narrow_types.mlir.j2 generates the conversions from it
        self.storage_row = storage.get(self.dtype.name) if self.narrow else None
        # ... unless the target widens the inputs on the host (they arrive as float32; Limits.narrow_reductions)
        self.host_widened = target.widens_on_host(cfg.dtype, spec.family.reduces(spec, attrs))
        self.I = self.compute.int_mlir      # the integer of the element's width, for bit manipulations
        self.rank = cfg.rank
        self.dims = list(cfg.shape)
        self.attrs = attrs
        axis = spec.family.channel_axis(spec, attrs, self.rank)
        self.axis = axis if axis is not None and self.rank > 0 else None
        self.ttype = self.tensor_type(self.T)
        self.ptype = self.param_type(self.T)
        self.reduce_dims = [d for d in range(self.rank) if d != self.axis]
        self.range_given = attrs.get("range_given", True)
        self.half_up = attrs.get("round_mode") == "HALF_UP"
        self.sem = semantics.get(cfg.semantics)
        self.v = _Vars(spec.family.template_vars(spec, attrs))
        rules = spec.family.rules(cfg.semantics)
        self.arith = _Vars(rules.arithmetic)           # the semantics' arithmetic policy (Rules.arithmetic)
        self.round_each_op = self.narrow and rules.round_each_op   # macro rnd
        self.fused = bool(cfg.fma)                      # multiply-adds rounded once (macro fma)
        pv = param_values(spec, dict(attrs), cfg.dtype, cfg.semantics)
        self.params = [Param(n, t, v, cfg.params == "baked") for n, t, v in pv]
        self.np = np
        self.quirks = target.quirks
        self.target = target
        self.tuning = cfg.tuning
        self.hardware_fma = cfg.fma == "hardware"   # macro fma_funcs: math.fma, else the exact emulation
        # The data-shaped result is written into caller storage (Target.caller_storage; runtime params only:
        # what ships in bundles and `qdqc compile` output by default keeps the plain signature)
        self.result_storage = target.caller_storage and cfg.params == "runtime"
        # Loops are bounded on this target: reductions run in bounded blocks (macro reduce_in_blocks).
        self.loop_limited = target.limits.max_loop_iterations is not None
        self.np_dtype = self.compute.np

    @property
    def lane_reduction(self) -> str | None:
        """The hand-written reduction form on a target with quirk single_chain_reductions (macros
        reduce_range, masked_sums): "flat" ([n] to a scalar, many accumulator lanes), "columns" ([rows, C]
        to [C], a row of C accumulators walked down the rows: IREE's own form walks each channel's
        column alone, strided, 4-9x slower), "rows" ([outer, C, inner] with long inner rows to [C], each
        channel's rows reduced with many accumulator lanes), "split" (a long flat tensor as [rows, 1024],
        tuning split-rows: its rows spread over the workgroups, then the partials), "split-columns" ([rows, C]
        in 16 groups of rows, tuning split-columns: each group's column pass in its own workgroups, then the
        [16, C] partials); None keeps the StableHLO reduction."""
        if not self.quirks.single_chain_reductions or \
                (self.hardware_fma and self.target.multiply_add.vectors_16_bytes):
            return None
        if self.rank == 1 and self.axis is None:
            return "flat"
        if self.rank == 2 and self.axis == 1:
            return "split-columns" if self.tuning == SPLIT_COLUMNS else "columns"
        if self.rank == 3 and self.axis == 1 and self.tuning == LONG_ROWS:
            return "rows"
        if self.rank == 2 and self.axis is None and self.tuning == SPLIT_ROWS:
            return "split"
        return None

    @property
    def fuses_masked_gradient(self) -> bool:
        """Macro masked_sums writes the masked gradient in its own pass over g and x ("flat" and "split"
        lane forms): the template writes no masked pass of its own."""
        return self.lane_reduction in ("flat", "split")

    @property
    def abs_mask(self) -> int:
        """Every bit but the sign in the compute type (the magnitude of a float's bit pattern)."""
        return (1 << (self.compute.bits - 1)) - 1

    @property
    def inf_bits(self) -> int:
        """The bit pattern of +inf in the compute type, as a signed integer literal."""
        return int(bits(np.asarray(np.inf, self.compute.np)))

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
        np_t = dtypes.get(dtypes.from_mlir(etype)).np
        b = int(bits(np.asarray(value, np_t)))
        return f"0x{b:0{np_t.itemsize * 2}X}"

    # -- bounded reductions (macro reduce_in_blocks) ----------------------------------------------
    block = targets.REDUCTION_BLOCK   # elements one stage-1 loop reduces; stage 2 loops ceil(m / block) times

    @property
    def channel_dim(self) -> str:
        """The channel's extent in a type ("?" when dynamic)."""
        return _dim(self.dims[self.axis])

    @property
    def fold_perm(self) -> list[int]:
        """The data's dimensions with the channel first, then the reduced ones in order."""
        return ([self.axis] if self.axis is not None else []) + self.reduce_dims

    def permuted_type(self) -> str:
        return "tensor<" + "".join(_dim(self.dims[d]) + "x" for d in self.fold_perm) + self.T + ">"

    def sign_mask(self, itype: str) -> str:
        """The sign bit of a float of the integer width ``itype``, as a signed decimal literal."""
        return str(-(1 << (int(itype[1:]) - 1)))

    # -- the function signature -----------------------------------------------------------------
    def input_type(self, inp: ops.Input, storage: bool = True) -> str:
        """The type of an input: in the storage type at the boundary, else in the compute type."""
        if inp.layout == ops.SCALAR:
            return f"tensor<{dtypes.mlir_of(inp.dtype_name(self.attrs, self.cfg.dtype))}>"
        if not inp.typed_by_op:   # a fixed dtype (aten's bool mask, float32 scale, int32 zero point)
            return self.typed(self.kind_of(inp), dtypes.mlir_of(inp.dtype_name(self.attrs, self.cfg.dtype)))
        t = self.typed(self.kind_of(inp), self.T)  # min / max: 0-d per-tensor, [C] per-channel (ONNX: or blocked)
        return self.storage_type(t) if storage and not self.host_widened else t

    @property
    def data_type(self) -> str:
        """The type of the data tensor as the body reads it (the compute type; a storage type's container,
        ONNX's DequantizeLinear x), whose runtime shape the frame takes (macro shape_of)."""
        return self.input_type(next(i for i in self.spec.inputs if i.name == self.data_name), storage=False)

    def storage_type(self, type_: str) -> str:
        """A compute-type tensor type as the function boundary has it: a narrow float's bit pattern, the integer
        of its width (tensor<?xf32> -> tensor<?xi16> for float16 and bfloat16; narrow_types.mlir.j2 converts)."""
        return type_[: type_.rfind(self.T)] + self.dtype.int_mlir + ">" if self.narrow else type_

    def kind_of(self, operand) -> str:
        """'data', 'param' (a [C] vector), 'blocks' (a blocked parameter, the data's rank) or 'scalar' of a
        declared input or result (spec.Input, spec.Output): which conversion function a value goes through."""
        layout = self.spec.family.operand_layout(self.spec, self.attrs, operand) if isinstance(operand, ops.Input) \
            else operand.layout
        if layout == ops.DATA:
            return "data"
        if layout == ops.BLOCKS:
            return "blocks"
        return "param" if layout == ops.RANGE and self.axis is not None else "scalar"

    def kind_rank(self, kind: str) -> int:
        return {"data": self.rank, "blocks": self.rank, "split": self.rank + 1, "param": 1, "scalar": 0}[kind]

    def typed(self, kind: str, etype: str) -> str:
        """The tensor type of a value of ``kind`` with element type ``etype``."""
        if kind == "data":
            return self.tensor_type(etype)
        if kind == "split":    # the data (padded to whole blocks), its channel dimension as [blocks, block_size]
            size = self.spec.family.block_size(self.spec, self.attrs)
            dims = [(-(-d // size) if d is not None else None, size) if i == self.axis else (d,)
                    for i, d in enumerate(self.dims)]
            return "tensor<" + "".join(_dim(d) + "x" for group in dims for d in group) + etype + ">"
        if kind == "blocks":   # the data's dims, the channel's holding ceil(C / block_size) blocks
            size = self.spec.family.block_size(self.spec, self.attrs)
            dims = [d if i != self.axis or d is None else -(-d // size) for i, d in enumerate(self.dims)]
            return "tensor<" + "".join(_dim(d) + "x" for d in dims) + etype + ">"
        return self.param_type(etype) if kind == "param" else f"tensor<{etype}>"

    @property
    def storage_kinds(self) -> list[str]:
        """The kinds of the values that cross the boundary in the storage type."""
        kinds = {"data"} | {self.kind_of(i) for i in self.spec.inputs if i.layout == ops.RANGE and i.typed_by_op}
        return sorted(kinds | {kind for kind, narrowed in zip(self.result_kinds, self.result_narrowed) if narrowed})

    @property
    def widened(self) -> list[tuple[str, str, str, str]]:
        """(name, kind, storage type, compute type) of the inputs converted on entry (16-bit types only)."""
        if not self.narrow or self.host_widened:
            return []
        return [(i.name, self.kind_of(i), self.input_type(i), self.input_type(i, storage=False))
                for i in self.spec.inputs if i.layout != ops.SCALAR and i.typed_by_op]

    @property
    def result_kinds(self) -> list[str]:
        return [self.kind_of(r) for r in self.spec.results]

    def arg_name(self, inp: ops.Input) -> str:
        """An input's argument name: a widened input's is suffixed, the template's name is the f32 value."""
        return f"{inp.name}_storage" if self.widened and inp.layout != ops.SCALAR and inp.typed_by_op else inp.name

    @property
    def arguments(self) -> list[tuple[str, str]]:
        """(SSA name, type) of each function argument."""
        return [(self.arg_name(i), t) for i, (_, t) in zip(self.spec.inputs, self.public_arguments)] + \
            self.public_arguments[len(self.spec.inputs):]

    @property
    def public_arguments(self) -> list[tuple[str, str]]:
        """(TF's input name or the parameter's name, type) of each function argument, in order."""
        args = [(i.name, self.input_type(i)) for i in self.spec.inputs]
        args += [(p.name, f"tensor<{p.etype}>") for p in self.params if not p.baked]
        return args

    @property
    def signature(self) -> str:
        args = [f"%{n}: {t}" for n, t in self.arguments]
        if self.result_storage:   # every data-shaped result (aten's mask too)
            args += [f"%{r.name}_buffer: !hal.buffer {{iree.abi.output = {i} : index}}"
                     for i, r in enumerate(self.spec.results) if r.layout == ops.DATA]
        return ", ".join(args)

    @property
    def result_types(self) -> list[str]:
        """Each result's type as its declaration says (spec.Output), in storage type (a bool as i8)."""
        return [self.storage_type(t) if narrowed else t
                for t, narrowed in zip(self.compute_result_types, self.result_narrowed)]

    @property
    def result_narrowed(self) -> list[bool]:
        """Per result: rounded to a 16-bit storage type on return (a result of the op's type T)."""
        return [self.narrow and r.dtype == "T" for r in self.spec.results]

    @property
    def results(self) -> str:
        """The function's result list as MLIR writes it: one type alone, several in parentheses."""
        r = self.result_types
        return r[0] if len(r) == 1 else "(" + ", ".join(r) + ")"

    @property
    def compute_result_types(self) -> list[str]:
        """Each result's type as the body computes it (T in the compute type; a bool mask as i8, 0 or 1)."""
        return [self.typed(kind, self.T if r.dtype == "T" else dtypes.mlir_of(r.dtype_name(self.attrs, self.cfg.dtype)))
                for kind, r in zip(self.result_kinds, self.spec.results)]


def render(cfg: OpConfig, attrs: dict | None = None) -> str:
    """StableHLO text for ``cfg``; parsed and verified before it is returned."""
    attrs = dict(cfg.attrs) if attrs is None else dict(attrs)
    ctx = RenderContext(cfg, attrs)
    tmpl = _env().get_template(cfg.spec.family.rules(cfg.semantics).template)
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


_CONTEXTS = threading.local()


def _context():
    """This thread's MLIR context, made once: a new context costs ~30 ms (its dialects registered), a parse in a
    reused one ~0.3 ms. One per thread: a context is not for concurrent use."""
    ctx = getattr(_CONTEXTS, "ctx", None)
    if ctx is None:
        from iree.compiler import ir
        ctx = _CONTEXTS.ctx = ir.Context()
    return ctx


def verify(text: str, what: str = "module") -> None:
    """Parse and verify MLIR text in-process (under a millisecond); raise TemplateError with the line."""
    from iree.compiler import ir
    try:
        with _context():
            module = ir.Module.parse(text)
            if not module.operation.verify():
                raise TemplateError(f"rendered {what} does not verify:\n{text}")
    except TemplateError:
        raise
    except Exception as e:  # ir.MLIRError: diagnostics with locations
        lines = text.splitlines()
        detail = str(e)
        m = re.search(r"loc\(\"-\":(\d+):(\d+)\)|:(\d+):(\d+)", detail)
        where = ""
        if m:
            ln = int(m.group(1) or m.group(3))
            if 0 < ln <= len(lines):
                where = f"\n  at line {ln}: {lines[ln - 1].strip()}"
        raise TemplateError(f"template bug: rendered {what} does not parse: {detail}{where}\n--- rendered text ---\n{text}") from None
