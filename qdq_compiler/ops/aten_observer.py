"""PyTorch's fused moving-average observer and fake quantization (``torch.ops.aten.fused_moving_avg_obs_fake_quant``,
the op behind ``torch.ao.quantization.FusedMovingAvgObsFakeQuantize``, the default QAT module), as PyTorch 2.13's
CPU kernel computes it (fused_obs_fake_quant.cpp; measured in tools/goldens/aten/README.md, part 2, facts 10-12).

Functional here: PyTorch mutates running_min, running_max, scale and zero_point and returns the output; this op
returns ``(output, running_min, running_max, scale, zero_point)``, the values PyTorch leaves in those arrays.
  1. observer_on: the batch's range, aminmax(x) (per row: along dim 1), NaN propagating; the moving average in
     float32 without FMA, ``r = isinf(r) ? cur : r + c * (cur - r)``.
  2. fake_quant_on: FBGEMM's ChooseQuantizationParams on the running range (float scale, the 6.1e-5 floor,
     ``preserve_sparsity`` = symmetric_quant); then ATen's per-tensor kernel, or per row its per-channel kernel
     with an int zero point; off: the input, and scale and zero point as given.
Both switches are runtime values (observer_on.item().toInt(): 0.7 is off): one program answers every setting.
Beyond PyTorch (its observer takes float32 only): float16 and bfloat16 inputs observed on their exact values,
float64 ones on their ends rounded to float32; the fake quantization is then ATen's own kernel for that type.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import QDQError, QDQTypeError
from . import aten_fake_quant as FQ
from .aten_common import AtenFamily, check_quant_range, given_arrays, given_attr, torch_name
from .family import AXIS, FLAT
from .rules import Rules
from .spec import RANGE, Output, OpSpec, attr, data, fixed, result, scalar

DTYPES = ("float16", "bfloat16", "float32", "float64")
F32, F64 = np.float32, np.float64
SMALL_SCALE = F32(6.1e-5)          # FBGEMM's kSmallScale (float)
INT32_MIN = np.iinfo(np.int32).min
# The per-tensor operands and PyTorch's FusedMovingAvgObsFakeQuantize's own shapes for them (0-d running range,
# [1] scale and zero point); a call's own shapes (0-d or [1]) come back as given.
STATE = ("running_min", "running_max", "scale", "zero_point")


# -- the NumPy reference ----------------------------------------------------------------------------------


def _cdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def symmetric_levels(qmin: int, qmax: int) -> tuple[int, int]:  # (the template derives them as floats)
    """FBGEMM's preserve_sparsity range: (-((qmax - qmin) / 2 + 1), (qmax - qmin) / 2), C division."""
    return -(_cdiv(qmax - qmin, 2) + 1), _cdiv(qmax - qmin, 2)


def choose_qparams(mn, mx, qmin: int, qmax: int, symmetric: bool):
    """fbgemm::ChooseQuantizationParams(min, max, qmin, qmax, preserve_sparsity, force_scale_power_of_two=false)
    on float32 vectors: (float32 scale, int32 zero point), each step in FBGEMM's type."""
    mn, mx = np.array(mn, F32, ndmin=1), np.array(mx, F32, ndmin=1)
    with np.errstate(all="ignore"):
        if symmetric:
            sqmin, sqmax = symmetric_levels(qmin, qmax)
            straddles = (mn < 0) & (mx > 0)
            a, b = np.abs(mn / F32(sqmin)), np.abs(mx / F32(sqmax))
            ms = np.where(a < b, b, a).astype(F64)                     # std::max(float, float), then double
            mn = np.where(straddles, (ms * sqmin).astype(F32), mn)
            mx = np.where(straddles, (ms * sqmax).astype(F32), mx)
        mn = np.where(F32(0) < mn, F32(0), mn)                         # std::min(min, 0.f)
        mx = np.where(mx < F32(0), F32(0), mx)                         # std::max(max, 0.f)
        scale = ((mx.astype(F64) - mn.astype(F64)) / F64(qmax - qmin)).astype(F32)
        scale = np.where((scale == 0) | np.isinf(F32(1) / scale), F32(0.1), scale)
        small = scale < SMALL_SCALE
        amp = SMALL_SCALE / scale
        span = F32(SMALL_SCALE * F32(qmax - qmin))
        mn_small = np.where(mn == 0, mn, np.where(mx == 0, -span, mn * amp))
        mx_small = np.where(mn == 0, span, np.where(mx == 0, mx, mx * amp))
        mn, mx = np.where(small, mn_small, mn), np.where(small, mx_small, mx)
        scale = np.where(small, SMALL_SCALE, scale).astype(F32)
        sd = scale.astype(F64)
        q_mn, q_mx = mn.astype(F64) / sd, mx.astype(F64) / sd
        init = np.where(abs(qmin) + np.abs(q_mn) < abs(qmax) + np.abs(q_mx), qmin - q_mn, qmax - q_mx)
        if symmetric:
            init = np.where((mn < 0) & (mx > 0), F64(qmin + qmax) / 2, init)
        clamped = np.where(init < qmin, F64(qmin), np.where(init > qmax, F64(qmax), init))
        zp = np.where(np.isnan(clamped), INT32_MIN, np.nan_to_num(np.rint(clamped))).astype(np.int32)
    return scale, zp


