import sys, numpy as np
sys.path.insert(0,'/work/scratch/reduce'); from h import *
driver = sys.argv[1]; files = sys.argv[2:]
progs = {f: load(compile(f)[0], driver) for f in ['qdq_axis_data.mlir'] + files}
rng = np.random.default_rng(7)
sp = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 1e-39, -1e-39, 3e38, -3e38], np.float32)
nanp = np.array([0x7fc00001, 0xffc00123, 0x7f800001], np.uint32).view(np.float32)
res = {f: [] for f in files}
for (R, C) in [(1000, 64), (4097, 7), (33, 9), (5, 3), (16, 64), (17, 64), (4096*16+37, 64), (262144, 64), (3, 1), (1, 5)]:
    for trial in range(3):
        x = (rng.standard_normal((R, C)) * rng.choice([1e-3, 1, 1e4], C)).astype(np.float32)
        if trial >= 1:
            flat = x.reshape(-1); idx = rng.integers(0, flat.size, max(1, flat.size // 200)); flat[idx] = rng.choice(sp[2:], idx.size)
            # ties: k+0.5 multiples of scale
            m = rng.random((R, C)) < 0.2; x[m] = (np.round(x[m] * 10) / 10 + 0.05).astype(np.float32)
        if trial == 2:
            flat = x.reshape(-1); idx = rng.integers(0, flat.size, max(1, flat.size // 1000)); flat[idx] = rng.choice(np.concatenate([sp[:2], nanp]), idx.size)
            if C > 2: x[:, 1] = 0.0; x[::2, 1] = -0.0; x[:, 2] = np.float32(1e-40)
        a = [x, np.zeros(C, np.float32), np.zeros(C, np.float32)]
        ref = np.array(progs['qdq_axis_data.mlir'](a, driver=driver)[0]).view(np.uint32)
        for f in files:
            got = np.array(progs[f](a, driver=driver)[0]).view(np.uint32)
            e = np.array_equal(got, ref); res[f].append(e)
            if not e:
                bad = got != ref; gv, rv = got.view(np.float32)[bad], ref.view(np.float32)[bad]
                print('MISMATCH', f, (R, C, trial), bad.sum(), 'both NaN:', np.sum(np.isnan(gv) & np.isnan(rv)))
print(driver, {f: f'{sum(v)}/{len(v)}' for f, v in res.items()})
