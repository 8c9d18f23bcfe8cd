"""The hand-written golden cases of the tf-cpu set: edge cases per op family and the error cases.

Data only: the generators (gen_qdq.py, gen_fq.py) and declared.py turn each row into a case, and the order
of the rows is the order of the case ids. A value is a number, a nested list (a tensor) or a string:

    "nan", "inf", "-inf"             special values
    "sm", "tiny"                     the smallest subnormal / normal of the case's float type, with an
                                     optional sign and factor: "-sm", "5sm", "1.5tiny"
    ... followed by "<" or ">"      the next float below / above: "1<", "-1>", "tiny<" (also after a number)
    "x23", "x23T", "x5"              named tensors of the error cases (caselib.NAMED)
    "zeros:2,0", "ones:1,2"          a tensor of that shape
    "ones"                           ones shaped like the data input
    (dtype, value)                   a tensor of another dtype than the case's ("float64", 1)

Numbers are cast to the case's element type T. An edge row gives a range as ``lo``/``hi`` (scalars, or
one value per channel), ``shape`` instead of ``x`` for an all-zero tensor, and optional attrs: ``signed``,
``bits``, ``rg`` (range_given), ``rm``, ``narrow``, ``axis``; ``T`` or ``ops`` restrict a row to one type
or to some ops; ``tags``, ``note`` and ``deviation`` are copied to the case.
"""

RM = ("HALF_TO_EVEN", "HALF_UP")
_SPECIALS = ["nan", "inf", "-inf", 0, -0.0, "sm", "-sm", "tiny", "-tiny"]
_SPECIAL_TAGS = ["nan", "inf", "neg_zero", "subnormal"]
_EMPTY_SHAPES = ([0], [2, 0], [0, 3], [3, 0, 2])
_V3 = ("QuantizeAndDequantizeV3",)

