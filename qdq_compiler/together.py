"""Many op configurations compiled into one module, in one iree-compile run.

iree-compile's cost here is mostly per module (pass pipelines, serialization: ~0.5 s on 2 cores), and ~0.15 s a
further function; a run that will call many configurations (a validation matrix, a test over reference goldens)
compiles them several times faster together. Each configuration keeps its own functions (renamed apart,
``@Op__3``), compiled as they are alone: a function's dispatches are its own (identical ones are shared).

The module serves this process only: ``execute`` holds each configuration's artifact (the module and its
function's name); the on-disk index, ``qdqc compile``, bundles and a cluster's ``shipped`` keep single-
configuration artifacts. The module itself is cached on disk by its text, so a second run of the same set loads it.
"""
from __future__ import annotations

import re

from . import compile as _compile
from . import emit, execute, targets
from .errors import QDQError

# How many configurations go into one module: 32 golden-test programs took ~10 s of one compile instead of ~25 s
# of 32 (2 cores, llvm-cpu; vmvx and Vulkan alike); larger groups gain little and lose the second core.
TOGETHER = 32
_SYMBOL = re.compile(r"@([A-Za-z_][\w$.]*)")


def compile_together(cfgs, group: int = TOGETHER, jobs: int = 1) -> int:
    """Compile the configurations of ``cfgs`` that this process does not hold, up to ``group`` of one target and
    flags to a module; afterwards ``execute.artifact_for`` (and every call) finds them in this process.

    Left to ``artifact_for`` (alone, with its own error): a configuration that does not render, every one of a
    group that does not compile, and one that the on-disk index already holds (it loads). ``jobs``: groups
    compiled at once (each then holds at most its share). Returns how many were compiled or loaded together."""
    groups: dict[tuple, list] = {}
    seen = set()
    for cfg in cfgs:
        try:
            targets.get(cfg.target).require_dtype(cfg.dtype)
        except QDQError:
            continue
        flags = execute.flags_for(cfg)
        if execute.in_process(cfg, flags):
            continue
        if (cfg, flags) not in seen and not execute.indexed(cfg, flags):
            groups.setdefault(flags, []).append(cfg)
        seen.add((cfg, flags))
    work = []
    for flags, pending in groups.items():
        size = max(2, min(group, -(-len(pending) // max(1, jobs))))
        work += [(pending[i:i + size], flags) for i in range(0, len(pending), size)]
    if jobs <= 1 or len(work) <= 1:
        return sum(_compile_group(g, f) for g, f in work)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return sum(pool.map(lambda w: _compile_group(*w), work))


def _compile_group(cfgs: list, flags: tuple[str, ...]) -> int:
    texts, kept = [], []
    for cfg in cfgs:
        try:
            texts.append(emit.render(cfg))
            kept.append(cfg)
        except QDQError:
            continue
    if len(kept) < 2:   # nothing to share: artifact_for compiles (or loads) it alone
        return 0
    module = "\n".join(_SYMBOL.sub(lambda m, i=i: f"@{m.group(1)}__{i}", text) for i, text in enumerate(texts))
    key = _compile.cache_key(module, flags)
    cached = (_compile.cache_dir() / f"{key}.vmfb").is_file()
    try:
        path, data = _compile.cached_compile(module, flags, what=f"{len(kept)} configurations together")
    except QDQError:
        return 0
    for i, (cfg, text) in enumerate(zip(kept, texts)):
        execute.hold(execute.Artifact(cfg, flags, data, path, key, text, f"{cfg.op}__{i}", cached))
    return len(kept)
