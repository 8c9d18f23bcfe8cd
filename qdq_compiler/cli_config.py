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


def _attrs(args) -> dict:
    return dict(parse_attr_value(args.op, a) for a in (args.attr or []))


def _dtype(text: str) -> str:
    try:
        return dtypes.get(text).name
    except QDQError:
        raise QDQError(f"--dtype {text!r} is not supported; allowed: {dtypes.allowed()}", arg="--dtype") from None


def _named(texts, option: str) -> tuple[list[str], dict[str, str]]:
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


def _config(args):
    from .config import OpConfig
    plain, shapes = _named(args.shape, "--shape")
    if len(plain) > 1:
        raise QDQError(f"--shape is given {len(plain)} times without a name; the data's is DIMS, another input's "
                       f"NAME=DIMS (e.g. --shape 4x10 --shape y_scale=4)", arg="--shape")
    extra, types = _named(args.input_dtype, "--input-dtype")
    if extra:
        raise QDQError(f"--input-dtype {extra[0]!r} must look like NAME=DTYPE (e.g. x=int4)", arg="--input-dtype")
    from .jobs.bundle.signature import check_declared
    cfg = OpConfig.from_reference(args.op, _attrs(args), _dtype(args.dtype), plain[0] if plain else "?",
                                  args.target, args.params, args.semantics, args.tuning, shapes, types)
    check_declared(cfg, shapes)
    return cfg