# QuantizeAndDequantize V1..V4 forward, for T in (float32, float64); rows an op cannot express (V1: no
# round_mode, narrow_range or axis; V3: no round_mode) are skipped. QDQ_EDGE_TAIL follows the random
# per-channel cases.
QDQ_EDGE = [
    *[dict(row, rm=rm) for rm in RM for row in [
        dict(x=[k - 128.5 for k in range(0, 257, 8)] + [-0.5, 0.5, 1.5, -1.5, 2.5, -2.5], lo=-128, hi=127,
             tags=["tie"], note="scale=1: exact ties"),
        dict(x=[(k + 0.5) / 64 for k in range(-5, 5)], lo=-2, hi=127 / 64, tags=["tie"],
             note="scale=64: ties at k+0.5"),
        dict(x=[k + 0.5 for k in range(-9, 8)], lo=-8, hi=7, bits=4, narrow=True, tags=["tie", "narrow"],
             note="4-bit narrow, ties"),
        dict(x=[17 * k - 0.5 for k in range(16)] + [0.5, 1.5, 254.5], lo=0, hi=255, signed=False,
             tags=["tie", "unsigned"], note="unsigned ties"),
        dict(x=[-4, 3.96875] + [k / 64 for k in range(-9, 10, 2)], rg=False, tags=["tie"],
             note="data range, scale=32, ties"),
        dict(x=_SPECIALS + [0.5], lo=-1, hi=1, tags=_SPECIAL_TAGS, note="specials, given range"),
        dict(x=["inf", 1, -2], rg=False, tags=["inf"], note="data range with +inf: scale 0, inv inf -> NaN"),
        dict(x=["-inf", 1, -2], rg=False, tags=["inf"], note="data range with -inf"),
        dict(x=[-0.0, -0.0, 0.5, -0.25], rg=False, tags=["neg_zero"], note="signed zeros in data with nonzero range"),
    ]],
    *[dict(x=[0.3, -0.2, 2, -2, 0, -0.0, 0.75, -0.75], lo=lo, hi=hi, signed=signed, narrow=narrow,
           tags=["min_eq_max" if lo == hi else "range_excludes_zero"], note=note)
      for lo, hi, note in [(1, 1, "min==max>0"), (-1, -1, "min==max<0"), (0, 0, "min==max==0"), (-0.0, 0, "-0..0"),
                           (0.5, 1, "range excludes zero (pos)"), (-2, -0.5, "range excludes zero (neg)"),
                           (0, 1, "lo=0"), (-1, 0, "hi=0"), (-1, -0.0, "hi=-0")]
      for signed in (True, False) for narrow in (False, True)],
    *[dict(x=x, rg=False, signed=signed, tags=["const_data"], note=note)
      for x, note in [([2] * 4, "constant positive data"), ([-2] * 4, "constant negative"),
                      ([-1, -2, -1e-30], "all negative (unsigned garbage)"), ([0.5, 1, 3], "all positive data")]
      for signed in (True, False)],
    # all-zero data with a data range: the sign of the zeros is reduction-order dependent
    *[dict(x=x, rg=False, signed=signed, tags=["neg_zero"], note="all-zero data", deviation="zero_sign")
      for x in ([0, -0.0, 0], [-0.0] * 3, [0] * 5, [0, -0.0]) for signed in (True, False)],
    # NaN inside a data range: position dependent in TF
    *[dict(x=x, rg=False, tags=["nan"], note="NaN in data range", deviation="nan_in_data_range")
      for x in (["nan", 1, -1, 0.3], [1, -1, 0.3, "nan"], [1, "nan", -1, 0.3] + [0.1] * 13 + ["nan"])],
    # subnormal handling (DAZ/FTZ)
    dict(T="float32", x=[3 * 2.0 ** -128, 2.0 ** -127, 2.0 ** -126, 2.0 ** -120, -3 * 2.0 ** -128], lo=0,
         hi=2.0 ** -64, signed=False, bits=62, tags=["subnormal"],
         note="DAZ probe: subnormal x times 2^126 would give levels 1..2"),
    dict(T="float32", x=[2.0 ** -100, 2.0 ** -88, -(2.0 ** -90), 0], lo=-(2.0 ** -88), hi=2.0 ** -88, bits=40,
         tags=["subnormal_intermediate"], note="inv = 2^-127 is subnormal"),
    dict(T="float32", x=[2.0 ** -100, 2.0 ** -88, -(2.0 ** -90), 2.0 ** -95], rg=False, bits=40,
         tags=["subnormal_intermediate"], note="data range: inv subnormal"),
    dict(T="float32", x=[1e-39, -3e-39, 5e-40, 2e-39], rg=False, tags=["subnormal"], note="all-subnormal data range"),
    dict(T="float64", x=[3 * 2.0 ** -1024, 2.0 ** -1023, 2.0 ** -1022, 2.0 ** -1000, -3 * 2.0 ** -1024], lo=0,
         hi=2.0 ** -960, signed=False, bits=62, tags=["subnormal"], note="DAZ probe (f64): scale 2^1022, inv 2^-1022"),
    dict(T="float64", x=[2.0 ** -1000, 2.0 ** -984, -(2.0 ** -990), 0], lo=-(2.0 ** -984), hi=2.0 ** -984, bits=40,
         tags=["subnormal_intermediate"], note="f64: inv = 2^-1023 is subnormal"),
    dict(T="float64", x=[1e-310, -3e-310, 5e-311, 2e-310], rg=False, tags=["subnormal"],
         note="all-subnormal data range (f64)"),
    # 1-bit and large bits
    *[row for signed in (True, False) for narrow in (False, True) for row in [
        dict(x=[0.3, -0.7, 1, -1, 0], lo=-1, hi=1, signed=signed, bits=1, narrow=narrow,
             tags=["narrow"] if narrow else [], note="num_bits=1"),
        dict(x=[0.3, -0.7, 1, 0.0], rg=False, signed=signed, bits=1, narrow=narrow, note="num_bits=1, data range")]],
    *[row for rm in RM for row in [
        dict(T="float32", x=[8388609, 8388611, -8388609, 2.5, 16777215, -2.5], lo=-536870912, hi=536870912, bits=30,
             rm=rm, tags=["tie"], note="num_bits=30: HALF_UP odd integers >= 2^23"),
        dict(T="float64", x=[2.0 ** 52 + 1, 2.0 ** 52 + 3, -(2.0 ** 52 + 1), 2.5, -2.5], lo=-(2.0 ** 60), hi=2.0 ** 60,
             bits=61, rm=rm, tags=["tie"], note="f64 num_bits=61: HALF_UP odd integers >= 2^52"),
        *[dict(x=[0.1, -0.3, 0.999, 1, -1, 1.0 / 3], lo=-1, hi=1, signed=signed, bits=bits, rm=rm,
               note="large num_bits")
          for bits, signed in ((61, True), (62, False), (24, True), (25, True), (53, True), (54, True))]]],
    # empty tensors and rank 0 (V3 rejects rank 0: those become error cases)
    *[row for shape in _EMPTY_SHAPES for row in [
        dict(shape=shape, lo=-1, hi=1, tags=["empty"], note="empty"),
        dict(shape=shape, rg=False, tags=["empty"], note="empty, data range"),
        *[row for ax, c in enumerate(shape) for row in [
            dict(shape=shape, lo=[-1] * c, hi=[1] * c, rg=False, axis=ax, tags=["empty", "per_channel"],
                 note="empty per-channel"),
            dict(ops=_V3, shape=shape, lo=[-1] * c, hi=[1] * c, axis=ax, tags=["empty", "per_channel"],
                 note="empty per-channel given")]]]],
    dict(x=0.3, lo=-1, hi=1, tags=["rank0"], note="rank 0"),
    dict(x=-0.7, rg=False, tags=["rank0"], note="rank 0, data range"),
]
QDQ_EDGE_TAIL = [
    # per-channel degenerate channels
    dict(ops=_V3, x=[[0.3, 0.1, 1], [-0.2, 0.5, 1], [2, -0.5, 1], [-2, 0.0, 1]], lo=[1, 0, 0.5], hi=[1, 0, 0.25],
         axis=1, tags=["per_channel", "min_eq_max", "min_gt_max"],
         note="V3 per-channel: min==max and min>max channels (unchecked)"),
    dict(ops=_V3, x=[[0.3, 0.1, 1], [-0.2, 0.5, 1], [2, -0.5, 1], [-2, 0.0, 1]], lo=[-1, -2, 0.5], hi=[1, -1, 2],
         axis=1, tags=["per_channel", "range_excludes_zero"], note="V3 per-channel excl. zero"),
    dict(x=[[0, 1], [0, -1], [0, 2]], lo=[0, 0], hi=[0, 0], rg=False, axis=1, tags=["per_channel"],
         note="per-channel data range: an all-(+0) channel"),
    dict(T="float64", x=[0.3, -0.7, 1 / 3, 0.003937007874015748], lo=-1, hi=1, note="float64 whole computation"),
]

