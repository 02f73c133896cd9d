#!/bin/sh
# Runs every Tier 2 setting of bench/tier2_bench.cpp back to back, one process each.
#   bench/tier2_bench.sh [MODEL_DIR] [REQUESTS]   (after `make bench`)
set -eu
MODEL=${1:-build/debug/test-models/llama-wide}
N=${2:-500}
for s in ort-defaults ebb-defaults arena-off same-as-requested shrink-every-10 \
         shrink-after-next-every-50 reload-every-50; do
  build/bench/bench/tier2_bench "$MODEL" "$s" "$N"
done
