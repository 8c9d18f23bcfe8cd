"""An artifact's function signature: derived from its op configuration when it is built, recorded in the
manifest, and checked against the compiled module both right after compiling and when it is loaded (so a
file swapped for another artifact with a matching hash in the manifest is still caught).
"""
from __future__ import annotations

import re

from ... import dtypes
from ...emit import RenderContext
from ...errors import BundleError, QDQError


def _tensor_desc(name: str, mlir_type: str) -> dict:
    m = re.fullmatch(r"tensor<(.*)>", mlir_type)
    parts = m.group(1).split("x")
    dims = [None if d == "?" else int(d) for d in parts[:-1]]
    return {"name": name, "dtype": dtypes.from_mlir(parts[-1]), "shape": dims, "type": mlir_type}


def function_signature(cfg) -> dict:
    """The artifact's function: name, inputs (TF's names, in TF's order) and outputs, with dynamic dims."""
    ctx = RenderContext(cfg, dict(cfg.attrs))
    spec = cfg.spec
    inputs = [_tensor_desc(n, t) for n, t in ctx.public_arguments]
    outputs = [_tensor_desc(n, t) for n, t in zip(spec.outputs, ctx.result_types)]
    return {"name": cfg.op, "inputs": inputs, "outputs": outputs}


def check_declared(cfg, shapes) -> None:
    """Inputs whose shapes were declared by name (``OpConfig.from_reference``'s ``shapes``) against the program's
    parameters: a QDQError naming the input, what the program takes and the attributes that decided it."""
    from ...config import format_shape, parse_shape
    spec, a = cfg.spec, cfg.attr
    for d in function_signature(cfg)["inputs"]:
        if d["name"] not in (shapes or {}):
            continue
        want, given = d["shape"], parse_shape(shapes[d["name"]])
        if len(given) != len(want) or any(g is not None and w is not None and g != w for g, w in zip(given, want)):
            deciding = ", ".join(f"{k}={a[k]}" for k in ("axis", "block_size")   # where the operands lie
                                 if k in spec.attr_map and not spec.is_internal(k))
            raise QDQError(f"input {d['name']} of shape {format_shape(given)} does not fit: for data of shape "
                           f"{format_shape(cfg.shape)}{' and ' + deciding if deciding else ''} it has shape "
                           f"{format_shape(want)}", op=spec.name, arg=d["name"])


def _declaration_types(decl: str) -> tuple[list[str], list[str]]:
    """The argument and result types of an ``iree.abi.declaration`` string."""
    m = re.search(r"\((.*?)\)\s*->\s*\((.*)\)\s*$", decl)
    if not m:
        return [], []
    find = lambda s: re.findall(r"tensor<[^>]*>", s)  # noqa: E731
    return find(m.group(1)), find(m.group(2))


def check_module(data: bytes, fn: dict, where: str, instance=None):
    """Parse the .vmfb with the IREE runtime and check its function against the manifest's signature."""
    import iree.runtime as rt  # lazy: the IREE runtime is slow to import
    try:
        module = rt.VmModule.copy_buffer(instance or rt.VmInstance(), data)
    except Exception as e:
        raise BundleError(f"{where}: the IREE runtime cannot load it: {str(e).splitlines()[0]}", arg="bundle") from None
    if fn["name"] not in module.function_names:
        raise BundleError(f"{where}: has no function @{fn['name']} (it exports {', '.join(module.function_names)})",
                          arg="bundle")
    decl = module.lookup_function(fn["name"]).reflection.get("iree.abi.declaration", "")
    args, results = _declaration_types(decl)
    want_args = [i["type"] for i in fn["inputs"]]
    want_results = [o["type"] for o in fn["outputs"]]
    if decl and (args != want_args or results != want_results):
        raise BundleError(f"{where}: its @{fn['name']} takes ({', '.join(args)}) -> ({', '.join(results)}) but the "
                          f"manifest says ({', '.join(want_args)}) -> ({', '.join(want_results)})", arg="bundle")
    return module
