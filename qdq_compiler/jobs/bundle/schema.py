"""The bundle config (TOML or JSON) and the manifest's schema constants.

A config lists op configurations (entries) and targets; :func:`parse_config` checks all of it before
anything is compiled, and every problem is a ``QDQError`` naming the config file (or the command-line
option that overrode it) and the entry.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ... import dtypes
from ... import semantics as SEM
from ... import targets as T
from ...config import OpConfig, parse_shape
from ...errors import QDQError
from .signature import check_declared

SCHEMA = "qdq_compiler.bundle"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
DEFAULT_TARGETS = ("cpu",)

# Entry names become file names (<name>.<target>.vmfb): no path separators, no leading dot.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ENTRY_KEYS = ("name", "op", "attrs", "dtype", "shape", "input_shapes", "input_dtypes", "targets", "semantics",
               "params")
# An entry's numeric attributes: baked into the artifact, or arguments of each call (config.PARAM_MODES)
ENTRY_PARAMS = ("baked", "arguments")
_TOP_KEYS = ("schema_version", "name", "targets", "target_cpu", "entries")


@dataclass(frozen=True)
class Entry:
    """One op configuration of a bundle config."""
    name: str
    op: str
    attrs: Mapping[str, Any]
    dtype: str
    shape: tuple
    targets: tuple[str, ...] | None = None
    semantics: str = SEM.DEFAULT
    params: str = "baked"


@dataclass(frozen=True)
class BundleConfig:
    name: str
    targets: tuple[str, ...]
    entries: tuple[Entry, ...]
    target_cpu: str | None = None
    source: str = "<config>"


def _cfg_error(source: str, msg: str) -> QDQError:
    if source.startswith("--"):  # a command-line override
        return QDQError(msg, arg=source)
    return QDQError(f"bundle config {source}: {msg}", arg="config")


def _read_config_file(path: Path) -> dict:
    if path.suffix.lower() not in (".toml", ".json"):  # a .yaml read as TOML gave a baffling TOML error
        raise _cfg_error(str(path), f"unknown format {path.suffix or '(no suffix)'!r}; write the config as .toml "
                                    f"or .json (examples/qat_bundle.toml)")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise _cfg_error(str(path), f"cannot read it: {e.strerror}") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(raw.decode())
        except (UnicodeDecodeError, ValueError) as e:
            raise _cfg_error(str(path), f"invalid JSON: {e}") from None
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise _cfg_error(str(path), "reading TOML on Python 3.10 needs the 'tomli' package "
                                        "(pip install tomli), or write the config as JSON") from None
    try:
        return tomllib.loads(raw.decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise _cfg_error(str(path), f"invalid TOML: {e}") from None


def as_targets(value, source: str, what: str) -> tuple[str, ...]:
    """A target list (a list, or a comma-separated string) checked and deduplicated; ``source`` and
    ``what`` name where it came from in errors (a config file, or ``--targets``)."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
        raise _cfg_error(source, f"{what} must be a non-empty list of target names, got {value!r}")
    out = []
    for t in value:
        if t == "cpu-host":
            raise _cfg_error(source, f"{what}: target 'cpu-host' is not portable and cannot be checked on load; "
                                     f"use target 'cpu' with target_cpu = \"host\" (--target-cpu host)")
        try:
            T.get(t)
        except QDQError as e:
            raise _cfg_error(source, f"{what}: {e}") from None
        if t not in out:
            out.append(t)
    return tuple(out)


