"""The measured NumPy reference of the fused moving-average observer (fused_moving_avg_obs_fake_quant), kept
for the step that implements it: written by experiment against PyTorch 2.13 (README.md beside this file, part
2: 0 mismatches over 300 per-tensor and 534 per-row cases). Not part of the package; it imports
nothing; the learnable ops it was measured with live in the package (ops/aten_learnable_grad.py)."""
import numpy as np

F32, F64 = np.float32, np.float64

NUM_THREADS = 2          # torch.get_num_threads() on this machine; affects sums with numel >= 32768

# Contraction found by experiment (exp_fma.py): True = fused multiply-add in that expression
FMA_BWD_XQ = True        # nearbyint(zp + x * inv_scale)           (both learnable backward kernels)
FMA_BWD_XFQ = True       # (clamp(xq) - zp) * scale - x            (both learnable backward kernels)

INT64_MIN = np.iinfo(np.int64).min
INT32_MIN = np.iinfo(np.int32).min


# ----------------------------------------------------------------------------- helpers
def bf16_round(a):
    """float32 -> bfloat16 (c10 round_to_nearest_even; NaN -> 0x7FC0), returned as float32."""
    a = np.asarray(a, F32)
    u = a.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
    r = np.where(np.isnan(a), np.uint32(0x7FC00000), r.astype(np.uint32)).astype(np.uint32)
    return r.view(F32)


def to_dtype(a32, dtype):
    """float32 value -> storage dtype (as produced by a C++ float -> scalar_t conversion)."""
    if dtype == 'float32':
        return np.asarray(a32, F32)
    if dtype == 'float64':
        return np.asarray(a32, F32).astype(F64)
    if dtype == 'float16':
        return np.asarray(a32, F32).astype(np.float16)
    if dtype == 'bfloat16':
        return bf16_round(a32)
    raise ValueError(dtype)


def item_float(t):
    """tensor[0].item<float>() : first element converted to float32 (double -> float is RN)."""
    return F32(np.asarray(t).reshape(-1)[0])


def fma32(a, b, c):
    """Correctly rounded float32 fma(a, b, c) (vectorised): exact product in double, sum rounded to
    odd in double, then rounded to nearest float32 -> no double-rounding error."""
    a = np.asarray(a, F32).astype(F64)
    b = np.asarray(b, F32).astype(F64)
    c = np.asarray(c, F32).astype(F64)
    with np.errstate(all='ignore'):
        p = a * b                      # exact (24+24 bits)
        s = p + c
        bb = s - p
        err = (p - (s - bb)) + (c - bb)   # TwoSum error, exact
        bits = s.view(np.uint64)
        odd = (bits & 1).astype(bool)
        fin = np.isfinite(s) & np.isfinite(err)
        need = fin & (err != 0) & ~odd
        toward = np.where(err > 0, np.inf, -np.inf)
        s2 = np.where(need, np.nextafter(s, toward), s)
        return s2.astype(F32)


def _f2i(v, itype):
    """C++ static_cast<intN_t>(float/double) on x86-64 (cvtts*2si): truncation; NaN or out of range -> the
    type's minimum ("integer indefinite")."""
    v = np.asarray(v)
    lo = float(np.iinfo(itype).min)
    ok = np.isfinite(v) & (v < -lo) & (v >= lo)
    out = np.full(v.shape, np.iinfo(itype).min, itype)
    with np.errstate(all='ignore'):
        out[ok] = np.trunc(v[ok]).astype(itype)
    return out


def f2i64(v):
    return _f2i(v, np.int64)


def f2i32(v):
    return _f2i(v, np.int32)


def cpp_max(a, b):   # std::max(a, b) == (a < b) ? b : a
    return np.where(a < b, b, a)


def cpp_min(a, b):   # std::min(a, b) == (b < a) ? b : a
    return np.where(b < a, b, a)


def fmax(a, b):      # C fmax: NaN ignored
    return np.fmax(a, b)


def fmin(a, b):
    return np.fmin(a, b)


def _err(msg, exc=RuntimeError):
    raise exc(msg)


