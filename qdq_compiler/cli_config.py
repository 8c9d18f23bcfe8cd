"""``qdqc``'s op configuration from its options: ``--attr`` (the reference's attributes), ``--shape`` (the data's,
and other inputs' by name) and ``--input-dtype`` (an input's type by name), as ``OpConfig.from_reference`` takes them:
the internal attributes are derived from these declarations as a call derives them from its arrays."""
from __future__ import annotations

from . import dtypes, ops
from .errors import QDQError


def parse_attr_value(op: str, text: str):
    """'num_bits=4' -> ('num_bits', 4), typed by the op registry."""
    spec = ops.get(op)
    if "=" not in text:
        raise QDQError(f"--attr {text!r} must look like NAME=VALUE", arg="--attr")
    name, value = text.split("=", 1)
    attr = spec.attr_map.get(name)
    if attr is None:
        raise QDQError(f"unknown attribute {name!r} for {op}; attributes: {spec.user_attr_names}", arg="--attr")
    try:
        if attr.kind is bool:
            low = value.lower()
            if low not in ("true", "false", "1", "0"):
                raise ValueError
            return name, low in ("true", "1")
        if attr.kind is int:
            return name, int(value)
        if attr.kind is float:
            return name, float.fromhex(value) if value.lower().lstrip("-+").startswith("0x") else float(value)
        return name, value
    except ValueError:
        raise QDQError(f"--attr {name}={value!r}: expected {dict(bool='a bool (true/false)', int='an int', float='a float').get(attr.kind.__name__, 'a string')}", arg=name) from None


def attrs_from(args) -> dict:
    return dict(parse_attr_value(args.op, a) for a in (args.attr or []))


def dtype_from(text: str) -> str:
    try:
        return dtypes.get(text).name
    except QDQError:
        raise QDQError(f"--dtype {text!r} is not supported; allowed: {dtypes.allowed()}", arg="--dtype") from None


def named_values(texts, option: str) -> tuple[list[str], dict[str, str]]:
    """Repeatable ``--shape``/``--input-dtype`` values: (the unnamed ones, {input name: value} of NAME=VALUE)."""
    plain, named = [], {}
    for t in texts or []:
        name, eq, value = t.partition("=")
        if eq and name and not name[0].isdigit() and name not in ("?",):
            if name in named:
                raise QDQError(f"{option} {name}= is given twice", arg=option)
            named[name] = value
        else:
            plain.append(t)
    return plain, named


def input_types(args, spec) -> dict[str, str]:
    """``--input-dtype NAME=DTYPE`` of ``qdqc run``: {input name: dtype}, each naming an input of the op."""
    extra, types = named_values(args.input_dtype, "--input-dtype")
    if extra or set(types) - set(spec.input_names):
        raise QDQError(f"--input-dtype {(extra or sorted(set(types) - set(spec.input_names)))[0]!r}: NAME=DTYPE of "
                       f"an input of {args.op} ({', '.join(spec.input_names)})", arg="--input-dtype")
    return types


def config_from(args):
    from .config import OpConfig
    plain, shapes = named_values(args.shape, "--shape")
    if len(plain) > 1:
        raise QDQError(f"--shape is given {len(plain)} times without a name; the data's is DIMS, another input's "
                       f"NAME=DIMS (e.g. --shape 4x10 --shape y_scale=4)", arg="--shape")
    extra, types = named_values(args.input_dtype, "--input-dtype")
    if extra:
        raise QDQError(f"--input-dtype {extra[0]!r} must look like NAME=DTYPE (e.g. x=int4)", arg="--input-dtype")
    from .jobs.bundle.signature import check_declared
    cfg = OpConfig.from_reference(args.op, attrs_from(args), dtype_from(args.dtype), plain[0] if plain else "?",
                                  args.target, args.params, args.semantics, args.tuning, shapes, types)
    check_declared(cfg, shapes)
    return cfg