def moving_average(running, cur, c):
    """r = isinf(r) ? cur : r + c * (cur - r), in float32, unfused (measured: 3000/3000 against 2101 fused)."""
    with np.errstate(all="ignore"):
        return np.where(np.isinf(running), cur, (running + (F32(c) * (cur - running)).astype(F32)).astype(F32))


def oracle(call):
    a, arr = call.attrs, call.arrays
    x = arr["input"]
    axis = row_axis(a)
    per_row = axis is not None
    rmin, rmax = arr["running_min"].astype(F32), arr["running_max"].astype(F32)
    scale, zp = arr["scale"], arr["zero_point"]
    if int(arr["observer_on"]):
        x3 = FQ._three_d(x, axis) if per_row else x.reshape(1, 1, -1)
        with np.errstate(invalid="ignore"):
            lo = np.min(x3, axis=(0, 2)) if x3.size else np.full(x3.shape[1], np.inf, x.dtype)
            hi = np.max(x3, axis=(0, 2)) if x3.size else np.full(x3.shape[1], -np.inf, x.dtype)
        lo, hi = lo.astype(F32).reshape(rmin.shape), hi.astype(F32).reshape(rmax.shape)
        rmin = moving_average(rmin, lo, arr["averaging_const"])
        rmax = moving_average(rmax, hi, arr["averaging_const"])
    if not int(arr["fake_quant_on"]):
        return x.copy(), rmin, rmax, scale.copy(), zp.copy()
    new_scale, new_zp = choose_qparams(rmin, rmax, a["quant_min"], a["quant_max"], a["symmetric_quant"])
    new_scale, new_zp = new_scale.reshape(scale.shape), new_zp.reshape(zp.shape)
    wide = x.astype(F32) if dtypes.get(x.dtype).narrow else x
    if per_row:
        out3, _ = FQ.per_channel(FQ._three_d(wide, axis), new_scale.reshape(1, -1, 1),
                                 new_zp.reshape(1, -1, 1), a["quant_min"], a["quant_max"], False)
        out = (out3 if x.dtype == F64 else out3.astype(F32).astype(x.dtype)).reshape(x.shape)
    else:
        out, _ = FQ.per_tensor(wide, new_scale[()], int(new_zp), a["quant_min"], a["quant_max"])
        out = out.astype(x.dtype)
    return out, rmin, rmax, new_scale, new_zp


# -- checks, in PyTorch's words --------------------------------------------------------------------------


