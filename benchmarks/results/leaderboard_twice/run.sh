#!/usr/bin/env bash
# The board twice on two of its four tasks (multiplication, refdist), disjoint tuning-seed sets, the same reported seeds.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/leaderboard_twice
for set in 1000,1001,1002 2000,2001,2002; do
  date -u +"start ${set} %FT%TZ"
  .venv/bin/rewardzoo leaderboard --preset cpu --seeds 5 --tuning-seeds $set --tasks multiplication refdist \
      --runs runs/leaderboard --out $OUT/tuning${set%%,*}
  date -u +"end ${set} %FT%TZ"
done
.venv/bin/python -m rewardzoo.board.compare $OUT/tuning1000/LEADERBOARD.md $OUT/tuning2000/LEADERBOARD.md --out $OUT/verdicts_twice.md
date -u +"done %FT%TZ"
