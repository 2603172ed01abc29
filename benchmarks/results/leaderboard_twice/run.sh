#!/usr/bin/env bash
# The board twice on some of its tasks: disjoint tuning-seed sets (1000-1002, 2000-2002), the same reported seeds.
#   run.sh rubric_writing ...   those tasks → rubric_writing/tuning1000/, .../tuning2000/, .../verdicts_twice.md
#   run.sh                      multiplication and refdist → multiplication_refdist/...
# The whole board twice, all four tasks: `make leaderboard-twice` (A is then the canonical board).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/leaderboard_twice
if [ $# -eq 0 ]; then TASKS=(multiplication refdist); else TASKS=("$@"); fi
OUT=$OUT/$(IFS=_; echo "${TASKS[*]}")
for set in 1000,1001,1002 2000,2001,2002; do
  date -u +"start ${set} %FT%TZ"
  .venv/bin/rewardzoo leaderboard --preset cpu --seeds 5 --tuning-seeds $set --tasks "${TASKS[@]}" \
      --runs runs/leaderboard --out $OUT/tuning${set%%,*}
  date -u +"end ${set} %FT%TZ"
done
.venv/bin/python -m rewardzoo.board.compare $OUT/tuning1000/LEADERBOARD.md $OUT/tuning2000/LEADERBOARD.md --out $OUT/verdicts_twice.md
date -u +"done %FT%TZ"
