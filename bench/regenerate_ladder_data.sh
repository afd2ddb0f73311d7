#!/usr/bin/env bash
# Lesson 08's H200 data, measured again from nothing, in one command (on a GPU machine with
# PyCUDA, CuPy, nvcc and ncu; about 10 minutes on an H200):
#
#     bash bench/regenerate_ladder_data.sh
#
# 1. bench/ladder_sizes.py: the full sweep (run 0), then the targeted sweeps merged in as
#    runs 1, 2 and 3 (--configs second, third, fourth), into a new
#    tilinglib/data/ladder_sizes_h200.json (the old one is kept as .previous.json);
# 2. bench/tuned_variants.py --ncu: Nsight Compute's issue figures of cuBLAS and the tuned
#    kernels of lesson 08's table, into tilinglib/data/tuned_ncu_h200.json;
# 3. on any machine afterwards: re-execute lesson 08 and check the prose's figures,
#        .venv/bin/python tools/execute_notebooks.py notebooks/08_to_cublas.ipynb
#        .venv/bin/python -m pytest tests/test_prose_figures.py tests/test_tile_choice.py
#    (the tests name every sentence whose figure no longer holds).
# Logs go to bench/results/ladder_sizes_h200*.log.
set -euo pipefail
cd "$(dirname "$0")/.."
data=tilinglib/data/ladder_sizes_h200.json
new=$(mktemp --suffix=.json)
python3 bench/ladder_sizes.py --out "$new" --log bench/results/ladder_sizes_h200.log
for configs in second third fourth; do
    python3 bench/ladder_sizes.py --configs "$configs" --merge-into "$new" \
        --log "bench/results/ladder_sizes_h200_$configs.log"
done
[ -f "$data" ] && cp "$data" "${data%.json}.previous.json"
mv "$new" "$data"
python3 bench/tuned_variants.py --ncu tilinglib/data/tuned_ncu_h200.json \
    --only base,fast,best4096 --sizes 4096
echo "done: $data and tilinglib/data/tuned_ncu_h200.json; now re-execute lesson 08 (step 3 above)"
