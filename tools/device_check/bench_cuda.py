"""Time the bench cases on cuda: copy (host NumPy), api (NumPy in/out), device (bound inputs); torch on the GPU."""
import json, statistics, sys, time
import numpy as np
from qdq_compiler.jobs.bench import cases as BC, measure as BM

out = sys.argv[1]
sizes = [int(s) for s in sys.argv[2].split(",")]
sems = sys.argv[3].split(",")
R = 7
def tm(f, n=R):
    f()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); r = f(); ts.append(time.perf_counter() - t0); del r
    return statistics.median(ts), min(ts)
rows = []
try:
    import torch
    tdev = torch.cuda.is_available()
except Exception:
    torch, tdev = None, False
from qdq_compiler import ops as OPS


def torch_aten_fn(c, kw):
    """PyTorch's own CUDA kernel for an aten case (torch.ops.aten, the schema's positional order)."""
    def tensor(v):
        return torch.from_numpy(np.ascontiguousarray(v.reshape(1) if v.ndim == 0 else v)).cuda()
    args = [tensor(kw[n]) if isinstance(kw[n], np.ndarray) else kw[n] for n in OPS.get(c.op).signature]
    return lambda: getattr(torch.ops.aten, c.op)(*args)


def time_torch(row, g, c, kw):
    """PyTorch's CUDA op ``g`` and a device copy of the case's data, synchronised, into ``row``."""
    def gs():
        r = g(); torch.cuda.synchronize(); return r
    row["torch_gpu_ms"] = round(tm(gs)[0] * 1e3, 4)
    x = torch.from_numpy(kw[BM.data_inputs(c)[0]]).cuda()
    row["torch_gpu_copy_ms"] = round(tm(lambda: (x.clone(), torch.cuda.synchronize()))[0] * 1e3, 4)


def same_bits(ours, theirs):
    """Do PyTorch's CUDA results carry our (= its CPU kernels') bits? Per output, as a list."""
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    return [bool(np.array_equal(np.asarray(a).view(np.uint8), t.detach().cpu().numpy().reshape(np.shape(a)).view(np.uint8)))
            for a, t in zip(ours, theirs)]


for c in BC.select_cases(None, semantics=sems):
    case, sem = c, c.semantics
    for k in sizes:
        kw = BC.make_inputs(c, 1 << k)
        fns = BM.variant_functions(c, kw, ["cuda"], frameworks=())
        row = {"case": c.name, "semantics": sem, "log2n": k}
        if k <= 20:
            row["exact"] = BM.check_exact(c, fns[("api", "cuda")](), fns[("oracle", "-")](), kw)
        for v in (("copy", "-"), ("api", "cuda"), ("device", "cuda")):
            med, mn = tm(fns[v])
            row[v[0] + "_ms"] = round(med * 1e3, 3); row[v[0] + "_min_ms"] = round(mn * 1e3, 3)
        if tdev and sem == "torch-cpu":
            try:   # PyTorch's version there (2.11) may lack an overload: say so, time the rest
                g = torch_aten_fn(c, kw)
                if k <= 20:
                    row["torch_gpu_same_bits"] = same_bits(fns[("api", "cuda")](), g())
                time_torch(row, g, c, kw)
            except Exception as e:
                row["torch_gpu_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        if tdev and case.torch and sem == "tf-cpu":
            x = torch.from_numpy(kw[BM.data_inputs(c)[0]]).cuda()
            if case.torch == "per-tensor":
                g = lambda: torch.fake_quantize_per_tensor_affine(x, 0.01, 128, 0, 255)
            else:
                s = torch.full((x.shape[1],), 0.01, device="cuda")
                z = torch.full((x.shape[1],), 128, dtype=torch.int32, device="cuda")
                g = lambda: torch.fake_quantize_per_channel_affine(x, s, z, 1, 0, 255)
            time_torch(row, g, c, kw)
        rows.append(row)
        print(json.dumps(row), flush=True)
json.dump(rows, open(out, "w"), indent=1)