def check(c, spec, arrays, attrs):
    qmin, qmax = attrs["quant_min"], attrs["quant_max"]
    x = arrays["input"]
    check_quant_range(c, qmin, qmax)
    if attrs["ch_axis"] >= x.ndim:   # checked per tensor too (measured)
        c.fail(f"ch_axis={attrs['ch_axis']} must be less than the input's rank {x.ndim}", "ch_axis",
               tf="Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()")
    axis = row_axis(attrs)
    if axis is None:
        return
    ch_axis = attrs["ch_axis"]
    if attrs["per_row_fake_quant"] and (x.ndim < 2 or ch_axis < 0 and x.ndim != 2):
        c.fail(f"per_row_fake_quant takes an input of rank >= 2 and ch_axis 0..rank-1 (a negative one on a 2-D "
               f"input only); got shape {list(x.shape)}, ch_axis={ch_axis}", "input" if x.ndim < 2 else "ch_axis",
               tf="Dimension out of range (expected to be in range of [-1, 0], but got 1)" if x.ndim <= 1 else None)
    if attrs["per_row_fake_quant"] and ch_axis != 0:   # PyTorch's observer checks it; off, its kernel takes any
        if int(arrays["observer_on"]):
            c.fail(f"ch_axis={ch_axis}: per_row_fake_quant observes along ch_axis 0 only (with observer_on 0, "
                   f"other axes fake-quantize)", "ch_axis",
                   tf="Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0")
        if ch_axis < 0 and int(arrays["fake_quant_on"]):
            c.fail(f"ch_axis={ch_axis}: per_row_fake_quant quantizes along ch_axis 0..{x.ndim - 1}", "ch_axis",
                   tf="`axis` must be between 0 and number of dimensions of input")
    rows = x.shape[axis]
    for n in ("scale", "zero_point", "running_min", "running_max"):   # PyTorch's order: its kernel's check first
        if arrays[n].shape != (rows,):
            c.fail(f"{n} has shape {list(arrays[n].shape)}; per_row_fake_quant needs one value per row of input: "
                   f"[{rows}]", n, tf="dimensions of scale and zero-point are not consistent with input tensor"
                   if n in ("scale", "zero_point") else None)


def params(spec, attrs, dtype):
    """quant_min/quant_max in the compute type (the fake-quant kernel's); for float64 also as float32, from which
    the template derives FBGEMM's constants (as parameters, each would be a binding: CUDA takes 16 a dispatch)."""
    extra = [("qmin_f", "f32", F32(attrs["quant_min"])), ("qmax_f", "f32", F32(attrs["quant_max"]))]
    return FQ.params(spec, attrs, dtype) + (extra if dtypes.get(dtypes.get(dtype).compute).mlir == "f64" else [])


RULES = {"torch-cpu": Rules(oracle, "aten_observer.mlir.j2", DTYPES, check=check, params=params)}


def row_axis(attrs) -> int | None:
    """The channel axis of a call or configuration: the layout's (set from per_row_fake_quant), else 0 per row."""
    if attrs.get("axis", -1) >= 0:
        return attrs["axis"]
    return 0 if attrs.get("per_row_fake_quant") else None


