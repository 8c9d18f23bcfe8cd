"""``qdqc build --cluster``: a bundle's compiles as tasks on a cluster's workers.

A bundle's program and flags are fixed on the driver (the cpu level is the bundle's own, never a worker's), so
any worker builds the same bytes (iree-compile is deterministic: jobs/bundle/build.py), and the bundle is the
one a local build writes. Every artifact also lands in the driver's cache.
"""
from __future__ import annotations

from ... import compile as C
from . import engine, tasks


class ClusterCompiler(engine.Session):
    """``compile(mlir, flags, ...)`` on any worker of the cluster at ``address`` (``local:N`` starts one)."""

    def __init__(self, address: str, min_workers: int = 1):
        super().__init__(address, min_workers)
        self.threads = sum(w["nthreads"] for w in self.workers.values()) or 1

    def compile(self, mlir: str, flags: tuple[str, ...], *, what: str, info: dict | None,
                use_cache: bool) -> tuple[bytes, bool]:
        """(bytes, whether a cache had them): the driver's cache first, else a worker's (or its compiler)."""
        key = C.cache_key(mlir, flags)
        if use_cache:
            data = C.read_verified(C.cache_dir() / f"{key}.vmfb", C.cache_dir() / f"{key}.json")
            if data is not None:
                return data, True
        future = self.client.submit(tasks.compile_module, mlir, tuple(flags), what, info, use_cache, self.identity,
                                    key=f"bundle {what} {key[:12]}", pure=False)
        try:
            data, had = future.result()
        except BaseException:
            future.cancel()
            raise
        if use_cache:
            C.store_artifact(key, data, C.artifact_record(data, flags, what=what, info=info))
        return data, had
