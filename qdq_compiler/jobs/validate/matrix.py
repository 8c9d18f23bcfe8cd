"""The validation matrix: op x structural attributes x dtype x shape kind (static/dynamic), and its shards."""
from __future__ import annotations

from dataclasses import dataclass

from ... import dtypes as DT
from ... import ops as op_registry
from ... import semantics as SEM


@dataclass(frozen=True)
class MatrixEntry:
    """One row of the matrix: an op with its structural attributes, a dtype and a shape kind."""
    op: str
    attrs: tuple
    dtype: str
    static: bool
    semantics: str = SEM.DEFAULT

    @property
    def name(self) -> str:
        a = ",".join(f"{k}={v}" for k, v in self.attrs)
        sem = "" if self.semantics == SEM.DEFAULT else f"@{self.semantics}"
        return f"{self.op}{f'[{a}]' if a else ''}:{DT.get(self.dtype).short}:{'static' if self.static else 'dynamic'}{sem}"

    @property
    def attr(self) -> dict:
        return dict(self.attrs)


def structural_variants(spec: op_registry.OpSpec) -> list[dict]:
    """The structural attribute combinations of an op (what changes the compiled program)."""
    return spec.family.matrix_variants(spec)


def build_matrix(ops=None, dtypes=None, semantics=(SEM.DEFAULT,)) -> list[MatrixEntry]:
    """Every configuration of the ops named (default: all), for the dtypes named (default: each op's
    under each semantics), under each of ``semantics``."""
    entries = []
    for sem in semantics:
        for name, spec in op_registry.OPS.items():
            if ops and name not in ops:
                continue
            if not spec.family.answers(sem):
                continue  # a semantics that covers other families
            rules = spec.family.rules(sem)
            if rules.unsupported(spec):
                continue  # no answer under this semantics (V1 has no XLA lowering)
            for a in structural_variants(spec):
                if not rules.answers_variant(spec, a):
                    continue   # a variant this semantics has no answer for (onnxruntime's float4)
                for dt in rules.dtypes:
                    if dtypes and dt not in dtypes:
                        continue
                    # Static shapes for float32 only: static f64 adds compile time and no new code path
                    # (tests/test_large_inputs.py runs static f64 beyond the Vulkan loop limit).
                    for static in ((False, True) if dt == "float32" else (False,)):
                        entries.append(MatrixEntry(name, tuple(sorted(a.items())), dt, static, sem))
    return entries



def shard(entries: list[MatrixEntry], i: int, n: int) -> list[MatrixEntry]:
    """The ``i``-th of ``n`` interleaved slices of ``entries`` (1-based); the n slices partition them."""
    if not 1 <= i <= n:
        raise ValueError(f"shard {i}/{n}: expected 1 <= i <= n")
    return entries[i - 1::n]
