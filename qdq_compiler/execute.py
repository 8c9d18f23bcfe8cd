"""Run a validated ``Call`` on a compiled target.

The Python path canonicalises shapes to keep the number of artifacts small (config.py's layouts): a
per-tensor op is run on the flattened data (one rank-1 artifact for every shape), a per-axis op on the
[outer, C, inner] view (rank 3, axis 1) or, channels last, on [outer, C] (config.canonical_view), and the
last-axis PerChannel ops on [batch, d]. Numeric
attributes travel as trailing 0-d arguments (see config.py).
"""
from __future__ import annotations

import contextlib
import struct
import threading
from dataclasses import dataclass

import numpy as np

from . import compile as _compile
from . import dtypes, emit, ops, runtime, semantics, targets
from .config import LAYOUT_RANK, SPLIT_ROWS, OpConfig, canonical_view, layout_of
from .errors import QDQError
from .oracle import compute
from .validation import Call


class Artifact:
    """One compiled configuration for one target. ``mlir`` is rendered lazily on a cache hit."""

    def __init__(self, config: OpConfig, flags: tuple[str, ...], vmfb: bytes, path, key: str, mlir: str | None = None,
                 function_name: str | None = None, from_cache: bool | None = None):
        self.config, self.flags, self.vmfb, self.path, self.key = config, flags, vmfb, path, key
        self._mlir = mlir
        # found in the cache (through the index, or a module compiled together before): nothing compiled
        self.from_cache = mlir is None if from_cache is None else from_cache
        # The module's function: the op's name, or its name in a module compiled together (compile_together).
        self.function_name = function_name or config.op

    @property
    def mlir(self) -> str:
        if self._mlir is None:
            self._mlir = emit.render(self.config)
        return self._mlir

    def function(self):
        t = targets.get(self.config.target)
        return runtime.load(t.driver, self.key, self.vmfb, self.function_name)


_artifacts: dict[tuple, Artifact] = {}


def _index_identity(cfg: OpConfig, flags: tuple[str, ...]) -> dict:
    """What the config -> artifact index is keyed on: everything that shapes the artifact."""
    return {"config": cfg.key(), "flags": list(flags),
            "sources": _compile.source_fingerprint(emit.TEMPLATE_DIR)}


def artifact_for(cfg: OpConfig, extra_flags: tuple[str, ...] = ()) -> Artifact:
    """The artifact of ``cfg``: from this process, else from the on-disk cache, else rendered and compiled.

    The cache hit path reads a small index (config -> artifact key) and the verified .vmfb: no
    template rendering, no MLIR parsing, no compiler.
    """
    targets.get(cfg.target).require_dtype(cfg.dtype)
    flags = flags_for(cfg) + tuple(extra_flags)
    if getattr(_gathering, "cfgs", None) is not None:   # gathering(): note the configuration, stop the call
        _gathering.cfgs += [] if (cfg, flags) in _artifacts or extra_flags else [cfg]
        raise Gathered(cfg)
    art = _artifacts.get((cfg, flags))
    if art is not None:
        return art
    identity = _index_identity(cfg, flags)
    hit = _compile.lookup_index(identity)
    if hit is not None:
        key, vmfb_path, data = hit
        art = Artifact(cfg, flags, data, vmfb_path, key)
    else:
        mlir = emit.render(cfg)
        path, data = _compile.cached_compile(mlir, flags, what=cfg.describe(), info=cfg.key())
        key = _compile.cache_key(mlir, flags)
        art = Artifact(cfg, flags, data, path, key, mlir)
        if path is not None:
            _compile.store_index(identity, key)
    _artifacts[(cfg, flags)] = art
    return art


class Gathered(BaseException):
    """Raised by ``artifact_for`` inside ``gathering()``: the call stops where it would load its artifact (not an
    Exception, so that no ``except Exception`` on the way takes it for the call's own error)."""


_gathering = threading.local()


@contextlib.contextmanager
def gathering():
    """Inside (per thread), a call stops (``Gathered``) where it would load or compile its artifact, and adds the
    configuration it asked for, unless held here, to the list this yields: the exact configurations that calls
    will use, as each public function picks them, for together.compile_together."""
    cfgs: list = []
    outer, _gathering.cfgs = getattr(_gathering, "cfgs", None), cfgs
    try:
        yield cfgs
    finally:
        _gathering.cfgs = outer


