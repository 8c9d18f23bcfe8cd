"""Loading a bundle: every file verified, the runtime and machine checked against what the artifacts
were built for, and each entry exposed as a callable with the raw op's keyword arguments (TF's input
names). Anything wrong is a :class:`~qdq_compiler.errors.BundleError` naming the file and what differs:
a tampered or corrupted file, another IREE release (bytecode is compatible only within one), a missing
driver or device, or, for ``cpu`` artifacts, a CPU that lacks a feature the build requires.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import platform
import re
from pathlib import Path

import numpy as np

from ... import dtypes
from ... import ops as R
from ... import emit, execute, runtime
from ... import targets as T
from ...config import OpConfig, format_shape
from ...targets.cpu import detect_host_cpu_features, is_x86_64
from ...errors import BundleError, QDQError, QDQTypeError
from ...opfuncs import pack
from ...validation import bind
from .schema import ENTRY_PARAMS, MANIFEST, NAME_RE, SCHEMA, SCHEMA_VERSION
from .signature import check_module


def _runtime_version() -> str:
    try:
        from iree._runtime_libs import version as v  # lazy: the IREE runtime is slow to import
        return v.VERSION
    except ImportError:  # pragma: no cover
        from importlib.metadata import version
        return version("iree-base-runtime")


def _major_minor(v: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)", v or "")
    return (int(m.group(1)), int(m.group(2))) if m else ()


class BundleEntry:
    """One artifact of a loaded bundle, called like the raw op: ``entry(inputs=x, min=lo, max=hi)``.

    Attributes are baked into the artifact (``entry.attrs``); passing one is allowed only with the
    baked value, except, in an entry built with ``params = "arguments"``, the numeric ones (``entry.arguments``:
    MX's seed, TF's num_bits and range), which each call may set (the recorded value is the default).
    Inputs are validated as ``qdq_compiler.raw_ops`` validates them (QDQError), then checked against the
    artifact's dtype and static dims. Multi-output ops return a namedtuple.
    """

    def __init__(self, bundle: "Bundle", record: dict, data: bytes):
        self._bundle, self.record, self._data = bundle, record, data
        self.name: str = record["name"]
        self.op: str = record["op"]
        self.attrs: dict = dict(record["attrs"])
        self.dtype: str = record["dtype"]
        self.semantics: str = record.get("semantics", "tf-cpu")   # bundles before semantics: TF's CPU kernels
        self.target: str = record["target"]
        self.function: dict = record["function"]
        self.file: Path = bundle.path / record["file"]
        self.sha256: str = record["sha256"]
        self.bit_exact: bool = bool(record.get("bit_exact", True))
        self._ready = None
        spec = self._spec = R.get(self.op)
        self.params: str = record.get("params", "baked")
        # the attributes each call may set: the numeric ones, where they are the artifact's arguments
        self.arguments = frozenset() if self.params == "baked" else \
            frozenset(spec.attr_map) - spec.family.structural(spec)
        self._np_dtype = dtypes.get(self.dtype).np
        # (name, static dims, widened on the host) of each of the op's inputs, in the function's order (then the
        # parameters of an entry with arguments)
        self._inputs = [(d["name"], d["shape"], d["dtype"] == "float32")
                        for d in self.function["inputs"][:len(spec.inputs)]]
        kw = inspect.Parameter.KEYWORD_ONLY
        params = [inspect.Parameter(i.name, kw) for i in spec.inputs]
        params += [inspect.Parameter(a.name, kw, default=self.attrs[a.name]) for a in spec.user_attrs]
        self.__signature__ = inspect.Signature(params + [inspect.Parameter("name", kw, default=None)])
        ins = ", ".join(f"{i['name']}: {i['type']}" for i in self.function["inputs"])
        outs = ", ".join(f"{o['name']}: {o['type']}" for o in self.function["outputs"])
        baked = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items() if k not in self.arguments)
        per_call = f"; per call: {', '.join(sorted(self.arguments))}" if self.arguments else ""
        self.__doc__ = f"{self.op} [{baked}{per_call}] on {self.target}: ({ins}) -> ({outs})"

    def __repr__(self):
        ins = ", ".join(f"{i['name']}: {i['type']}" for i in self.function["inputs"])
        return f"<BundleEntry {self.name}: {self.op}({ins}) @{self.target}>"

    def _plan(self) -> execute.Plan:
        """The entry's plan for the one executor (execute.run_plan): its function, no host parameters (the
        attributes are baked; with arguments, __call__ adds the call's), the caller's shapes as they are."""
        if self._ready is None:
            t = T.get(self.target)
            fn = runtime.load(self._bundle.driver, "bundle:" + self.sha256, self._data, self.function["name"],
                              import_alignment=runtime.import_alignment(t.backend, self.record["compiler_flags"]))
            widened = dict((name, w) for name, _, w in self._inputs)
            self._ready = execute.Plan(fn, (), None, tuple(widened[i.name] for i in self._spec.inputs),
                                    t.limits.empty_buffers)
        return self._ready

    def __call__(self, **kwargs):
        spec = self._spec
        kwargs.pop("name", None)
        for a in spec.attrs:
            if a.name in kwargs and a.name not in self.arguments:
                v = kwargs.pop(a.name)
                baked = self.attrs[a.name]
                same = (v == baked) if not isinstance(baked, float) else \
                    (isinstance(v, (int, float, np.floating)) and not isinstance(v, bool) and float(np.float32(v)) == baked)
                if not same:
                    raise QDQError(f"attribute {a.name}={v!r} differs from the value baked into bundle entry "
                                   f"{self.name!r} ({a.name}={baked!r}); attributes cannot change at run time",
                                   op=self.op, arg=a.name)
        dtype = self._np_dtype
        for inp in spec.inputs:  # plain Python numbers/lists take the entry's dtype, as a TF tensor would
            v = kwargs.get(inp.name)
            if inp.dtype == "T" and v is not None and not isinstance(v, (np.ndarray, np.generic, str, bytes, bool)):
                try:
                    arr = np.asarray(v)
                except (ValueError, TypeError):
                    continue
                if arr.dtype.kind in "fiu":
                    kwargs[inp.name] = arr.astype(dtype)
        merged = {**self.attrs, **kwargs}   # (kwargs: the inputs, and the attributes the call may set)
        if spec.namespace != "tf":   # the framework's argument kinds (aten: a Python float scale, [1] qparams)
            merged = spec.family.public_arguments(spec, merged)
        call = bind(self.op, merged, semantics=self.semantics)
        for a in spec.attrs:   # a choice the entry's declarations made that this call's inputs make otherwise
            if spec.is_internal(a.name) and a.name in spec.family.structural(spec) and \
                    call.attrs[a.name] != self.attrs.get(a.name, call.attrs[a.name]):
                raise QDQError(f"this call's inputs do not fit bundle entry {self.name!r}: {a.doc.split(': ', 1)[0]} "
                               f"({a.doc.split(': ', 1)[-1]}), the entry was built for {self.attrs[a.name]!r} and "
                               f"this call gives {call.attrs[a.name]!r}; build an entry for these inputs "
                               f"(input_shapes, input_dtypes)", op=self.op, arg=a.name)
        if call.dtype != dtype:
            raise QDQTypeError(f"bundle entry {self.name!r} is compiled for {self.dtype}; got {call.dtype.name} inputs",
                               op=self.op, arg=spec.inputs[0].name)
        for name, want, _ in self._inputs:
            arr = call.arrays[name]
            if arr.ndim != len(want) or any(w is not None and w != d for w, d in zip(want, arr.shape)):
                raise QDQError(f"input {name} has shape {list(arr.shape)}; bundle entry {self.name!r} takes "
                               f"{format_shape(want)} ('?' = any size)", op=self.op, arg=name)
        plan = self._plan()
        if self.arguments:   # the call's parameters, computed on the host as the Python path computes them
            plan = dataclasses.replace(plan, params=tuple(runtime.Constant(v) for _, _, v in emit.param_values(
                spec, dict(call.attrs), call.dtype_name, call.semantics)))
        outs = execute.run_plan(call, plan)
        return pack(self.op, outs if spec.namespace == "tf" else spec.family.public_results(spec, call, outs))


class Bundle:
    """A verified bundle for one target: its entries by name (``bundle["act_fq"]`` or ``bundle.act_fq``)."""

    def __init__(self, path: Path, manifest: dict, target: str, entries: dict[str, BundleEntry]):
        self.path, self.manifest, self.target = path, manifest, target
        self.driver = manifest["targets"][target]["driver"] if target in manifest.get("targets", {}) else \
            next(a["driver"] for a in manifest["artifacts"] if a["target"] == target)
        self.entries = entries

    @property
    def targets(self) -> list[str]:
        return list(self.manifest["targets"])

    @property
    def bit_exact(self) -> bool:
        return all(e.bit_exact for e in self.entries.values())

    def names(self) -> list[str]:
        return list(self.entries)

    def __getitem__(self, name: str) -> BundleEntry:
        try:
            return self.entries[name]
        except KeyError:
            raise KeyError(f"bundle {self.path} has no entry {name!r} for target {self.target!r}; "
                           f"entries: {', '.join(self.entries)}") from None

    def __getattr__(self, name: str) -> BundleEntry:
        entries = self.__dict__.get("entries") or {}
        if name in entries:
            return entries[name]
        raise AttributeError(name)

    def __contains__(self, name) -> bool:
        return name in self.entries

    def __iter__(self):
        return iter(self.entries.values())

    def __len__(self):
        return len(self.entries)

    def __repr__(self):
        return f"<Bundle {self.path} target={self.target!r}: {', '.join(self.entries)}>"


_REQUIRED_ARTIFACT_KEYS = ("name", "op", "attrs", "dtype", "shape", "function", "target", "driver", "file",
                           "size", "sha256", "compiler_flags", "iree_compiler_version")


def _read_manifest(path: Path) -> tuple[Path, dict]:
    path = Path(path)
    mpath = path / MANIFEST if path.is_dir() else path
    root = mpath.parent
    if not mpath.is_file():
        what = f"no {MANIFEST} in {path}" if path.is_dir() else f"{path} does not exist"
        raise BundleError(f"not a bundle: {what}", arg="bundle")
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BundleError(f"{mpath}: not a readable JSON manifest ({e})", arg="bundle") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise BundleError(f"{mpath}: not a qdq_compiler bundle manifest (schema {manifest.get('schema') if isinstance(manifest, dict) else None!r}, "
                          f"expected {SCHEMA!r})", arg="bundle")
    sv = manifest.get("schema_version")
    if sv != SCHEMA_VERSION:
        raise BundleError(f"{mpath}: manifest schema_version {sv!r}; this qdq_compiler reads version {SCHEMA_VERSION}"
                          + (" (built by a newer qdq_compiler)" if isinstance(sv, int) and sv > SCHEMA_VERSION else ""),
                          arg="bundle")
    arts = manifest.get("artifacts")
    if not isinstance(arts, list) or not arts:
        raise BundleError(f"{mpath}: the manifest lists no artifacts", arg="bundle")
    seen = set()
    for i, a in enumerate(arts):
        if not isinstance(a, dict) or any(k not in a for k in _REQUIRED_ARTIFACT_KEYS):
            missing = [k for k in _REQUIRED_ARTIFACT_KEYS if not isinstance(a, dict) or k not in a]
            raise BundleError(f"{mpath}: artifacts[{i}] lacks {', '.join(missing)}", arg="bundle")
        f = a["file"]
        if not isinstance(f, str) or not NAME_RE.match(f) or f == MANIFEST:
            raise BundleError(f"{mpath}: artifacts[{i}] names file {f!r}; bundle files must be plain names in the "
                              f"bundle directory", arg="bundle")
        if (a["name"], a["target"]) in seen:
            raise BundleError(f"{mpath}: {a['name']} for {a['target']} is listed twice", arg="bundle")
        seen.add((a["name"], a["target"]))
        if a["op"] not in R.OPS:
            raise BundleError(f"{mpath}: {f}: unknown op {a['op']!r} (built by another qdq_compiler?)", arg="bundle")
        fn = a["function"]
        ok = (isinstance(a["attrs"], dict) and isinstance(a["size"], int) and isinstance(a["sha256"], str)
              and isinstance(a["shape"], list) and isinstance(fn, dict) and isinstance(fn.get("name"), str)
              and all(isinstance(fn.get(k), list) and all(isinstance(d, dict) and isinstance(d.get("name"), str)
                                                          and isinstance(d.get("type"), str)
                                                          and isinstance(d.get("shape"), list) for d in fn[k])
                      for k in ("inputs", "outputs")))
        if not ok:
            raise BundleError(f"{mpath}: the record of {f} is malformed", arg="bundle")
        try:
            if a.get("params", "baked") not in ENTRY_PARAMS:
                raise QDQError(f"params={a['params']!r}; allowed: {', '.join(ENTRY_PARAMS)}", arg="params")
            OpConfig.make(a["op"], a["attrs"], a["dtype"], a["shape"], a["target"], a.get("params", "baked"),
                          a.get("semantics", "tf-cpu"))
        except QDQError as e:
            raise BundleError(f"{mpath}: the record of {f} is not a valid configuration: {e}", arg="bundle") from None
    manifest.setdefault("targets", {})
    if not isinstance(manifest["targets"], dict) or not all(isinstance(v, dict) for v in manifest["targets"].values()):
        raise BundleError(f"{mpath}: 'targets' must map target names to records", arg="bundle")
    for a in arts:
        manifest["targets"].setdefault(a["target"], {"driver": a["driver"]})
    return root, manifest


def _verify_files(root: Path, manifest: dict, target: str | None = None) -> dict[str, bytes]:
    """The listed files of ``target`` (None: of every target): present, of the recorded size and SHA-256.
    Returns their bytes by file name; a BundleError naming each bad one."""
    datas, problems = {}, []
    for a in manifest["artifacts"]:
        if target is not None and a["target"] != target:
            continue
        p = root / a["file"]
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            problems.append(f"{a['file']} is missing")
            continue
        except OSError as e:
            problems.append(f"{a['file']} cannot be read ({e.strerror})")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != a["size"] or digest != a["sha256"]:
            problems.append(f"{a['file']} does not match the manifest (tampered or corrupted): size {len(data)} "
                            f"(manifest {a['size']}), sha256 {digest[:16]}... (manifest {str(a['sha256'])[:16]}...)")
            continue
        datas[a["file"]] = data
    if problems:
        whose = f" of its {target!r} artifacts" if target is not None else ""
        raise BundleError(f"bundle {root} failed verification{whose}: " + "; ".join(problems), arg="bundle")
    return datas


def compatibility(manifest: dict, target: str, host_cpu_features=None) -> str:
    """'' when this runtime and machine can run ``target``'s artifacts of ``manifest``, else the reason."""
    arts = [a for a in manifest["artifacts"] if a["target"] == target]
    if not arts:
        return f"the bundle has no {target!r} artifacts"
    rt_v = _runtime_version()
    for a in arts:
        cv = a.get("iree_compiler_version", "")
        if _major_minor(cv) != _major_minor(rt_v):
            return (f"{a['file']} was compiled by IREE {cv}; this IREE runtime is {rt_v} (bytecode is compatible only "
                    f"within one IREE release: install iree-base-runtime=={'.'.join(map(str, _major_minor(cv)))}.* "
                    f"or rebuild the bundle)")
    try:
        tgt = T.get(target)
    except QDQError:
        return f"unknown target {target!r} (built by another qdq_compiler?)"
    driver = manifest["targets"].get(target, {}).get("driver") or arts[0]["driver"]
    if driver != tgt.driver:
        return f"its artifacts need the {driver!r} driver; this qdq_compiler runs {target!r} on {tgt.driver!r}"
    ok, why = tgt.availability()  # compile-only, or no driver/device here
    if not ok:
        return why
    if tgt.backend == "llvm-cpu":
        if not is_x86_64():
            return f"its artifacts are x86-64 code; this machine is {platform.machine()}"
        if host_cpu_features is not None:
            have, known = frozenset(host_cpu_features), None
        else:
            have, known = detect_host_cpu_features()
        for a in arts:
            req = (a.get("cpu") or {}).get("required_features")
            if req is None:
                continue
            checkable = [f for f in req if known is None or f in known]
            missing = sorted(f for f in checkable if f not in have)
            if missing:
                cpu = a.get("cpu", {})
                return (f"{a['file']} is compiled for CPU {cpu.get('name', '?')!r} (requested "
                        f"{cpu.get('requested', '?')!r}) and needs {', '.join(missing)}, which this CPU lacks; "
                        f"rebuild with the default portable CPU (x86-64-v2) or --target-cpu host on the target machine")
    return ""


