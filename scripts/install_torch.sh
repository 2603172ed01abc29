#!/usr/bin/env bash
# Put a torch in place before rewardzoo is installed, without ever replacing one the user has.
#   - torch already importable          -> keep it (whatever build it is)
#   - a CUDA machine (nvidia-smi works) -> the default PyPI build
#   - otherwise                         -> the CPU build torch==2.13.0+cpu (local wheel or PyTorch's
#                                          CPU index), never the multi-GB CUDA build
set -euo pipefail
PY="${1:-python}"
if "$PY" -c "import torch" 2>/dev/null; then
  echo "install_torch: keeping the installed torch $("$PY" -c 'import torch; print(torch.__version__)')"
  exit 0
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  echo "install_torch: GPU found, installing torch from PyPI"
  "$PY" -m pip install "torch>=2.4"
  exit 0
fi
echo "install_torch: no torch and no GPU, installing the CPU build torch==2.13.0+cpu"
if ! "$PY" -m pip install --retries 1 --timeout 20 "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu; then
  echo "install_torch: the CPU build was not reachable; falling back to torch==2.13.0 from PyPI" >&2
  "$PY" -m pip install "torch==2.13.0"
fi
