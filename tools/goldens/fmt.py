"""The golden file format (qdq_compiler/goldens/README.md): exact hex floats, tensors, case records, files.

One encoder and one writer for every set (tf-cpu, tf-xla, half), so their files cannot drift apart in
layout: a golden is compared bit for bit, so every float is written as its exact value.
"""
import json
import math
import os
import re

import numpy as np

INT_DTYPES = ("int32", "int64")


def hexf(v):
    """Exact value of a float as hex, trailing zeros of the mantissa removed; "nan", "inf", "-inf"."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    m = re.match(r"(-?0x[01])\.([0-9a-f]*)p([+-]\d+)$", v.hex())
    return "%s.%sp%s" % (m.group(1), m.group(2).rstrip("0") or "0", m.group(3))


def f32hex(v):
    """A float attr as the files hold it: its float32 value in hex (TF's float attrs are float32)."""
    return hexf(np.float32(v))


def unhex(s):
    """The float of a hex string of the files (float.fromhex reads "nan", "inf" and "-inf" too)."""
    return float.fromhex(s)


def enc_array(dtype, arr):
    """A tensor record {"dtype", "shape", "values"}: ints as ints, floats widened exactly to float64 as hex.
    ``dtype`` is the label written (a bfloat16 tensor may be held in a float32 array)."""
    arr = np.asarray(arr)
    vals = ([int(v) for v in arr.ravel()] if dtype in INT_DTYPES else
            [hexf(v) for v in arr.astype(np.float64).ravel()])
    return {"dtype": dtype, "shape": [int(d) for d in arr.shape], "values": vals}


def dec_array(entry, T=np.float32):
    """A tensor record back to an array of type T (exact where T holds the written values)."""
    vals = [unhex(v) for v in entry["values"]]
    return np.array(vals, np.float64).astype(T).reshape(entry["shape"])


def enc_case(case, expect, tags):
    """A case record, keys in the files' order; ``case["inputs"]`` maps names to (dtype label, array)."""
    out = {"id": case["id"], "op": case["op"], "attrs": case["attrs"],
           "inputs": {k: enc_array(dt, a) for k, (dt, a) in case["inputs"].items()},
           "expect": expect, "tags": tags, "note": case.get("note", "")}
    if case.get("sum_outputs") and "outputs" in expect:
        out["sum_outputs"] = list(case["sum_outputs"])
    if case.get("deviation"):
        out["deviation"] = case["deviation"]
    out.update({k: case[k] for k in ("graph_error", "eager_outputs", "eager_error") if k in case})
    return out


def enc_outputs(names, arrays):
    """An "outputs" expectation: each output under its TF name, labelled with its array's own dtype."""
    return {"outputs": {n: enc_array(str(np.asarray(a).dtype), a) for n, a in zip(names, arrays)}}


def write_file(path, header, records, separators=(", ", ": ")):
    """One golden file: the header keys, then "cases" with one record per line (the layout git diffs well;
    ``separators`` (",", ":") for the large ones)."""
    with open(path, "w") as fh:
        fh.write(json.dumps(header)[:-1] + ', "cases": [\n')
        fh.write(",\n".join(json.dumps(c, separators=separators) for c in records))
        fh.write("\n]}\n")
    return os.path.getsize(path)


def write_set(out, final, header):
    """Every op's file of a set (``final``: op -> records, ``header(op)``: its top-level keys) and a table of
    success and error counts; returns the bytes written."""
    os.makedirs(out, exist_ok=True)
    total = 0
    print("\n%-44s %8s %8s" % ("op", "success", "errors"))
    for op, records in final.items():
        total += write_file(os.path.join(out, op + ".json"), header(op), records)
        n_err = sum("error" in c["expect"] for c in records)
        print("%-44s %8d %8d" % (op, len(records) - n_err, n_err))
    print("bytes written: %d (%s)" % (total, out))
    return total


def same_bits(a, b):
    """Equal as the goldens mean it: same shape, same bits, any NaN matching any NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    an, bn = np.isnan(a), np.isnan(b)
    a, b = a[~an], b[~bn]
    return bool(np.array_equal(an, bn) and np.all(a == b) and np.all(np.signbit(a) == np.signbit(b)))


def host_description(fma_note):
    """The CPU the goldens came from (XLA:CPU contracts to FMA where the host has it); ``fma_note`` adds the
    "; FMA available" clause the FakeQuant XLA files carry."""
    model, flags = "unknown CPU", None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name") and model == "unknown CPU":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and flags is None:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    flags = flags or set()
    text = "%s, x86-64 (%s%s)" % (model, "AVX2, " if "avx2" in flags else "", "FMA" if "fma" in flags else "no FMA")
    if fma_note:
        text += "; FMA %s" % ("available" if "fma" in flags else "NOT available")
    return text