class AtenObserver(AtenFamily):
    name = "aten_observer"
    rules_by_semantics = RULES
    extra_structural = frozenset({"symmetric_quant"})

    def channel_axis(self, spec, attrs, rank):
        return row_axis(attrs)

    def layout(self, spec, attrs):
        return FLAT if row_axis(attrs) is None else AXIS

    def reduces(self, spec, attrs):
        return True

    def mismatched_dtype_words(self, spec, index, got, want):
        name = spec.inputs[index].name
        if name in ("running_min", "running_max"):
            return f"expected scalar type Float but found {torch_name(got.name)}"
        return None

    def public_arguments(self, spec, kwargs):
        """The switches as PyTorch reads them (element 0, ``.item().toInt()``: truncated), averaging_const as a
        float32 (PyTorch: ``(float)averaging_const``); per tensor, the state given as 0-d or [1] and returned
        so (``one_element`` records which); per row, the layout's axis 0."""
        out = dict(kwargs)
        x = out.get("input")
        if isinstance(x, np.ndarray) and x.size == 0 and all(isinstance(out.get(n), np.ndarray) for n in STATE):
            # PyTorch returns a copy before reading anything: the state as given, nothing checked
            out.update(given=given_attr({n: out[n] for n in STATE}), observer_on=np.int32(0),
                       fake_quant_on=np.int32(0), running_min=np.array(0, F32), running_max=np.array(0, F32),
                       scale=np.array(1, F32), zero_point=np.array(0, np.int32), averaging_const=np.array(0, F32),
                       quant_min=0, quant_max=255, ch_axis=-1, per_row_fake_quant=False, axis=-1, one_element="")
            return out
        for name in ("observer_on", "fake_quant_on"):
            v = out.get(name)
            if isinstance(v, (np.ndarray, np.generic, int, float, bool)):
                a = np.asarray(v)
                if a.size == 0:
                    raise QDQError(f"{name} has no elements; it must hold one (element 0 is read)", op=spec.name,
                                   arg=name, reference="PyTorch",
                                   tf_message="a Tensor with 0 elements cannot be converted to Scalar")
                first = a.reshape(-1)[0]
                if a.dtype.kind == "f" and not np.isfinite(first):
                    raise QDQError(f"{name}={first} is not a number that converts to an int", op=spec.name, arg=name)
                out[name] = np.int32(int(first) != 0)
        if isinstance(out.get("averaging_const"), (int, float, np.generic, np.ndarray)):
            with np.errstate(over="ignore"):
                out["averaging_const"] = np.asarray(float(np.asarray(out["averaging_const"]).reshape(-1)[0]), F32)
        per_row = bool(out.get("per_row_fake_quant", False))
        ch_axis, rank = out.get("ch_axis", 0), np.ndim(x)
        # per row, the layout's axis is ch_axis (PyTorch: permuted to the front, the rest flattened, then along
        # dim 1: the same rows); a negative one counts from the end on a 2-D input (PyTorch permutes no 2-D input)
        out["axis"] = (ch_axis % rank if ch_axis < 0 and rank == 2 else ch_axis) if per_row and \
            isinstance(ch_axis, int) and rank else -1
        if not per_row:
            one = []
            for name in STATE:
                v = out.get(name)
                if isinstance(v, np.ndarray) and v.shape == (1,):
                    out[name] = v.reshape(())
                    one.append(name)
                elif isinstance(v, np.ndarray) and v.ndim != 0:
                    raise QDQError(f"{name} has shape {list(v.shape)}; a per-tensor observer keeps one value: "
                                   f"shape [] or [1]", op=spec.name, arg=name, reference="PyTorch",
                                   tf_message=f"a Tensor with {v.size} elements cannot be converted to Scalar")
            out["one_element"] = ",".join(one)
        zp = out.get("zero_point")
        if isinstance(zp, np.ndarray) and zp.dtype != np.int32:
            raise QDQTypeError(f"zero_point has dtype {dtypes.name_of(zp.dtype)}; allowed: int32 (the zero point the "
                               f"observer writes; PyTorch's FakeQuantize keeps it so)", op=spec.name, arg="zero_point")
        return out

    def public_results(self, spec, call, outputs):
        """The state in the shapes it was given (per tensor: 0-d or [1]); an empty input's exactly as given."""
        given = given_arrays(call.attrs.get("given", ""))
        if given:
            return (outputs[0],) + tuple(given[n] for n in STATE)
        one = set(filter(None, call.attrs.get("one_element", "").split(",")))
        return (outputs[0],) + tuple(o.reshape(1) if n in one else o for n, o in zip(STATE, outputs[1:]))

    def template_vars(self, spec, attrs):
        return {"per_channel": row_axis(attrs) is not None, "mask": False, "enabled": False, "float_zp": False,
                "symmetric": attrs["symmetric_quant"]}

    def grid_step(self, call):
        return None   # the step is computed by the op

    def matrix_variants(self, spec):
        return [{"symmetric_quant": s, **({"axis": 1, "per_row_fake_quant": True} if r else {})}
                for r in (False, True) for s in (False, True)]

    def random_calls(self, spec, attrs, x, rng, special):
        return [self.public_arguments(spec, kw) for kw in self._module_calls(attrs, x, rng, special)]

    def _module_calls(self, attrs, x, rng, special):
        """Public calls in PyTorch's module's life: the first (running range inf), later ones, each switch off once."""
        axis = row_axis(attrs)
        per_row = axis is not None
        if per_row:   # the layout's [outer, C, inner] sample as PyTorch's 2-D per-row input [C, outer * inner]
            x = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
        rows = x.shape[0] if per_row else None
        calls = []
        for i, (qmin, qmax) in enumerate(((0, 255), (-128, 127), (0, 15), (-8, 7), (0, 1), (-32768, 32767))):
            xi = special(np.ascontiguousarray(x).copy(), 0.05)
            shape = (rows,) if per_row else ()
            first = i == 0
            lo = np.full(shape, np.inf if first else -1.0 - rng.random(), F32)
            hi = np.full(shape, -np.inf if first else 1.0 + rng.random(), F32)
            calls.append({"input": xi, "observer_on": np.array([int(i != 3)]), "fake_quant_on": np.array([int(i != 4)]),
                          "running_min": lo, "running_max": hi, "scale": np.full(shape or (1,), 0.5, F32),
                          "zero_point": np.full(shape or (1,), 3, np.int32), "averaging_const": 0.01,
                          "quant_min": qmin, "quant_max": qmax, "ch_axis": 0, "per_row_fake_quant": per_row,
                          "symmetric_quant": attrs.get("symmetric_quant", False)})
        return calls

    def bench_kwargs(self, spec, attrs, shape, rng):
        """A later call of a module (a finite running range, both switches on), in the public arguments."""
        kw = self._module_calls(attrs, np.zeros(shape, F32), rng, lambda a, s: a)[1]
        kw["input"] = rng.standard_normal(kw["input"].shape, dtype=F32) * F32(2)
        return kw


