"""The shape of the package (issue 11): no import cycles, modules small enough to read at once, and
op-family rules only in the family modules."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "qdq_compiler"
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    out = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = f
    return out


def _walk_runtime(tree):
    """Every node but those under ``if TYPE_CHECKING:`` (imports for annotations only, never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                continue
            todo.append(child)


def _imports(name: str, path: Path, modules) -> set[str]:
    """The package modules ``name`` imports, at any depth of its code (function-level imports included)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in _walk_runtime(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def test_no_import_cycles():
    modules = _modules()
    graph = {n: _imports(n, p, modules) for n, p in modules.items()}
    # A package imports its submodules by design; a cycle is a module that reaches itself otherwise.
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if n.startswith(m + "."):  # a submodule importing its own package's __init__ (siblings)
                continue
            if state.get(m) == 1:
                cycle = stack[stack.index(m):] + [m]
                if not any(b.startswith(a + ".") for a, b in zip(cycle, cycle[1:])):
                    pytest.fail("import cycle: " + " -> ".join(cycle))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_no_job_imports_the_cli():
    modules = _modules()
    for n, p in modules.items():
        if n not in ("qdq_compiler.cli", "qdq_compiler.__main__", "qdq_compiler.console"):  # the entry points
            assert "qdq_compiler.cli" not in _imports(n, p, modules), n


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_small_enough_to_read_at_once(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {n} lines (at most {MAX_LINES})"


# Reading a family's own switches, or asking which family or op a spec is, belongs in qdq_compiler/ops/.
_BRANCHING = re.compile(r"\.variant\b|family\.name\s*(==|!=|\.startswith)|family (==|!=|in) |\bspec\.name ==|\bop == \"")


def test_family_rules_stay_in_the_family_modules():
    offenders = []
    for f in sorted(PACKAGE.rglob("*.py")):
        if f.parent.name == "ops":
            continue
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if _BRANCHING.search(line):
                offenders.append(f"{f.relative_to(PACKAGE)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# Operands are declared (Input.shape, dtype, example; OpSpec.sums_of): generic code reads the declarations,
# never the reference's role names (issue 22, item 1).
_ROLE_READ = re.compile(r"\.role\b|\.input\(\"")


def test_generic_code_reads_operand_declarations_not_role_names():
    offenders = [f"{f.relative_to(PACKAGE)}:{i}: {line.strip()}"
                 for f in sorted(PACKAGE.rglob("*.py")) if f.parent.name != "ops"
                 for i, line in enumerate(f.read_text().splitlines(), 1) if _ROLE_READ.search(line)]
    assert not offenders, "\n".join(offenders)