def flags_for(cfg: OpConfig) -> tuple[str, ...]:
    """The compile flags of ``cfg``'s artifact: the target's (at the program's level) and the program's own."""
    t = targets.get(cfg.target)
    return t.level_for(cfg) + t.program_flags(cfg)


def hold(art: Artifact):
    """Keep ``art`` in this process: ``artifact_for`` returns it for its configuration (together.py)."""
    _artifacts[(art.config, art.flags)] = art


def indexed(cfg: OpConfig, flags: tuple[str, ...]) -> bool:
    """Whether the on-disk index names an artifact of ``cfg`` alone (``artifact_for`` would load it)."""
    return _compile.lookup_index(_index_identity(cfg, flags)) is not None


def in_process(cfg: OpConfig, flags: tuple[str, ...] | None = None) -> bool:
    """Whether this process already holds ``cfg``'s artifact (``artifact_for`` returns it without a compile)."""
    return (cfg, flags_for(cfg) if flags is None else flags) in _artifacts


def shipped(art: Artifact) -> tuple:
    """``art`` as another process installs it (``install``): config, flags, content key, bytes, sidecar; one
    compiled together with others (together.py) as its configuration alone."""
    if art.function_name != art.config.op:
        path, data = _compile.cached_compile(art.mlir, art.flags, what=art.config.describe(), info=art.config.key())
        art = Artifact(art.config, art.flags, data, path, _compile.cache_key(art.mlir, art.flags), art.mlir)
    record = _compile.artifact_record(art.vmfb, art.flags, what=art.config.describe(), info=art.config.key())
    return art.config, art.flags, art.key, art.vmfb, record


def install(cfg: OpConfig, flags: tuple[str, ...], key: str, vmfb: bytes, record: dict, load: bool = True):
    """An artifact compiled in another process (``shipped``; a validation cluster's worker): into the on-disk
    cache and its index and, with ``load``, into this process, so that ``artifact_for`` finds it as if compiled
    here (a cluster's driver only keeps it in its cache)."""
    path = _compile.store_artifact(key, vmfb, record)
    if path is not None:
        _compile.store_index(_index_identity(cfg, flags), key)
    if load:
        _artifacts.setdefault((cfg, flags), Artifact(cfg, flags, vmfb, path, key))


def _shape_plan(call: Call, target: str):
    """(canonical shape string, the structural attrs it fixes, the view's dims, the tuning it asks for) of
    ``call`` on ``target`` (config.canonical_view)."""
    axis = call.per_channel_axis()
    layout = layout_of(call.spec, call.attrs) if axis is not None else ops.FLAT
    t = targets.get(target)
    reduces = call.spec.family.reduces(call.spec, call.attrs)
    rank2 = t.limits.outer_reductions or not reduces
    split = reduces and t.has_tuning(SPLIT_ROWS)
    dims, attrs, tuning = canonical_view(layout, call.data.shape, axis, rank2, split)
    return "x".join(["?"] * len(dims)), attrs, dims, tuning


def config_for_call(call: Call, target: str) -> OpConfig:
    shape, override, _, tuning = _shape_plan(call, target)
    return _runtime_config(call, target, shape, override, tuning)


def _runtime_config(call: Call, target: str, shape: str, override: dict, tuning: str = "") -> OpConfig:
    tuning = tuning if targets.get(target).has_tuning(tuning) else ""
    return OpConfig.from_call(call, target, shape, override, tuning)


_run_plans: dict = {}
_fast_plans: dict = {}
_RUN_PLANS_MAX = 4096


