#!/bin/bash
# Issue 45's GPU acceptance in one call, on a GPU machine with its own torch, after
# benchmarks/gpu_prepare.sh has put .whl/ and .gpu/fmnist/ beside the checkout:
#
#   OUT=results-folder bash benchmarks/gpu_acceptance.sh [THROUGHPUT_SECONDS] [TESTS_SECONDS] \
#       [CERTIFY_SECONDS]
#
# MODELS="a b" picks the throughput phase's models (default: bench_gpu.py's four); a
# CERTIFY_SECONDS of 0 skips the certify phase (a session with little GPU time left).
#
# The throughput phase runs alone on the GPU first (its ratios are timings: nothing else may
# share the machine), then `make test-gpu`'s tests and the certify phase. Each phase has its
# own time limit and writes its numbers as it ends, so a cut-off run still reports. Results in
# $OUT: bench.md / bench.json (the section for reports/benchmarks.md), tests.log, run.log.
set -u
export PYTHONUNBUFFERED=1 OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$OUT/run.log"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >> "$OUT/run.log" 2>&1 || { stamp "pip failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD ROBENCH_FASHION_MNIST_DIR=$PWD/.gpu/fmnist
python3 -c "import sys, torch; print(sys.version, torch.__version__, torch.cuda.get_device_name(0))" \
    >> "$OUT/run.log" 2>&1
stamp installed
# shellcheck disable=SC2086  # MODELS is a list of words
timeout "${1:-300}" python3 benchmarks/bench_gpu.py --phases throughput --output "$OUT/bench.md" \
    ${MODELS:+--models $MODELS} > "$OUT/bench.log" 2>&1
stamp "throughput rc=$?"
timeout "${2:-150}" python3 -m pytest -m gpu -v -rs -p no:cacheprovider tests/test_gpu.py \
    > "$OUT/tests.log" 2>&1
stamp "tests rc=$?"
if [ "${3:-90}" != 0 ]; then
    timeout "${3:-90}" python3 benchmarks/bench_gpu.py --phases certify --output "$OUT/certify.md" \
        > "$OUT/certify.log" 2>&1
    stamp "certify rc=$?"
fi
