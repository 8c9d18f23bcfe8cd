"""Which targets a validation runs, which it only compiles, and which it skips with the reason."""
from __future__ import annotations

from ... import targets as T
from ...errors import QDQError


def select_targets(names: list[str] | None, availability=None) -> tuple[list[str], dict[str, str], list[str]]:
    """The targets to run, those skipped with their reasons, and the skipped ones named explicitly
    (these are still compiled, so a missing device does not hide a compile failure). ``availability(name)``
    says (runs, why not): default ``Target.availability`` here; a cluster's, whether a worker advertises it.

    ``names`` None (or empty): the default target, cpu (the quick start: 142 artifacts, about a minute
    cold on 2 cores). ``["all"]``: cpu and every other target, the unavailable ones skipped and not
    compiled.
    """
    if not names:
        names = ["cpu"]
    every = list(names) == ["all"]
    if "all" in names and not every:
        raise QDQError(f"targets={','.join(names)!r}: 'all' stands alone (cpu and every other available "
                       f"target), or name targets: {', '.join(T.TARGETS)}", arg="targets")
    names = ["cpu"] + [n for n in T.TARGETS if n not in ("cpu", "cpu-host")] if every else list(names)
    run, skipped, compile_only = [], {}, []
    for n in names:
        t = T.get(n)
        ok, why = availability(t.name) if availability else t.availability()
        if ok:
            run.append(t.name)
        else:
            skipped[t.name] = why
            if not every:
                compile_only.append(t.name)
    return run, skipped, compile_only
