"""Validation and bundle builds across machines, on Dask distributed (``qdqc validate --cluster``).

    engine.py    Dask: connecting (an address, or ``local:N`` worker processes here), a worker's resources
                 (the targets it runs, each with the profile of what shapes its artifacts), ``qdqc worker``'s command
    tasks.py     what workers run: a configuration's cases with the oracle's answers, its artifacts, its cells
    validate.py  ClusterExecutor: the matrix as tasks, placement by resource, faults, cells in a local run's order
    bundle.py    a bundle's compiles as tasks; the bundle is byte-identical to a local build

Dask distributed is an optional dependency (``qdq-compiler[cluster]``); nothing here is imported without it
unless ``--cluster`` is asked for.
"""
