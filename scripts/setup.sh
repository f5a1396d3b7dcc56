#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: installs spectheory with every extra.
# - If no torch is importable, installs the CPU build torch==2.13.0 (never an unpinned torch,
#   which would pull a multi-GB CUDA build).
# - A torch that is already installed (for example a user's CUDA build) is kept: the
#   `decoder` extra asks for torch>=2.4, which it already satisfies.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
    "$PY" -m pip install -q "torch==2.13.0"
fi
"$PY" -m pip install -q -e ".[all]"