def parse_config(data: Mapping | str | os.PathLike) -> BundleConfig:
    """A bundle config from a .toml or .json file (by suffix; another suffix is an error) or a mapping.

    Top level: ``targets`` (default ``["cpu"]``), optional ``name``, ``target_cpu`` and
    ``schema_version`` (1), and ``entries``: a list of tables with ``op`` (a raw op name), ``attrs``
    (its attributes; defaults filled in), ``dtype`` (f32/f64/f16/bf16, default f32), ``semantics``
    (``"tf-cpu"``, the default, or ``"tf-xla"``), ``shape`` (``"?x64"`` or a
    list with ``"?"`` for dynamic dims; default ``"?"``), ``name`` (default: the op; must be unique),
    ``input_shapes`` and ``input_dtypes`` (tables by input name: another input's shape, e.g. ONNX's per-axis
    ``y_scale = "64"``, and type, e.g. ``x = "int4"``; the program's internal choices are derived from them),
    ``params`` (``"baked"``, the default, or ``"arguments"``: the numeric attributes, such as MX's stochastic
    ``seed``, are arguments of each call) and an optional per-entry ``targets`` list.
    """
    if isinstance(data, (str, os.PathLike)):
        source = str(data)
        data = _read_config_file(Path(data))
    else:
        source = "<mapping>"
    if not isinstance(data, Mapping):
        raise _cfg_error(source, "the top level must be a table/object")
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise _cfg_error(source, f"unknown key {unknown[0]!r}; allowed: {', '.join(_TOP_KEYS)}")
    version = data.get("schema_version", 1)
    if version != 1:
        raise _cfg_error(source, f"schema_version={version!r}; this qdq_compiler reads version 1")
    targets = as_targets(data.get("targets", list(DEFAULT_TARGETS)), source, "targets")
    name = data.get("name", "bundle")
    if not isinstance(name, str):
        raise _cfg_error(source, f"name must be a string, got {name!r}")
    target_cpu = data.get("target_cpu")
    if target_cpu is not None and not isinstance(target_cpu, str):
        raise _cfg_error(source, f"target_cpu must be a string, got {target_cpu!r}")
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise _cfg_error(source, "'entries' must be a non-empty list of tables ([[entries]] in TOML)")
    entries, seen = [], {}
    for i, e in enumerate(raw_entries, 1):
        where = f"entries[{i}]"
        if not isinstance(e, Mapping):
            raise _cfg_error(source, f"{where} must be a table, got {e!r}")
        unknown = sorted(set(e) - set(_ENTRY_KEYS))
        if unknown:
            raise _cfg_error(source, f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(_ENTRY_KEYS)}")
        op = e.get("op")
        if not isinstance(op, str):
            raise _cfg_error(source, f"{where}: 'op' (a raw op name, see 'qdqc ops') is required")
        ename = e.get("name", op)
        where = f"entries[{i}] ({ename})"
        if not isinstance(ename, str) or not NAME_RE.match(ename):
            raise _cfg_error(source, f"{where}: name {ename!r} must be letters, digits, '_', '-' or '.'")
        if ename in seen:
            raise _cfg_error(source, f"{where}: name {ename!r} is also entries[{seen[ename]}]'s; give each entry "
                                     f"a distinct 'name'")
        seen[ename] = i
        attrs = e.get("attrs", {})
        if not isinstance(attrs, Mapping):
            raise _cfg_error(source, f"{where}: attrs must be a table, got {attrs!r}")
        try:
            dtype = dtypes.get(e.get("dtype", "float32")).name
        except (QDQError, TypeError, ValueError):
            raise _cfg_error(source, f"{where}: dtype {e.get('dtype')!r} is not supported; "
                                     f"allowed: {dtypes.allowed()}") from None
        params = e.get("params", "baked")
        if params not in ENTRY_PARAMS:
            raise _cfg_error(source, f"{where}: params={params!r}; allowed: {', '.join(map(repr, ENTRY_PARAMS))} "
                                     f"('arguments': the numeric attributes are given at each call)")
        shape = e.get("shape", "?")
        if isinstance(shape, list):
            shape = [None if d == "?" else d for d in shape]
        declared = {}
        for key in ("input_shapes", "input_dtypes"):
            declared[key] = e.get(key, {})
            if not isinstance(declared[key], Mapping):
                raise _cfg_error(source, f"{where}: {key} must be a table of input name -> "
                                         f"{'shape' if key == 'input_shapes' else 'dtype'}, got {declared[key]!r}")
        shapes = {n: [None if d == "?" else d for d in v] if isinstance(v, list) else v
                  for n, v in declared["input_shapes"].items()}
        try:
            shape = parse_shape(shape)
            cfg = OpConfig.from_reference(op, dict(attrs), dtype, shape, "cpu", params, e.get("semantics"), "",
                                          shapes, declared["input_dtypes"])
            check_declared(cfg, shapes)
        except QDQError as err:
            raise _cfg_error(source, f"{where}: {err}") from None
        etargets = as_targets(e["targets"], source, f"{where}.targets") if "targets" in e else None
        if etargets and set(etargets) - set(targets):
            extra = sorted(set(etargets) - set(targets))[0]
            raise _cfg_error(source, f"{where}.targets: {extra!r} is not one of the bundle's targets "
                                     f"({', '.join(targets)}); an entry's targets select among them")
        entries.append(Entry(ename, op, dict(cfg.attrs), dtype, cfg.shape, etargets, cfg.semantics, params))
    return BundleConfig(name, targets, tuple(entries), target_cpu, source)