# QuantizeAndDequantizeV4Grad, for T in (float32, float64): g = gradients (``shape``: g and x all zero).
_XS = ["-1<", -1, "-1>", 0, -0.0, "1<", 1, "1>", "nan", "inf", "-inf"]
_GS = [2.0 ** k for k in range(len(_XS))]
_GSPECIAL = [-1, 2, "nan", "inf", "-inf", -0.0, 0, 3]
V4GRAD_EDGE = [
    dict(g=_GS, x=_XS, lo=-1, hi=1, tags=["nan", "inf"], note="inclusive mask on raw min/max"),
    dict(g=_GS, x=_XS, lo=1, hi=-1, tags=["min_gt_max"], note="min>max: all masked"),
    dict(g=_GS, x=_XS, lo=0.5, hi=0.5, tags=["min_eq_max"], note="min==max"),
    dict(g=_GS, x=_XS, lo=0, hi=0, tags=["min_eq_max"], note="min==max==0 (x=+-0 pass)"),
    dict(g=_GS, x=_XS, lo=-0.0, hi=-0.0, tags=["min_eq_max", "neg_zero"], note="min==max==-0"),
    dict(g=_GS, x=_XS, lo="nan", hi=1, tags=["nan"], note="NaN min"),
    dict(g=_GS, x=_XS, lo="-inf", hi="inf", tags=["inf"], note="infinite range"),
    dict(g=_GSPECIAL, x=[5] * 7 + [0], lo=-1, hi=1, tags=["nan", "inf", "neg_zero"],
         note="masked special gradients: g*0"),
    dict(g=_GSPECIAL, x=[0] * 8, lo=-1, hi=1, tags=["nan", "inf"], note="passed special gradients"),
    dict(g=["sm", "-sm", "tiny", "-tiny", "tiny<", 1], x=[0] * 6, lo=-1, hi=1, tags=["subnormal"],
         note="subnormal gradients times 1.0"),
    dict(g=[1] * 6, x=["-sm", "sm", "-tiny>", 0, "tiny", "-tiny"], lo=0, hi=1, tags=["subnormal"],
         note="subnormal inputs vs min=0 (DAZ probe)"),
    dict(g=[1] * 4, x=[0, "sm", "2sm", 1], lo="sm", hi=1, tags=["subnormal"], note="subnormal min (DAZ probe)"),
    *[row for shape in _EMPTY_SHAPES[:3] for row in [
        dict(shape=shape, lo=-1, hi=1, tags=["empty"], note="empty"),
        *[dict(shape=shape, lo=[-1] * c, hi=[1] * c, axis=ax, tags=["empty", "per_channel"], note="empty per-channel")
          for ax, c in enumerate(shape)]]],
    dict(g=3, x=0.5, lo=-1, hi=1, tags=["rank0"], note="rank 0"),
    dict(g=3, x=1.5, lo=-1, hi=1, tags=["rank0"], note="rank 0 masked"),
]

