#!/usr/bin/env bash
# The course on a GPU: the gpu-marked tests, every lesson and every assignment's
# source notebook under nbval, all on the PyCUDA backend. Run from the repository root in
# an environment with the "gpu" and "test" extras (pip install -e ".[gpu,test]").
# Logs go to $OUT (default: artifacts/gpu/).
set -o pipefail
OUT=${OUT:-artifacts/gpu}
mkdir -p "$OUT"
export TILINGLIB_BACKEND=pycuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -m pytest -q -p no:cacheprovider -m gpu tests -o addopts="" 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
python3 -m pytest -q -p no:cacheprovider notebooks/0*.ipynb 2>&1 | tee "$OUT/nbval_lessons_gpu.log" | tail -8
python3 -m pytest -q -p no:cacheprovider -o addopts="" --nbval-lax --nbval-current-env \
    --nbval-cell-timeout=600 notebooks/assignments/*/*.ipynb 2>&1 \
    | tee "$OUT/nbval_assignments_gpu.log" | tail -8