# ----------------------------------------------------------------------------- per-tensor kernel
def _fq_per_tensor_kernel(x, dtype, sc, zp, qmin, qmax):
    """_fake_quantize_tensor_helper (fake_quant_on): returns (output in dtype, mask)."""
    sc = F32(sc)
    with np.errstate(all='ignore'):
        inv = F32(1) / sc
        if dtype == 'float64':
            xv = np.asarray(x, F64)
            qf = F64(zp) + np.rint(xv * F64(inv))                  # int64 + double
        else:
            xv = np.asarray(x, F32)                                   # half/bf16 * float -> float
            qf = F32(zp) + np.rint((xv * inv).astype(F32))           # int64 + float -> float
            qf = qf.astype(F32)
        cl = fmin(fmax(qf.astype(F64), F64(qmin)), F64(qmax))        # std::fmin/fmax (mixed -> double)
        q = f2i64(cl)
        out32 = (F32(1) * (q - zp).astype(F32) * sc).astype(F32)     # int64 * float -> float
        t = qf.dtype.type
        mask = (t(qmin) <= qf) & (qf <= t(qmax))
    return to_dtype(out32, dtype), mask


def _check_index0(*ts):
    """C++ `t[0]` on scale / zero_point (per-tensor ops)."""
    for t in ts:
        a = np.asarray(t)
        if a.ndim == 0:
            _err("select() cannot be applied to a 0-dim tensor.", IndexError)
        if a.shape[0] == 0:
            _err(f"select(): index 0 out of range for tensor of size {list(a.shape)} at dimension 0", IndexError)


def _bshape(v, ndim, axis):
    s = [1] * ndim
    s[axis] = -1
    return np.asarray(v).reshape(s)


_TORCH_NAMES = {'float32': 'Float', 'float64': 'Double', 'float16': 'Half', 'bfloat16': 'BFloat16',
                'int32': 'Int', 'int64': 'Long'}


# ----------------------------------------------------------------------------- op 3
def _cdiv(a, b):
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def choose_qparams_fbgemm(mn, mx, qmin, qmax, preserve_sparsity):
    """fbgemm::ChooseQuantizationParams(min, max, qmin, qmax, preserve_sparsity, false) as bundled with
    torch 2.13 (fused_obs_fake_quant.cpp is built with USE_FBGEMM) -> (float32 scale, int32 zp)."""
    mn, mx = F32(mn), F32(mx)
    SMALL = F32(6.1e-5)
    with np.errstate(all='ignore'):
        if mn < 0 and mx > 0 and preserve_sparsity:
            sqmin = -(_cdiv(qmax - qmin, 2) + 1)
            sqmax = _cdiv(qmax - qmin, 2)
            a = np.abs(F32(mn / F32(sqmin)))          # float / int -> float
            b = np.abs(F32(mx / F32(sqmax)))
            max_scale = F64(b if a < b else a)        # std::max(float, float) -> double
            mn = F32(max_scale * sqmin)
            mx = F32(max_scale * sqmax)
        mn = F32(0) if F32(0) < mn else mn            # std::min(min, 0.f)
        mx = F32(0) if mx < F32(0) else mx            # std::max(max, 0.f)
        scale = F32((F64(mx) - F64(mn)) / F64(qmax - qmin))
        if scale == 0 or np.isinf(F32(1) / scale):
            scale = F32(0.1)
        if scale < SMALL:
            org = scale
            scale = SMALL
            if mn == 0:
                mx = F32(SMALL * F32(qmax - qmin))
            elif mx == 0:
                mn = F32(-SMALL * F32(qmax - qmin))
            else:
                amp = F32(SMALL / org)
                mn = F32(mn * amp)
                mx = F32(mx * amp)
        sd = F64(scale)
        zfm = F64(qmin) - F64(mn) / sd
        zfx = F64(qmax) - F64(mx) / sd
        efm = abs(qmin) + abs(F64(mn) / sd)
        efx = abs(qmax) + abs(F64(mx) / sd)
        init = zfm if efm < efx else zfx
        if mn < 0 and mx > 0 and preserve_sparsity:
            init = F64(qmin + qmax) / 2
        if init < qmin:
            zp = qmin
        elif init > qmax:
            zp = qmax
        else:
            zp = int(f2i32(np.array(np.rint(init))))
    return F32(scale), np.int32(zp)