# FakeQuant (all six ops, float32). Args rows need min < max; PerChannel rows need rank >= 1 and use the
# range on every channel. ``x="grid"``: 15 points from lo - 20% to hi + 20% of the range, in float32.
# ``g`` (gradient ops only) defaults to 2^(i % 12); ``grad_only`` rows exist only for the gradient ops.
FQ_EDGE = [
    *[dict(x=_SPECIALS + [0.5, -0.5, 3], lo=-1, hi=1, bits=bits, narrow=narrow, tags=_SPECIAL_TAGS,
           note="special values") for bits in (2, 8, 16) for narrow in (False, True)],
    *[dict(x=[k - 128.5 for k in range(0, 257, 5)] + [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], lo=lo, hi=hi, bits=8,
           tags=["tie"], note="scale 1 ties") for lo, hi in ((-128, 127), (-127.5, 127.5), (0, 255), (-255, 0))],
    dict(x=[k + 0.5 for k in range(-9, 8)], lo=-8, hi=7, bits=4, tags=["tie"], note="4-bit ties"),
    dict(x=[k + 0.5 for k in range(-9, 8)], lo=-7, hi=7, bits=4, narrow=True, tags=["tie", "narrow"],
         note="4-bit narrow ties"),
    *[dict(x="grid", lo=lo, hi=hi, bits=bits, tags=["range_excludes_zero"] if lo > 0 or hi < 0 else [],
           note="zero-point nudging")
      for lo, hi in ((-1, 1), (-6, 6), (-127.5, 127.5), (-0.5, 0.5), (-3, 1), (-1, 3), (1, 6), (-6, -1),
                     (0.001, 0.002), (-1e-3, 5e-4), (-65535, 0), (0, 65535)) for bits in (2, 8, 16)],
    # degenerate ranges (Vars/PerChannel; Args rejects them: error cases)
    *[dict(x=[0.3, -5, "nan", 2, 0, -0.0, -1, 1], lo=lo, hi=hi, tags=[tag], note=note)
      for lo, hi, tag, note in [(0, 0, "min_eq_max", "min==max==0"), (-0.0, 0, "min_eq_max", "-0,0"),
                                (0, -0.0, "min_eq_max", "0,-0"), (-0.0, -0.0, "min_eq_max", "-0,-0"),
                                (1, 1, "min_eq_max", "min==max>0"), (-2, -2, "min_eq_max", "min==max<0"),
                                (1, -1, "min_gt_max", "min>max"), ("nan", 1, "inf", "NaN min"),
                                (-1, "nan", "inf", "NaN max"), ("-inf", 1, "inf", "-inf min"),
                                (-1, "inf", "inf", "inf max"), ("-inf", "inf", "inf", "inf range")]],
    # subnormal handling probes
    dict(x=[2.0 ** -125, 2.0 ** -130, -(2.0 ** -128), 0, 2.0 ** -121], lo=-(2.0 ** -120), hi=2.0 ** -120,
         tags=["subnormal_intermediate"], note="tiny range: scale 2^-119/255 is subnormal"),
    dict(x=[2.0 ** -100, 2.0 ** -99, -(2.0 ** -101), 0, 3 * 2.0 ** -102], lo=-(2.0 ** -100), hi=2.0 ** -100, bits=2,
         tags=["subnormal"], note="small normal range"),
    dict(x=["sm", "5sm", "-sm", "tiny", 0], lo=-1, hi=1, bits=16, g=[1] * 5, tags=["subnormal"],
         note="subnormal inputs, 16-bit"),
    dict(x=[0, 0, 5, 5, -5, -5], lo=-1, hi=1, g=["sm", "-sm", "1.5tiny", "-tiny", "3sm", "tiny"], tags=["subnormal"],
         note="subnormal gradients (pass-through and sums)"),
    dict(grad_only=True, x=[0, 0.5, 5, -5, 0.25, 5], lo=-1, hi=1, g=["nan", "inf", 1, 2, "-inf", 4],
         tags=["nan", "inf"], note="NaN/inf gradients inside the range: are they excluded from the sums?"),
    dict(grad_only=True, x=[0, 5, 5, -5, -5, 0.5], lo=-1, hi=1, g=[1, "nan", 2, "inf", 3, -0.0], tags=["nan", "inf"],
         note="NaN/inf gradients outside the range (summed)"),
    *[dict(shape=shape, lo=-1, hi=1, tags=["empty"], note="empty") for shape in _EMPTY_SHAPES + ([0, 0],)],
    dict(x=0.3, lo=-1, hi=1, tags=["rank0"], note="rank 0"),
]

