"""What a user sees of ``qdqc validate`` (issue 14, items 2, 3 and 4): progress arrives in a pipe while the
job runs, a passing run prints no NumPy warnings and no raw driver errors, and the reports say what they
covered (attributes, case counts, seed, host CPU, devices, IREE and TF versions)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from qdq_compiler import targets
from qdq_compiler.jobs import validate as V
from qdq_compiler.jobs.validate.environment import host_cpu
from qdq_compiler.targets import readable_iree_error

QDQC = [sys.executable, "-W", "always::RuntimeWarning", "-m", "qdq_compiler"]
# A forward op and a gradient (whose sum outputs go through the sum bound): 4 configurations, small sizes.
OPS = "FakeQuantWithMinMaxArgs,FakeQuantWithMinMaxVarsGradient"
SEED = 7


@pytest.fixture(scope="module")
def piped(tmp_path_factory):
    """``qdqc validate`` with stdout and stderr pipes, stderr read line by line as it arrives."""
    d = tmp_path_factory.mktemp("validate")
    paths = {k: d / f"r.{k}" for k in ("json", "xml", "md")}
    proc = subprocess.Popen(QDQC + ["validate", "--targets", "cpu,cuda", "--ops", OPS, "--dtypes", "f32", "--sizes", "200,1000",
                                    "--seed", str(SEED), "--report", str(paths["json"]), "--junit", str(paths["xml"]),
                                    "--markdown", str(paths["md"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=d)
    seen = []  # (stderr line, when it arrived, whether the process was still running then)

    def read():
        for line in proc.stderr:
            seen.append((line.rstrip("\n"), time.monotonic(), proc.poll() is None))

    reader = threading.Thread(target=read)
    reader.start()
    out = proc.stdout.read()
    proc.wait(timeout=600)
    ended = time.monotonic()
    reader.join(timeout=60)
    err = [line for line, _, _ in seen]
    assert proc.returncode == 0, "\n".join(err) + out
    return {"seen": seen, "err": err, "out": out, "ended": ended, "paths": paths}


def test_progress_reaches_a_pipe_before_the_end(piped):
    seen, err = piped["seen"], piped["err"]
    progress = [(line, t, alive) for line, t, alive in seen if line.startswith("[")]
    assert progress and progress[0][2] and progress[0][1] < piped["ended"], \
        f"no progress line arrived while validate ran: {err}"
    assert any(line.startswith("compiling ") for line in err) and any(line.startswith("running ") for line in err)
    # one line per cell, naming the configuration, the target, the status and the cases
    cells = [line for line, _, _ in progress if " on cpu: " in line]
    assert len(cells) == len(V.build_matrix(OPS.split(","), ["float32"])), err
    assert all("exact (" in line and " cases, " in line for line in cells), cells
    assert not any("\r" in line for line in err), "a bar redrawn with \\r is for terminals, not pipes"


def test_a_passing_run_looks_like_one(piped):
    text = "\n".join(piped["err"]) + piped["out"]
    assert "Warning" not in text, text  # no NumPy RuntimeWarning, no QDQWarning from TF's edge cases
    assert "cuda_dynamic_symbols" not in text and "UNAVAILABLE" not in text and "please ensure" not in text
    ok, why = targets.get("cuda").availability()
    if not ok:
        skip = [line for line in piped["err"] if line.startswith("cuda: skipped")]
        assert skip == [f"cuda: skipped ({why})"] and ".c:" not in why, piped["err"]
    assert "exact" in piped["out"].splitlines()[-1]


def _expected_entries():
    return [e.name for e in V.build_matrix(OPS.split(","), ["float32"])]


def test_json_report_says_what_it_covered(piped):
    r = json.loads(piped["paths"]["json"].read_text())
    s, env = r["summary"], r["environment"]
    assert s["seed"] == SEED and s["sizes"] == [200, 1000]
    assert s["host_cpu"] == host_cpu() and s["host_cpu"]
    assert set(s["devices"]) == {"cpu", "cuda"} and "host CPU" in s["devices"]["cpu"]
    assert s["iree_compiler"] and s["iree_runtime"] and env["iree"]["compiler_version"] == s["iree_compiler"]
    assert s["tf_version"] == "2.21.0" and set(env["goldens_tf_version"]) == set(OPS.split(","))
    if not targets.get("cuda").availability()[0]:  # the raw driver error is kept, in the report only
        assert "cuda" in s["skipped_details"] and s["skipped_details"]["cuda"]
    entries = {e["entry"]: e for e in r["entries"]}
    assert sorted(entries) == sorted(_expected_entries())
    cells = {(c["entry"], c["target"]): c for c in r["cells"]}
    for name, e in entries.items():
        assert e["goldens"] + e["random"] == cells[(name, "cpu")]["cases"] > 0
        assert cells[(name, "cpu")]["goldens"] == e["goldens"]   # each cell ran every golden case of its configuration
        assert sum(a["golden"] + a["random"] for a in e["attribute_sets"]) == cells[(name, "cpu")]["cases"]
        assert len(e["random_calls"]) == e["random"]
        assert all("num_bits=" in a["attrs"] and "narrow_range=" in a["attrs"] for a in e["attribute_sets"])
        if e["shape"] == "static" or e["dtype"] in ("float16", "bfloat16"):  # one shape / TF has no goldens
            assert e["goldens"] == 0 and e["no_goldens"] and e["golden_file"] is None
        else:
            assert e["goldens"] > 0 and e["golden_file"] == f"goldens/{e['op']}.json" and e["no_goldens"] == ""
    assert s["goldens_run"] == sum(c["goldens"] for c in r["cells"]) > 0
    # FakeQuantWithMinMaxArgs' random calls: 8/false, 4/true and 16/false with float min/max attributes
    args = entries["FakeQuantWithMinMaxArgs:f32:dynamic"]
    assert {"num_bits=8 narrow_range=false", "num_bits=4 narrow_range=true", "num_bits=16 narrow_range=false"} <= \
        {a["attrs"] for a in args["attribute_sets"] if a["random"]}
    assert all(" min=" in c and " max=" in c for c in args["random_calls"])


def test_markdown_report_says_what_it_covered(piped):
    md = piped["paths"]["md"].read_text()
    s = json.loads(piped["paths"]["json"].read_text())["summary"]
    assert "| configuration | numeric attributes | cases (goldens + random) | goldens run | cpu | cuda |" in md
    for fact in (f"| seed | {SEED} |", "| sizes | 200, 1000 |", f"| host CPU | {s['host_cpu']} |",
                 f"| IREE compiler | {s['iree_compiler']} |", f"| IREE runtime | {s['iree_runtime']} |",
                 "| goldens from TF | 2.21.0 |", "| device cpu | host CPU"):
        assert fact in md, fact
    entries = {e["entry"]: e for e in json.loads(piped["paths"]["json"].read_text())["entries"]}
    for name, e in entries.items():
        row = next(line for line in md.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"| {e['goldens']} + {e['random']} | {e['goldens']} | exact |" in row
        assert "num_bits " in row and "narrow_range " in row
        assert f"- `{name}`: " in md
    assert "num_bits=8 narrow_range=false: " in md


def test_junit_report_says_what_it_covered(piped):
    suite = ET.parse(piped["paths"]["xml"]).getroot()
    s = json.loads(piped["paths"]["json"].read_text())["summary"]
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["seed"] == str(SEED) and props["host CPU"] == s["host_cpu"]
    assert props["IREE compiler"] == s["iree_compiler"] and props["IREE runtime"] == s["iree_runtime"]
    assert props["goldens from TF"] == "2.21.0" and props["device cpu"].startswith("host CPU")
    assert "device cuda" in props
    cases = [c for c in suite.findall("testcase") if c.get("classname") == "cpu"]
    assert len(cases) == len(_expected_entries())
    for c in cases:
        p = {q.get("name"): q.get("value") for q in c.find("properties")}
        assert int(p["goldens"]) + int(p["random"]) == int(p["cases run"]) > 0 and p["goldens run"] == p["goldens"]
        assert "num_bits" in p["numeric attributes"] and "golden +" in p["attribute sets"]


def test_no_progress_is_quiet(tmp_path):
    out = subprocess.run(QDQC + ["validate", "--targets", "cpu", "--ops", "FakeQuantWithMinMaxArgs", "--no-progress",
                                 "--dtypes", "f32", "--sizes", "200"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert "host CPU" in out.stdout and "goldens from TF" in out.stdout


def test_iree_errors_read_as_one_line():
    raw = RuntimeError("Error creating driver: c/runtime/src/iree/hal/drivers/cuda/cuda_dynamic_symbols.c:66: "
                       "UNAVAILABLE; CUDA driver library 'libcuda.so'/'nvcuda.dll' not available; please ensure "
                       "installed and in dynamic library search path\nmore")
    assert readable_iree_error(raw) == "CUDA driver library 'libcuda.so'/'nvcuda.dll' not available"
    assert readable_iree_error(RuntimeError("")) == "RuntimeError"
    # issue 29.9: a first line ending in ':' (its detail on the next line) printed "skipped (... PATH):)"
    vk = RuntimeError("Error creating device: c/runtime/src/iree/hal/drivers/vulkan/registration.c:40: "
                      "UNAVAILABLE; no Vulkan ICD found (VK_ICD_FILENAMES, LD_LIBRARY_PATH):\n  details")
    assert readable_iree_error(vk) == "no Vulkan ICD found (VK_ICD_FILENAMES, LD_LIBRARY_PATH)"
    ok, why = targets.get("cuda").availability()
    assert ok or ("\n" not in why and ".c:" not in why), why


def test_progress_says_compiled_then_loaded_from_the_cache(tmp_path):
    """A warm run must not claim to compile what it loads (it printed 'compiled' for every artifact)."""
    env = {**os.environ, "QDQ_CACHE_DIR": str(tmp_path / "cache")}
    runs = []
    for _ in range(2):
        out = subprocess.run(QDQC + ["validate", "--targets", "cpu", "--ops", "FakeQuantWithMinMaxArgs", "--dtypes", "f32",
                                           "--sizes", "200"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
        assert out.returncode == 0, out.stderr
        runs.append([line for line in out.stderr.splitlines() if line.startswith("[") and " for cpu" in line])
    cold, warm = runs
    assert cold and all("] compiled " in line for line in cold), cold
    assert len(warm) == len(cold) and all("] loaded from the cache " in line for line in warm), warm


def test_attribute_values_summarise_any_integers():
    """MX's stochastic seeds reach 2^64 - 1, one per call: the reports' attribute summary (Markdown, JUnit) once
    raised OverflowError on them after every cell had passed (issue 49)."""
    from qdq_compiler.jobs.validate.coverage import attribute_values

    def rows(k, vals):
        return {"attribute_sets": [{"attrs": f"{k}={v}"} for v in vals] + [{"attrs": "(none)"}]}
    seeds = [2 ** 64 - 1 - 7 * i for i in range(12)]
    assert attribute_values(rows("seed", seeds)) == f"seed 12 values in {min(seeds)}..{2 ** 64 - 1}"
    assert attribute_values(rows("num_bits", range(2, 17))) == "num_bits 2..16"
    assert attribute_values(rows("seed", [0, 2 ** 64 - 1])) == f"seed 0,{2 ** 64 - 1}"
    assert attribute_values(rows("narrow_range", ["true", "false"])) == "narrow_range false,true"
