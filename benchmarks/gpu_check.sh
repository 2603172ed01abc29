#!/usr/bin/env bash
# The GPU check: one prepared run for a machine with an NVIDIA GPU, about 10 minutes in all.
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]          # default OUT_DIR: benchmarks/results/gpu
#
# Writes into OUT_DIR, one file per check, each starting with the command that wrote it:
#   env.txt                           versions (python, torch, CUDA, transformers, trl) and nvidia-smi
#   logprob_h{H}_t{T}_{dtype}.txt     fused vs naive log-probs + entropy at vocabulary 151,936: values,
#                                     gradients, peak memory, time (benchmarks/logprob_memory.py); the
#                                     first size also times torch.compile of the fused path
#   throughput.txt                    tokens/s and MFU of rewardzoo's GRPO step on a 0.51B-parameter
#                                     random-init model in bf16 (benchmarks/gpu_throughput.py)
#   summary.txt                       one line per check: ok, failed (exit code) or skipped
# A check that fails (e.g. the naive path running out of memory at 64k tokens, which is a finding, not
# an error) is recorded and the script goes on; without a CUDA device it records that and exits 0.
# PYTHON (default: python) is the interpreter with rewardzoo installed; each check has a time limit.
# GPU_CHECK_SMOKE=1 runs the same checks on the CPU at tiny sizes (how the test suite runs this file).
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${1:-benchmarks/results/gpu}
PY=${PYTHON:-python}
mkdir -p "$OUT"
: > "$OUT/summary.txt"

note() { echo "$*" | tee -a "$OUT/summary.txt"; }

# check NAME LIMIT_S CMD...: run CMD with a time limit, its output to OUT/NAME.txt after the command line.
check() {
  local name=$1 limit=$2
  shift 2
  echo "# command: $*" > "$OUT/$name.txt"
  echo "== $name: $*"
  local rc=0
  timeout "$limit" "$@" >> "$OUT/$name.txt" 2>&1 || rc=$?
  tail -n 4 "$OUT/$name.txt"
  if [ "$rc" -eq 0 ]; then note "$name: ok"
  elif [ "$rc" -eq 124 ]; then note "$name: failed (over the ${limit} s limit)"
  else note "$name: failed (exit $rc; see $name.txt)"
  fi
}

{
  echo "# command: bash benchmarks/gpu_check.sh $OUT"
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  "$PY" - <<'EOF'
import platform, sys
print("python", sys.version.split()[0], platform.machine())
for name in ("torch", "transformers", "accelerate", "trl", "triton"):
    try:
        module = __import__(name)
        print(name, module.__version__)
    except ImportError:
        print(name, "not installed")
import torch
print("cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "devices", torch.cuda.device_count())
if torch.cuda.is_available():
    print("device 0:", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
EOF
  if command -v nvidia-smi > /dev/null; then nvidia-smi; else echo "nvidia-smi: not found"; fi
} > "$OUT/env.txt" 2>&1 || true
cat "$OUT/env.txt"

if [ "${GPU_CHECK_SMOKE:-0}" = 1 ]; then
  DEVICE=cpu HIDDEN=(16 32) TOKENS=(64 256) VOCAB=(--vocab 300) COMPILE=() TINY=(--tiny --steps 1)
elif "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  DEVICE=cuda HIDDEN=(2048 4096) TOKENS=(16384 65536) VOCAB=() COMPILE=(--compile) TINY=()
else
  note "skipped: no CUDA device visible to torch (see env.txt)"
  exit 0
fi

# Fused vs naive log-probs at realistic sizes (each path in its own process).
LOGPROBS=("$PY" benchmarks/logprob_memory.py --device "$DEVICE" "${VOCAB[@]}")
check "logprob_h${HIDDEN[0]}_t${TOKENS[0]}_float32" 200 "${LOGPROBS[@]}" --hidden "${HIDDEN[0]}" --tokens "${TOKENS[0]}" \
  "${COMPILE[@]}"
check "logprob_h${HIDDEN[1]}_t${TOKENS[0]}_bfloat16" 100 "${LOGPROBS[@]}" --hidden "${HIDDEN[1]}" --tokens "${TOKENS[0]}" \
  --dtype bfloat16
check "logprob_h${HIDDEN[1]}_t${TOKENS[1]}_float32" 150 "${LOGPROBS[@]}" --hidden "${HIDDEN[1]}" --tokens "${TOKENS[1]}"

# Training throughput and MFU of a GRPO step through rewardzoo's Trainer.
check throughput 150 "$PY" benchmarks/gpu_throughput.py --device "$DEVICE" "${TINY[@]}"

note "done: results in $OUT"