# Error cases (spec section 5): (ops, base inputs, rows); each row (attrs, inputs, note[, extra]) is made
# for every op of its group, its inputs over the base ones. Inputs are keyed by their role in the op
# registry (data, grad, min, max, num_bits); a PerChannel op takes a base min/max once per channel of the
# data. Float attrs are numbers here (written as float32 hex). ``extra``: "T" (the dtype of the T-typed
# inputs, default float32), "deviation", "v1_mode" ("modern": run V1 in a modern graph).
_DEV = {"deviation": "per_channel_given_range"}
_M1, _P1 = [-1, -1], [1, 1]
_M3, _P3 = [-1, -1, -1], [1, 1, 1]
ERRORS = [
    (("QuantizeAndDequantize",), {"data": [0.5, -0.25]}, [
        ({}, {}, "V1 in a modern graph (producer >= 22)", {"v1_mode": "modern"}),
        *[({"num_bits": nb, "signed_input": sg}, {}, "V1 num_bits out of range")
          for nb, sg in ((0, True), (-1, True), (62, True), (63, False), (100, False))],
        ({"range_given": True, "input_min": 1, "input_max": 0}, {}, "V1 range_given, input_min > input_max"),
        ({"range_given": True, "input_min": 1, "input_max": "nan"}, {}, "V1 range_given, NaN input_max"),
        ({}, {"data": [0.5]}, "V1 half", {"T": "float16"}),
    ]),
    (("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4"), {"data": "x23", "min": -1, "max": 1}, [
        *[({"num_bits": nb, "signed_input": sg, "range_given": True}, {}, "num_bits out of range")
          for nb, sg in ((0, True), (-1, True), (62, True), (63, False), (64, False), (100, True))],
        ({"axis": -2}, {}, "axis < -1, scalar min/max"),
        ({"axis": -2}, {"min": _M1, "max": _P1}, "axis < -1, rank-1 min/max"),
        ({"axis": -5}, {"min": _M3, "max": _P3}, "axis -5"),
        ({"axis": 2}, {"min": _M1, "max": _P1}, "axis >= rank"),
        ({"axis": 2}, {}, "axis >= rank, scalar min/max"),
        ({"axis": 0}, {"data": 0.5, "min": [-1], "max": [1]}, "axis 0 on a rank-0 input"),
        ({"axis": 5}, {"data": "zeros:1,2,1,2,1", "min": [0, 0], "max": _P1}, "axis 5 on rank 5"),
        ({"range_given": True}, {"min": [-1]}, "range_given, input_min shape [1]"),
        ({"range_given": True}, {"max": [1]}, "range_given, input_max shape [1]"),
        ({"range_given": True}, {"min": _M1, "max": _P1}, "range_given, rank-1 min/max axis -1"),
        ({"range_given": True, "axis": 1}, {"min": _M3, "max": _P3},
         "per-channel given range (TF 2.21 rejects every such call)", _DEV),
        ({"range_given": True, "axis": 0}, {"min": [-1, -0.5], "max": [1, 0.5]},
         "per-channel given range axis 0", _DEV),
        ({"range_given": True, "axis": 0, "num_bits": 4},
         {"data": "zeros:2,0", "min": [-1, -0.5], "max": [1, 0.5]},
         "per-channel given range, empty input", _DEV),
        ({"range_given": True, "axis": 1}, {}, "per-channel given range with scalar min/max", _DEV),
        ({"range_given": True}, {"min": 1, "max": 0}, "min > max"),
        ({"range_given": True}, {"min": "nan"}, "NaN min"),
        ({"range_given": True}, {"max": "nan"}, "NaN max"),
        ({"range_given": True, "signed_input": False}, {"min": 2, "max": 1}, "unsigned, min > max"),
        ({"range_given": True}, {"min": 0.5, "max": 0.25}, "float64 min > max", {"T": "float64"}),
        ({"range_given": False}, {"min": [-1], "max": [1]},
         "data range, rank-1 min/max with axis -1 (shape fn only)"),
        ({"range_given": False, "axis": 0}, {}, "data range per-channel, scalar min/max (shape fn only)"),
        ({"range_given": False, "axis": 0}, {"min": _M1, "max": _P3}, "min/max shapes differ (shape fn only)"),
        ({"range_given": False, "axis": 0}, {"min": _M3, "max": _P3}, "min dim != input dim (shape fn only)"),
        ({"round_mode": "HALF_AWAY"}, {}, "invalid round_mode"),
        ({"round_mode": "half_up"}, {}, "round_mode is case sensitive"),
        ({}, {"data": [0.5]}, "half: no kernel", {"T": "float16"}),
        ({}, {"data": [0.5]}, "bfloat16: no kernel", {"T": "bfloat16"}),
        ({}, {"data": [0.5], "min": ("float64", -1), "max": ("float64", 1)}, "mixed dtypes"),
        ({}, {"data": [1]}, "int32 input", {"T": "int32"}),
    ]),
    (_V3, {"data": "x23", "min": -1, "max": 1, "num_bits": 8}, [
        ({"axis": 2}, {"min": _M1, "max": _P1}, "axis >= rank"),
        ({"axis": -3}, {}, "axis < -rank"),
        ({"axis": -2}, {"min": _M1, "max": _P1}, "-rank <= axis <= -2 (CHECK failure)"),
        ({"axis": -2}, {"data": "zeros:2,2,2", "min": _M1, "max": _P1}, "axis -2 on rank 3 (CHECK failure)"),
        ({"axis": -3}, {"data": "zeros:2,2,2", "min": _M1, "max": _P1}, "axis -3 on rank 3"),
        ({}, {"num_bits": [8]}, "num_bits tensor shape [1]"),
        ({}, {"num_bits": [8, 8]}, "num_bits tensor shape [2]"),
        *[({"signed_input": sg}, {"num_bits": nb}, "num_bits value out of range")
          for nb, sg in ((0, True), (-5, True), (62, True), (63, False), (64, False))],
        ({}, {"min": 1, "max": 0}, "min > max"),
        ({}, {"min": "nan", "max": 0}, "NaN min"),
        ({"range_given": True}, {"min": _M1, "max": _P1}, "axis -1, min/max with 2 elements (CHECK failure)"),
        ({"range_given": True}, {"max": _P1}, "axis -1, max with 2 elements"),
        ({"range_given": True, "axis": 1}, {"min": [-1], "max": [1]}, "per-channel, wrong min length"),
        ({"range_given": True, "axis": 1}, {"min": _M3, "max": _P1}, "per-channel, wrong max length"),
        ({"range_given": True, "axis": 1}, {}, "per-channel, scalar min/max"),
        ({"range_given": False}, {"min": _M1, "max": _P1}, "data range, rank-1 min/max axis -1 (shape fn only?)"),
        ({"range_given": False, "axis": 1}, {}, "data range per-channel, scalar min/max (shape fn only?)"),
        ({}, {"num_bits": ("int64", 8)}, "num_bits int64"),
        ({}, {"data": [0.5]}, "half: no kernel", {"T": "float16"}),
    ]),
    (("QuantizeAndDequantizeV4Grad",), {"grad": "x23", "data": "x23", "min": -1, "max": 1}, [
        ({"axis": -2}, {}, "axis < -1"),
        ({"axis": -2}, {"min": _M1, "max": _P1}, "axis < -1, rank-1 min"),
        ({"axis": 1}, {"grad": [1, 2], "data": [1, 2], "min": [-1], "max": [1]}, "axis >= rank (rank 1)"),
        ({"axis": 2}, {"min": _M3, "max": _P3}, "axis >= rank (rank 2)"),
        ({"axis": 0}, {"grad": 1, "data": 1, "min": [-1], "max": [1]}, "axis 0, rank-0 input"),
        ({}, {"data": "x23T"}, "gradients/input shapes differ"),
        ({}, {"grad": [1, 2], "data": [1, 2, 3]}, "gradients/input sizes differ"),
        ({}, {"min": [[0]]}, "min rank 2"),
        ({}, {"max": [[0]]}, "max rank 2"),
        ({"axis": 1}, {"min": _M1, "max": _P3}, "per-channel, wrong min length"),
        ({"axis": 1}, {"min": _M3, "max": _P1}, "per-channel, wrong max length"),
        ({"axis": 1}, {}, "per-channel, scalar min/max"),
        ({}, {"min": [-1]}, "axis -1 and min shape [1]"),
        ({}, {"max": _P1}, "axis -1 and max shape [2]"),
        ({}, {"grad": [1], "data": [0.5]}, "half: no kernel", {"T": "float16"}),
    ]),
]
_FQ_BASE = {"grad": "ones", "data": "x23", "min": -1, "max": 1}
_ARGS = ("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgsGradient")
_VARS = ("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsGradient")
_PC = ("FakeQuantWithMinMaxVarsPerChannel", "FakeQuantWithMinMaxVarsPerChannelGradient")
ERRORS += [
    (_ARGS + _VARS + _PC, _FQ_BASE, [
        *[({"num_bits": nb}, {}, "num_bits out of [2,16]") for nb in (0, 1, 17, 32)],
        ({}, {}, "float64 inputs (FakeQuant is float32 only)", {"T": "float64"}),
    ]),
    (_ARGS, _FQ_BASE, [({"min": lo, "max": hi}, {}, note) for lo, hi, note in (
        (1, 1, "min == max"), (1, 0, "min > max"), (0, 0, "min == max == 0"), ("nan", 1, "NaN min"),
        (-1, "nan", "NaN max"), (2.0 ** -149, 2.0 ** -149, "min == max subnormal"),
        (-(2.0 ** -149), 2.0 ** -149, "min < max, both subnormal (DAZ?)"),
        (0, 2.0 ** -130, "min 0 < max subnormal (DAZ?)"))]),
    (_ARGS[1:], _FQ_BASE, [
        ({}, {"grad": "ones:1,2", "data": [0.5, 0.25]}, "gradients/inputs shapes differ (same size)"),
        ({}, {"grad": "ones:2,3", "data": "x23T"}, "gradients/inputs shapes differ (transposed)"),
        ({}, {"grad": "ones:3", "data": [0.5, 0.25]}, "gradients/inputs sizes differ"),
    ]),
    (_VARS, _FQ_BASE, [({}, {"min": [-1]}, "min shape [1]"), ({}, {"min": [[-1]]}, "min rank 2"),
                       ({}, {"max": [1]}, "max shape [1]"), ({}, {"max": [[1]]}, "max rank 2")]),
    (_VARS[1:] + _PC[1:], _FQ_BASE, [({}, {"grad": "ones:3,2"}, "gradients/inputs shapes differ"),
                                     ({}, {"grad": "ones:2,4"}, "gradients/inputs sizes differ")]),
    (_PC, _FQ_BASE, [
        *[row for k, v in (("min", -1), ("max", 1)) for row in [
            ({}, {k: v}, "%s rank 0" % k), ({}, {k: [[v] * 3]}, "%s rank 2" % k),
            ({}, {k: [v]}, "len(%s) != last dim" % k), ({}, {k: [v] * 4}, "len(%s) 4 != last dim 3" % k)]],
        ({}, {"data": 0.5, "grad": 1, "min": [-1], "max": [1]}, "rank-0 inputs (CHECK failure)"),
    ]),
    (_PC[1:], _FQ_BASE, [({}, {"data": "x5"}, "rank 5 (shape fn only)"),
                         ({}, {"data": "zeros:1,1,2,1,1,3"}, "rank 6 (shape fn only)")]),
]
