"""Every code block of the README runs as written (issue 14.5).

The convention, which the README follows:

- Every fenced block names its language (```bash, ```python, ```toml, ```json); the test knows how to run
  each and fails on any other, so no block escapes by having an unknown or missing tag.
- A block preceded by ``<!-- readme-test: skip (why) -->`` is not run; ``test_skipped_blocks_are_exactly``
  pins which ones (only the quick start, which installs packages and runs the whole suite).
- The blocks run in document order in one scratch folder (a copy of ``examples/`` inside), as a reader
  would type them: a later block may use the *files* an earlier one wrote (``x.npy``, ``dist/qat``).
- A ``python`` block is self-contained: it runs in a fresh interpreter, imports what it uses and defines
  every name it uses. A ``bash`` block runs through ``bash -euo pipefail`` with this venv's tools (qdqc,
  iree-run-module) first on PATH; ``qdqc cache clear`` runs against a cache of its own.
- A ``toml``/``json`` block is a bundle config: it must pass the bundle schema and be what the example file
  it names holds (the JSON block is all of ``examples/small_bundle.json``, the TOML one an entry of
  ``examples/qat_bundle.toml``).

Compiles go through the shared test cache (``QDQ_CACHE_DIR``, default ``.qdq_cache``), so a warm run
mostly loads artifacts.
"""
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
SKIP = re.compile(r"^<!-- readme-test: skip \((.+?)\) -->$")
RUNNABLE = ("bash", "python", "toml", "json")


def blocks(text: str | None = None):
    """(line, language, code, skip reason or None) of each fenced block of the README."""
    lines = (ROOT / "README.md").read_text().splitlines() if text is None else text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang = lines[i][3:].strip()
            j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("```")), None)
            assert j is not None, f"README.md line {i + 1}: a code fence that is never closed"
            prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            skip = SKIP.match(prev)
            out.append((i + 1, lang, "\n".join(lines[i + 1:j]) + "\n", skip.group(1) if skip else None))
            i = j
        i += 1
    return out


def test_every_block_names_a_language_the_test_runs():
    bad = [(line, lang) for line, lang, _, _ in blocks() if lang not in RUNNABLE]
    assert not bad, f"README blocks without a runnable language tag (line, tag): {bad}"
    assert len(blocks()) >= 10


def test_skipped_blocks_are_exactly_the_quick_start():
    skipped = [(lang, code) for _, lang, code, why in blocks() if why]
    assert len(skipped) == 1, skipped
    lang, code = skipped[0]
    commands = [c for c in code.splitlines() if c.strip() and not c.lstrip().startswith("#")]
    assert lang == "bash" and commands == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/qdqc validate", "bash .ci/run"], commands


def test_config_blocks_are_the_example_files(tmp_path):
    configs = {lang: code for _, lang, code, why in blocks() if lang in ("toml", "json") and not why}
    assert set(configs) == {"toml", "json"}
    assert json.loads(configs["json"]) == json.loads((ROOT / "examples" / "small_bundle.json").read_text())
    (tmp_path / "snippet.toml").write_text(configs["toml"])
    snippet, example = parse_config(tmp_path / "snippet.toml"), parse_config(ROOT / "examples" / "qat_bundle.toml")
    assert snippet.targets == example.targets and all(e in example.entries for e in snippet.entries)


@pytest.mark.slow
def test_readme_blocks_run_as_written(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONWARNINGS="error::UserWarning")
    env["QDQ_CACHE_DIR"] = str(Path(os.environ.get("QDQ_CACHE_DIR", ROOT / ".qdq_cache")).resolve())
    ran = []
    for line, lang, code, why in blocks():
        if why:
            continue
        where = f"README.md line {line} ({lang})"
        if lang == "bash":
            # `qdqc cache clear` would empty the shared test cache: it clears a cache of its own.
            code = code.replace("qdqc cache clear", f"QDQ_CACHE_DIR={tmp_path / 'own-cache'} qdqc cache clear")
            out = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=600)
        elif lang == "python":
            out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                                 text=True, timeout=600)
        else:  # toml, json: test_config_blocks_are_the_example_files
            (tmp_path / f"snippet.{lang}").write_text(code)
            parse_config(tmp_path / f"snippet.{lang}")
            ran.append(lang)
            continue
        assert out.returncode == 0, f"{where} failed:\n{code}\n--- stdout\n{out.stdout}\n--- stderr\n{out.stderr}"
        ran.append(lang)
    assert ran.count("bash") >= 4 and ran.count("python") >= 3, ran
    for made in ("fq.vmfb", "y.npy", "y64.npy", "r.json", "r.xml", "r.md", "dist/qat/manifest.json",
                 "dist/small/manifest.json"):
        assert (tmp_path / made).is_file(), made
    assert json.loads((tmp_path / "r.json").read_text())
