"""Every code block of the README runs as written (issue 14.5), in document order, in one scratch folder:
bash blocks through bash (with this venv's tools first on PATH), python blocks in a fresh interpreter,
TOML and JSON bundle configs through the bundle schema. A block preceded by
``<!-- readme-test: skip (why) -->`` is not run; the test pins which ones those are."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qdq_compiler.jobs.bundle import parse_config

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SKIP = re.compile(r"<!-- readme-test: skip \((.+?)\) -->\s*$")

pytestmark = pytest.mark.slow


def blocks():
    """(line, language, code, skip reason or None) of each fenced block of README.md."""
    out, lines = [], (ROOT / "README.md").read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w+)\s*$", lines[i])
        if m:
            j = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
            prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            skip = SKIP.match(prev)
            out.append((i + 1, m.group(1), "\n".join(lines[i + 1:j]) + "\n", skip.group(1) if skip else None))
            i = j
        i += 1
    return out


def test_only_the_setup_block_is_skipped():
    skipped = [(line, lang) for line, lang, code, why in blocks() if why]
    assert len(skipped) == 1 and "bash .ci/run" in blocks()[0][2], skipped


def test_readme_blocks_run_as_written(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.setdefault("QDQ_CACHE_DIR", str(ROOT / ".qdq_cache"))
    env["QDQ_CACHE_DIR"] = str(Path(env["QDQ_CACHE_DIR"]).resolve())  # the shared test cache, not tmp_path's
    ran = 0
    for line, lang, code, why in blocks():
        if why:
            continue
        where = f"README.md line {line} ({lang})"
        if lang == "bash":
            # `qdqc cache clear` would empty the shared test cache: run it against a cache of its own.
            code = code.replace("qdqc cache clear", f"QDQ_CACHE_DIR={tmp_path / 'own-cache'} qdqc cache clear")
            out = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=900)
        elif lang == "python":
            out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                                 text=True, timeout=900)
        elif lang in ("toml", "json"):
            cfg = tmp_path / f"snippet.{lang}"
            cfg.write_text(code)
            parse_config(cfg)
            ran += 1
            continue
        else:
            pytest.fail(f"{where}: no rule to run a {lang} block")
        assert out.returncode == 0, f"{where} failed:\n{code}\n--- stdout\n{out.stdout}\n--- stderr\n{out.stderr}"
        ran += 1
    assert ran >= 8
    assert (tmp_path / "y.npy").is_file() and (tmp_path / "y64.npy").is_file()
    assert json.loads((tmp_path / "r.json").read_text())
