#!/bin/bash
# The device check: install the IREE runtime (artifacts were compiled here, no compiler there), then the
# cuda validation matrix, every golden case on cuda, and the bench. Each step bounded; output under $OUT.
export PYTHONUNBUFFERED=1
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/site/iree/compiler && cp .gpu/stub/* /tmp/site/iree/compiler/
export PYTHONPATH=/tmp/site:$PWD QDQ_CACHE_DIR=$PWD/.gpu/cache
nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
python3 -c "import numpy, ml_dtypes, jinja2; print(numpy.__version__, ml_dtypes.__version__)"
python3 -m qdq_compiler --version
python3 -m qdq_compiler targets 2>&1 | head -20
echo "setup $(( $(date +%s) - T0 )) s"
timeout ${MATRIX_S:-200} python3 -m qdq_compiler validate --targets cuda --semantics tf-cpu,tf-xla,torch-cpu --no-progress \
  --report $OUT/cuda_matrix.json --markdown $OUT/cuda_matrix.md 2>&1 | tail -40
echo "matrix done $(( $(date +%s) - T0 )) s"
timeout ${GOLDEN_S:-120} python3 tools/device_check/goldens_cuda.py cuda $OUT/cuda_goldens.json 2>&1 | tail -40
echo "goldens done $(( $(date +%s) - T0 )) s"
QDQ_TEST_TARGETS=cuda QDQ_FMA_TRIPLES=${TRIPLES:-4000000} timeout ${FMA_S:-120} python3 -m pytest -q -p no:cacheprovider tests/test_fma_equivalence.py -rs -k "cuda or cpu or oracle" 2>&1 | tail -15
echo "fma done $(( $(date +%s) - T0 )) s"
timeout ${BENCH_S:-150} python3 tools/device_check/bench_cuda.py $OUT/cuda_bench.json ${BENCH_SIZES:-14,20,24} ${BENCH_SEMS:-tf-cpu,tf-xla,torch-cpu} 2>&1 | tail -50
echo "bench done $(( $(date +%s) - T0 )) s"
