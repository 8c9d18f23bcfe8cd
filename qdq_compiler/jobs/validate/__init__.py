"""``qdqc validate``: the same op configurations on every target, compared with the oracle bit for bit.

The matrix is op x structural attributes x dtype x shape kind (static/dynamic). Each configuration is
compiled once per target (numeric attributes are runtime parameters, so one artifact serves every
num_bits/narrow_range/signed_input/min/max) and then run on:
  - the TF 2.21 golden inputs of that op whose structure matches the configuration, and
  - random inputs of each requested size, sprinkled with ties, NaN, +-inf, +-0 and subnormals,
    under several numeric attribute sets.
A cell is "exact", "ulp N" (largest distance in units in the last place), "error: ..." or
"skipped: reason". Any non-exact cell makes the exit status 1. Each cell counts the golden cases it ran (a
configuration that ran none says why), and a golden file the package declares but lacks is an error naming it
(``goldens.require``): an install without its package data must not pass having run none.

    matrix.py   MatrixEntry, structural_variants, build_matrix, shard
    inputs.py   the keyword arguments of the calls: random_calls, golden_calls, entry_calls
    cells.py    Cell, bound_calls (a configuration's calls, bound once), run_cell (one configuration on one target)
    coverage.py entry_coverage: the numeric attribute sets and case counts (goldens, random) of a configuration
    environment.py  host CPU, the device behind each target, IREE versions, the goldens' TF version
    run.py      run_validation (the whole run: targets, cells, reports), LocalExecutor (parallel compiles, then
                the cells here; jobs/cluster's ClusterExecutor runs them on a Dask cluster), select_targets
    progress.py the stage headings and the bar or lines on stderr
    selection.py select_targets: run, compile only, or skip (why); a cluster passes its own availability
    report.py   format_table, markdown, json_report, junit (each with the coverage and the environment)
"""
from .cells import Cell, bound_calls, run_cell
from .coverage import entry_coverage
from .environment import environment
from .inputs import entry_calls, golden_calls, random_calls
from .matrix import MatrixEntry, build_matrix, shard, structural_variants
from .report import format_table, json_report, junit, markdown
from .run import DEFAULT_SIZES, LocalExecutor, precompile, run_validation, select_targets

__all__ = ["Cell", "DEFAULT_SIZES", "LocalExecutor", "MatrixEntry", "bound_calls", "build_matrix", "entry_calls", "entry_coverage",
           "environment", "format_table", "golden_calls", "json_report", "junit", "markdown", "precompile",
           "random_calls", "run_cell", "run_validation", "select_targets", "shard", "structural_variants"]
