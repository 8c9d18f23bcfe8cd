"""``qdqc bench``: throughput of the compiled ops against a memory copy, the NumPy oracle and TensorFlow.

For each benchmark case (an op with attributes) and each size 2^k (float32 elements) it times, interleaved
round by round so that all variants see the same machine load:

    copy     ``.copy()`` of every data-sized input (the same bytes the op reads): the bandwidth yardstick
    api      the public API, ``qdq_compiler.raw_ops.<Op>(..., target=T)``: NumPy in, NumPy out
    device   the compiled kernel alone: inputs bound once (imported on CPU, uploaded elsewhere), results
             left on the device
    oracle   the NumPy reference (``qdq_compiler.oracle.raw_ops``)
    tf       TensorFlow's kernel (``tf.raw_ops``, NumPy in, ``.numpy()`` out) and tf-op (the op alone on
             resident tensors), in a process of its own, only when TensorFlow is installed (never a dependency)
    torch    PyTorch's nearest op (``torch.fake_quantize_per_tensor_affine`` / ``_per_channel_affine``,
             8 bits, NumPy in, ``.numpy()`` out) and torch-op (the op alone on a resident tensor), in a process
             of its own on as many threads as there are cores, where a case has one and PyTorch is installed:
             a throughput comparison only (its nudging and rounding are not TF's)

and reports the median time, GB/s (bytes = the data-sized arrays read plus written) and the ratio to the
copy, as a table (and, per case at its largest size, ours beside TensorFlow and PyTorch), as JSON (``--json``) and as a PNG plot of throughput against size (``--plot``, needs
matplotlib: ``pip install 'qdq-compiler[plot]'``). Each api result is also compared with the oracle
(bit for bit; float sums within their rounding bound, policy 6): the ``exact`` column. A 16-element call
is timed for the per-call overhead.

Timings are only meaningful as ratios within one run on one machine. Nothing here is an assertion: tests
only check that the harness runs (``benchmarks/check_goals.py`` reads the JSON against performance goals).

    cases.py    Case, CASES, select_cases, parse_sizes, make_inputs
    measure.py  run_bench (timing, interleaved), measure_case, measure_latency, check_exact
    report.py   format_table, plot
    run.py      benchmark (measure, print, write the JSON and the plot)
"""
from .cases import CASES, DEFAULT_SIZES, Case, data_inputs, make_inputs, parse_frameworks, parse_sizes, select_cases
from .measure import check_exact, machine_info, measure_case, measure_latency, run_bench
from .report import format_table, plot
from .run import benchmark

__all__ = ["CASES", "Case", "DEFAULT_SIZES", "benchmark", "check_exact", "data_inputs", "format_table",
           "machine_info", "make_inputs", "measure_case", "measure_latency", "parse_frameworks", "parse_sizes",
           "plot", "run_bench",
           "select_cases"]