FAMILY = AtenObserver()

SPECS = (
    OpSpec("fused_moving_avg_obs_fake_quant", FAMILY,
           (data("input"), scalar("observer_on", "enabled", "int32", 1), scalar("fake_quant_on", "enabled", "int32", 1),
            fixed("running_min", "running_min", "float32", RANGE, -1.0),
            fixed("running_max", "running_max", "float32", RANGE, 1.0),
            fixed("scale", "scale", "float32", RANGE, 0.1), fixed("zero_point", "zero_point", "int32", RANGE, 0),
            scalar("averaging_const", "averaging_const", "float32", 0.01)),
           (attr("quant_min", int, 0, doc="the lowest quantised level"),
            attr("quant_max", int, 255, doc="the highest quantised level"),
            attr("ch_axis", int, 0, doc="per_row_fake_quant's axis: 0 (any with observer_on 0); per tensor only "
                 "checked against the rank"),
            attr("per_row_fake_quant", bool, False, doc="observe and quantize each slice along ch_axis, any rank >= 2"),
            attr("symmetric_quant", bool, False, doc="FBGEMM's preserve_sparsity: a range symmetric about 0"),
            attr("axis", int, -1, internal=True,
                 doc="set from per_row_fake_quant: the layout's channel axis (-1 per tensor)"),
            attr("one_element", str, "", internal=True,
                 doc="set from the call: the per-tensor state given as [1] (else 0-d)"),
            attr("given", str, "", internal=True,
                 doc="set from the call: an empty input's state as given (PyTorch returns it)")),
           (result("output"), Output("running_min", RANGE, "float32"), Output("running_max", RANGE, "float32"),
            Output("scale", RANGE, "float32"), Output("zero_point", RANGE, "int32")),
           DTYPES, "The fused moving-average min/max observer and fake quantization, functional: the output and the "
           "running range, scale and zero point PyTorch leaves in its mutated arguments.",
           namespace="aten",
           signature=("input", "observer_on", "fake_quant_on", "running_min", "running_max", "scale", "zero_point",
                      "averaging_const", "quant_min", "quant_max", "ch_axis", "per_row_fake_quant", "symmetric_quant"),
           public_defaults=(("per_row_fake_quant", False), ("symmetric_quant", False))),
)