@dataclass(frozen=True)
class Plan:
    """How the calls of one kind run: the loaded function and what goes in beside the call's arrays.

    One planner (``plan_for``) makes them for raw ops, validate and bench; a bundle entry makes its own
    from its manifest record. ``run_plan`` runs any of them.
    """
    fn: runtime.LoadedFunction
    params: tuple               # runtime.Constant per parameter computed on the host, after the inputs
    dims: tuple | None          # the canonical view of data-shaped arrays (None: as the call has them)
    widened: tuple[bool, ...]   # per input: a 16-bit float widened to float32 on the host
    empty_buffers: bool         # the target binds zero-sized buffers (Vulkan does not)
    blocked: tuple[bool, ...] = ()   # per input: a blocked parameter (ops.BLOCKS), in the data's view

    def args(self, call: Call) -> list:
        """The call's arrays as the function takes them: data-shaped ones in the canonical view (a blocked parameter
        in the same view, its channel dimension holding the blocks), 16-bit floats as bits (or widened), then params."""
        out = []
        for i, (inp, widened) in enumerate(zip(call.spec.inputs, self.widened)):
            a = call.arrays[inp.name]
            if self.dims is not None and inp.layout == ops.DATA:
                a = a.reshape(self.dims)
            elif self.blocked and self.blocked[i] and self.dims is not None:
                a = a.reshape(self.dims[0], -(-self.dims[1] // call.spec.family.block_size(call.spec, call.attrs)),
                              *self.dims[2:])   # channel axis 1: ceil(C / block) blocks (an empty call's too)
            out.append(dtypes.abi_view(a, widened))
        return out + list(self.params)

    def view(self, a: np.ndarray) -> np.ndarray:
        return a if self.dims is None else a.reshape(self.dims)


def run(call: Call, target: str = "cpu", static: bool = False, out=None) -> tuple[np.ndarray, ...]:
    """Compute ``call`` on ``target`` ("oracle" = the NumPy reference); outputs as the oracle returns them.

    ``static=True`` compiles for the exact (canonical) shape instead of dynamic dims.
    ``out``: where to write the results instead of new arrays: one array (the first output, which has
    the data's shape and dtype) or a sequence with an array or None per output. The arrays given are
    returned. On CPU targets inputs are read in place and large results are returned without a copy
    (see runtime.py); the artifact, its parameters and the bound function are looked up once per
    (op, attributes, dtype, shape kind, target).
    """
    if out is None and call.attrs_key is not None and type(target) is str:
        # A call like one seen before: its plan exists, so the target's checks passed for it.
        plan = _fast_plans.get(_fast_key(call, target, static))
        if plan is not None:
            return run_plan(call, plan)
    t = targets.get(target, reference_ok=True)
    if t.is_reference:
        return _into_out(compute(call), out)
    t.require_available()
    t.require_dtype(call.dtype_name)
    if call.data.size == 0 and not t.limits.empty_buffers:
        return _into_out(compute(call), out)  # nothing to compile: run_plan would answer on the host
    return run_plan(call, plan_for(call, target, static), out)


def run_plan(call: Call, plan: Plan, out=None) -> tuple[np.ndarray, ...]:
    """Run ``call`` through ``plan`` (``run``'s ``out``): a small call on a CPU driver in one step, a
    large one with its data-shaped result in caller storage where the function takes it."""
    if call.data.size == 0 and not plan.empty_buffers:
        # Vulkan rejects zero-sized bindings. An empty input has no element to compute: its outputs are
        # empty and its range gradients are sums over nothing, so the host answers without a dispatch.
        return _into_out(compute(call), out)
    fn, args, spec, x = plan.fn, plan.args(call), call.spec, call.data
    if out is None:
        k = len(spec.inputs)
        # None unless a small call on a CPU driver
        results = fn.call_small(args[:k], args[k:], _small_storage(call, fn, plan.view(x).shape))
        if results is not None:
            return _shaped(call, [dtypes.from_abi(r, call.result_dtype(i)) for i, r in enumerate(results)])
    outs = _out_list(spec, call, out)
    written = outs  # where each result is written: outs, or caller storage the module writes into
    if fn.storage_args:
        outs = outs or [None] * len(spec.outputs)
        written = list(outs)
        for i in fn.storage_args:
            if outs[i] is None or not _writable_in_place(outs[i], fn.import_alignment, call):
                written[i] = _storage_for(call, fn, i)
    views = None
    if written is not None:
        views = [None if o is None else dtypes.abi_view(plan.view(o) if spec.results[i].layout == ops.DATA else o)
                 for i, o in enumerate(written)]
    results = fn(args, views) if views is not None else fn(args)
    results = [None if r is None else dtypes.from_abi(r, call.result_dtype(i)) for i, r in enumerate(results)]
    if written is None:
        return _shaped(call, results)
    result = []
    for i, r in enumerate(results):
        if outs[i] is not None and written[i] is not outs[i]:
            np.copyto(outs[i], written[i])
        shape = result_shape(call, i)
        result.append(outs[i] if outs[i] is not None else written[i] if written[i] is not None else r.reshape(shape))
    return tuple(result)


def _storage_for(call: Call, fn, i: int) -> np.ndarray:
    """Caller storage for result ``i`` in the call's shape (pooled when large: runtime.result_storage)."""
    return runtime.result_storage(result_shape(call, i), call.result_dtype(i), fn.import_alignment)


def caller_storage(call: Call, fn, view) -> list | None:
    """The ``outs`` a function that writes into caller storage is bound with (in its view and ABI types),
    None for one that takes none: for binding a call once (``LoadedFunction.prepare``, the benchmark)."""
    if not fn.storage_args:
        return None
    outs = [None] * len(call.spec.outputs)
    for i in fn.storage_args:
        o = _storage_for(call, fn, i)
        outs[i] = dtypes.abi_view(view(o) if call.spec.results[i].layout == ops.DATA else o)
    return outs


def _small_storage(call: Call, fn, dims) -> tuple:
    """The arrays a small call's results in caller storage are written into (fresh NumPy memory: no
    page-fault cost at this size, aligned as the module imports: 16 bytes for SSE code, 64 for AVX), the
    data-shaped one in the function's ``dims``; () when the call is not small (call_small then declines) or
    the function takes none."""
    if not fn.storage_args or call.data.nbytes >= runtime.ZERO_COPY_MIN_BYTES:
        return ()
    return tuple(dtypes.abi_view(runtime.empty_aligned(dims if call.spec.results[i].layout == ops.DATA
                                                       else result_shape(call, i), call.result_dtype(i),
                                                       fn.import_alignment))
                 for i in fn.storage_args)


def _writable_in_place(o: np.ndarray, alignment: int, call: Call) -> bool:
    """Whether the module may write into the caller's ``out`` array itself: aligned for import and
    sharing no memory with an input (a program may read an input after writing part of its result)."""
    if o.__array_interface__["data"][0] % alignment:
        return False
    return not any(np.may_share_memory(o, a) for a in call.arrays.values() if isinstance(a, np.ndarray))


def _shaped(call: Call, results: list) -> tuple[np.ndarray, ...]:
    """The function's results in the call's shapes: the data's, then the range outputs'."""
    return tuple(r.reshape(result_shape(call, i)) for i, r in enumerate(results))


def prepare(call: Call, target: str = "cpu", static: bool = False):
    """(bound function, its argument list, the canonical view of data-shaped arrays) for ``call``: the
    benchmark times the kernel with its inputs already bound."""
    plan = plan_for(call, target, static)
    return plan.fn, plan.args(call), plan.view


def plan_for(call: Call, target: str = "cpu", static: bool = False) -> Plan:
    """The plan of ``call`` on ``target``. A call like one seen before (same op, semantics, attributes by
    bits, dtype, data shape, target) reuses its plan; nothing but the arrays' own checks
    (validation.bind) runs again."""
    fast = None if call.attrs_key is None else _fast_key(call, target, static)
    plan = _fast_plans.get(fast) if fast is not None else None
    if plan is None:
        plan = _plan(call, target, static)
        if fast is not None:
            if len(_fast_plans) >= _RUN_PLANS_MAX:
                _fast_plans.clear()
            _fast_plans[fast] = plan
    return plan


def _fast_key(call: Call, target: str, static: bool) -> tuple:
    return (call.attrs_key, call.dtype, call.data.shape, target, static)


def _plan(call: Call, target: str, static: bool) -> Plan:
    """The plan of ``call`` on ``target``; the artifact, function and parameters are shared by every call
    whose configuration is the same (one artifact serves every shape of a layout)."""
    t = targets.get(target)
    spec = call.spec
    shape, override, dims, tuning = _shape_plan(call, target)
    _check_reduction_bound(call, t, dims)
    if static:
        shape = "x".join(str(d) for d in dims) or "scalar"
        tuning = ""
    # Floats by their bits: -0.0 == 0.0 (and hashes alike) but is another range for V1/Args.
    key = (spec.name, call.dtype_name, shape, target, call.semantics, tuning,
           tuple((k, type(v).__name__, struct.pack("<d", v) if isinstance(v, float) else v)
                 for k, v in sorted(call.attrs.items())))
    loaded = _run_plans.get(key)
    if loaded is None:
        cfg = _runtime_config(call, target, shape, override, tuning)
        art = artifact_for(cfg)
        fn = runtime.load(t.driver, art.key, art.vmfb, art.function_name,
                          import_alignment=runtime.import_alignment(t.backend, art.flags))
        params = tuple(runtime.Constant(value) for _, _, value in
                       emit.param_values(spec, dict(call.attrs), call.dtype_name, call.semantics))
        loaded = (fn, params)
        if len(_run_plans) >= _RUN_PLANS_MAX:
            _run_plans.clear()
        _run_plans[key] = loaded
    widened = t.widens_on_host(call.dtype_name, spec.family.reduces(spec, call.attrs))
    blocked = tuple(spec.family.operand_layout(spec, call.attrs, i) == ops.BLOCKS for i in spec.inputs)
    return Plan(loaded[0], loaded[1], tuple(dims), (widened,) * len(spec.inputs), t.limits.empty_buffers,
                blocked if any(blocked) else ())


def result_shape(call: Call, i: int) -> tuple[int, ...]:
    """The shape of result ``i`` of ``call``, as its declaration (spec.Output) relates it to the data."""
    layout = call.spec.results[i].layout
    if layout == ops.DATA:
        return call.data.shape
    if layout == ops.RANGE:   # the range parameters' shape: [C] per-channel, 0-d per-tensor
        ranged = call.spec.inputs_of(ops.RANGE)
        return call.arrays[ranged[0]].shape if ranged else ()
    if layout == ops.BLOCKS:  # the data's, ceil(C / block_size) blocks along the channel axis (MX's scales)
        axis, size = call.per_channel_axis(), call.spec.family.block_size(call.spec, call.attrs)
        return tuple(-(-d // size) if i == axis else d for i, d in enumerate(call.data.shape))
    return ()


def _out_list(spec, call: Call, out):
    """``out`` as one entry per output (None: allocate), each checked against the output it receives."""
    if out is None:
        return None
    outs = [out] if isinstance(out, np.ndarray) else list(out)
    if len(outs) > len(spec.outputs):
        raise QDQError(f"out: {len(outs)} arrays for {len(spec.outputs)} outputs ({', '.join(spec.outputs)})", arg="out")
    outs += [None] * (len(spec.outputs) - len(outs))
    x = call.data
    for i, o in enumerate(outs):
        if o is None:
            continue
        want = result_shape(call, i)
        if not isinstance(o, np.ndarray) or o.shape != tuple(want) or o.dtype != call.result_dtype(i) \
                or not o.flags.c_contiguous or not o.flags.writeable:
            raise QDQError(f"out for {spec.outputs[i]} must be a writable C-contiguous {call.result_dtype(i).name} array of "
                           f"shape {tuple(want)}; got {getattr(o, 'dtype', type(o).__name__)} "
                           f"{getattr(o, 'shape', '')}", arg="out")
    return outs


def _into_out(results, out):
    if out is None:
        return tuple(results)
    outs = [out] if isinstance(out, np.ndarray) else list(out)
    final = []
    for i, r in enumerate(results):
        o = outs[i] if i < len(outs) else None
        if o is None:
            final.append(r)
        else:
            np.copyto(o, r)
            final.append(o)
    return tuple(final)


def _check_reduction_bound(call: Call, t, dims):
    """A reduction longer than the target can run (Limits.max_reduced_elements: lavapipe stops a loop after
    65535 iterations, and a program reduces in blocks of targets.REDUCTION_BLOCK, then over the blocks) is
    refused before anything is compiled."""
    bound = t.limits.max_reduced_elements
    if not bound or not call.spec.family.reduces(call.spec, call.attrs):
        return
    channels = dims[1] if len(dims) > 1 else 1
    per_channel = call.data.size // max(channels, 1)
    if per_channel > bound:
        name, unit = call.spec.inputs_of(ops.DATA)[0], "channel" if len(dims) > 1 else "tensor"
        raise QDQError(f"input {name} has {per_channel:,} elements per {unit} to reduce; target {t.name!r} reduces at "
                       f"most {bound:,} ({t.limits.max_loop_iterations} iterations per loop, blocks of "
                       f"{targets.REDUCTION_BLOCK}): split the input, or use another target "
                       f"({', '.join(n for n in targets.TARGETS if n != t.name)})", op=call.spec.name, arg=name)


def config_for_entry(entry, target: str, shape: tuple[int, ...] | None = None) -> OpConfig:
    """The artifact a validation-matrix entry runs: dynamic dims, or ``shape`` when static."""
    spec = ops.get(entry.op)
    attrs = dict(entry.attrs)
    rank = LAYOUT_RANK[layout_of(spec, attrs)]
    dims = "x".join(["?"] * rank) if shape is None else "x".join(map(str, shape))
    return OpConfig.make(entry.op, attrs, entry.dtype, dims, target, "runtime",
                         getattr(entry, "semantics", semantics.DEFAULT))