def load_bundle(path, target: str | None = None, *, host_cpu_features=None) -> Bundle:
    """Load the bundle at ``path`` (its directory or its manifest.json) for ``target``.

    The manifest is checked whole (every record, whatever the target: one that does not verify is
    refused for every target); then the target's compatibility with this runtime (IREE release, driver
    and device, CPU architecture and features); then the files of that target (present, size,
    SHA-256: a damaged ``cpu`` file does not block loading ``vmvx``), each parsed by the IREE runtime
    and its function checked against the manifest. ``target=None`` picks the first of the bundle's
    targets that can run here (and refuses if that one's files are damaged, rather than silently
    falling back).
    ``host_cpu_features`` (LLVM names) replaces this machine's CPU features (to check a bundle for
    another machine). Anything wrong is a BundleError.
    """
    root, manifest = _read_manifest(Path(path))
    targets_in = list(manifest["targets"])
    if target is not None:
        if target not in targets_in:
            raise BundleError(f"bundle {root} has no {target!r} artifacts; its targets: {', '.join(targets_in)}",
                              arg="target")
        why = compatibility(manifest, target, host_cpu_features)
        if why:
            raise BundleError(f"bundle {root}: cannot run its {target!r} artifacts here: {why}", arg="target")
        chosen = target
    else:
        reasons = {}
        for t in targets_in:
            reasons[t] = compatibility(manifest, t, host_cpu_features)
            if not reasons[t]:
                chosen = t
                break
        else:
            raise BundleError(f"bundle {root}: none of its targets can run here: "
                              + "; ".join(f"{t}: {w}" for t, w in reasons.items()), arg="target")
    datas = _verify_files(root, manifest, chosen)
    import iree.runtime as rt  # lazy: the IREE runtime is slow to import
    instance = rt.VmInstance()
    entries = {}
    bundle = Bundle(root, manifest, chosen, entries)
    for a in manifest["artifacts"]:
        if a["target"] != chosen:
            continue
        data = datas[a["file"]]
        check_module(data, a["function"], f"bundle {root}: {a['file']}", instance)
        try:
            entries[a["name"]] = BundleEntry(bundle, a, data)
        except (KeyError, TypeError, QDQError) as e:
            raise BundleError(f"bundle {root}: {a['file']}: inconsistent manifest record ({e})", arg="bundle") from None
    return bundle


def verify_bundle(path, host_cpu_features=None) -> dict[str, str]:
    """The whole-bundle check: the manifest and every listed file, whatever its target (a BundleError
    naming each damaged file), then per target whether it can run here: {target: '' or the reason}.
    (:func:`load_bundle` verifies only the files of the target it loads.)"""
    root, manifest = _read_manifest(Path(path))
    _verify_files(root, manifest)
    return {t: compatibility(manifest, t, host_cpu_features) for t in manifest["targets"]}