def fused_moving_avg_obs_fq_helper(x, observer_on, fake_quant_on, running_min, running_max, scale, zero_point,
                                   averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant=False,
                                   symmetric_quant=False, dtype=None):
    """Returns (output, mask, running_min, running_max, scale, zero_point) -- the last four are the
    mutated copies (float32 / float32 / float32 / zero_point's dtype)."""
    dtype = dtype or str(np.asarray(x).dtype)
    x = np.asarray(x)
    if np.asarray(observer_on).size == 0 or (int(np.asarray(observer_on).reshape(-1)[0]) == 0 and np.asarray(fake_quant_on).size == 0):
        _err("a Tensor with 0 elements cannot be converted to Scalar")
    rdt = str(np.asarray(running_min).dtype)
    if int(np.asarray(observer_on).reshape(-1)[0]) and dtype == 'float32' and rdt != 'float32':
        _err(f"expected scalar type Float but found {_TORCH_NAMES.get(rdt, rdt)}")
    rmin = np.array(running_min, F32, copy=True)
    rmax = np.array(running_max, F32, copy=True)
    sc = np.array(scale, copy=True)
    zp = np.array(zero_point, copy=True)
    c = F32(averaging_const)
    if int(np.asarray(observer_on).reshape(-1)[0]):
        if dtype != 'float32':
            _err(f"expected scalar type Float but found {_TORCH_NAMES[dtype]}")
        if per_row_fake_quant:
            if ch_axis != 0:
                _err("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0")
            cur_min = np.min(x, axis=1).reshape(-1)   # NaN propagates like aminmax
            cur_max = np.max(x, axis=1).reshape(-1)
        else:
            if x.size == 0:
                _err("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
            cur_min = np.array([np.min(x)], F32)
            cur_max = np.array([np.max(x)], F32)
        fm, fx = rmin.reshape(-1), rmax.reshape(-1)
        with np.errstate(all='ignore'):
            for i in range(cur_min.size):
                fm[i] = cur_min[i] if np.isinf(fm[i]) else F32(fm[i] + F32(c * F32(cur_min[i] - fm[i])))
                fx[i] = cur_max[i] if np.isinf(fx[i]) else F32(fx[i] + F32(c * F32(cur_max[i] - fx[i])))
    if int(np.asarray(fake_quant_on).reshape(-1)[0]):
        fm, fx = rmin.reshape(-1), rmax.reshape(-1)
        scv, zpv = sc.reshape(-1), zp.reshape(-1)
        if per_row_fake_quant:
            for i in range(fm.size):
                s_, z_ = choose_qparams_fbgemm(fm[i], fx[i], quant_min, quant_max, symmetric_quant)
                scv[i] = s_
                zpv[i] = z_
            # at::fake_quantize_per_channel_affine_cachemask(x, scale, zero_point, ch_axis, ...) checks
            # (scale / zero_point / running stats are already mutated when these fire)
            if str(sc.dtype) not in ('float32',):
                _err(f"Scale must be Float or BFloat16, found {_TORCH_NAMES.get(str(sc.dtype), sc.dtype)}")
            if str(zp.dtype) not in ('int32', 'float32', 'float16'):
                _err(f"Zero-point must be Int32, Float or Half, found {_TORCH_NAMES.get(str(zp.dtype), zp.dtype)}")
            if zp.dtype.kind in 'iu' and zp.size and not (zp.min() >= quant_min and zp.max() <= quant_max):
                _err("`zero_point` must be between `quant_min` and `quant_max`.")
            out, mask = _per_channel_int_kernel(x, dtype, sc, zp, ch_axis, quant_min, quant_max)
        else:
            s_, z_ = choose_qparams_fbgemm(fm[0], fx[0], quant_min, quant_max, symmetric_quant)
            scv[0] = s_
            zpv[0] = z_
            out, mask = _fq_per_tensor_kernel(x, dtype, F32(scv[0]), int(zpv[0]), quant_min, quant_max)
        return out, mask, rmin, rmax, sc, zp
    return x.copy(), np.ones(x.shape, bool), rmin, rmax, sc, zp


def _per_channel_int_kernel(x, dtype, scale, zi, axis, qmin, qmax):
    """(output, mask) of the per-channel int-zero-point kernel."""
    nd = x.ndim
    sc = _bshape(np.asarray(scale, F32), nd, axis)
    z = _bshape(np.asarray(zi).astype(np.int32), nd, axis)
    with np.errstate(all='ignore'):
        inv = (F32(1) / sc).astype(F32)
        if dtype == 'float64':
            qf = z.astype(F64) + np.rint(x.astype(F64) * inv.astype(F64))
        else:
            qf = (z.astype(F32) + np.rint((x.astype(F32) * inv).astype(F32))).astype(F32)
        q = f2i64(qf)
        cl = fmin(fmax(q.astype(F64), F64(qmin)), F64(qmax))
        outd = (cl - z.astype(F64)) * sc.astype(F64)
    out = outd if dtype == 'float64' else to_dtype(outd.astype(F32), dtype)
    return out, (qmin <= q) & (q <= qmax)


def fused_moving_avg_obs_fake_quant(*args, **kw):
    """Returns (output, running_min, running_max, scale, zero_point) (the op returns only output and
    mutates the other four in place)."""
    out, mask, rmin, rmax, sc, zp = fused_moving_avg_obs_fq_helper(*args, **kw)
    return out, rmin, rmax, sc, zp
