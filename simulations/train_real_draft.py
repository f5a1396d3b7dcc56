"""Distil a 2-layer draft of SmolLM2-135M on the target's own samples, one run per objective of the draft-objective lab, at equal budgets (issue 38, item 2).

On-policy data, made from the target itself: each of the English prompts written below (cut to
their first ``PROMPT_TOKENS`` tokens) is continued ``--per-prompt`` times by the target at
temperature 1 for ``--new-tokens`` tokens (seeded); the target's normed final hidden states along
these paths are kept, so its laws ``p = softmax(head(h))`` are exact and cost one head product
per batch. Held-out: the same with the held-out prompts (another seed). The draft
(:func:`spectheory.decoder.real_drafts_distilled.distilled_model`: the target's first
``--layers`` layers and final norm, a rank-``--rank`` update of every linear trained with the
norms; embedding and head shared and frozen) starts as the early exit ``exit<layers>`` and is
trained with each objective of ``--objectives`` (``kl``, ``tv``, ``tokens_per_call`` at
``--gamma``: :func:`~spectheory.decoder.real_drafts_distilled.distill_loss`) for ``--steps``
AdamW steps of ``--batch-size`` paths (lr ``--lr``, cosine to 0.1x, clip 1; the same seed, data
order and budget for every objective). Every ``--eval-every`` steps the held-out acceptance
``alpha = 1 - mean TV(p, q)`` over the held-out generated positions and the held-out tokens per
target call at ``--gamma`` (exact along the held-out target paths:
:func:`~spectheory.decoder.real_drafts_distilled.expected_calls`) are recorded with the seconds
of training so far: the acceptance-vs-training curve. The objective with the most held-out tokens
per call at the end becomes the default draft ``smollm2-135m:distilled``.

Writes ``<weights>/smollm2-135m-distilled-<objective>.pt`` (float16 factors and gains, ~0.7 MB)
and ``<weights>/smollm2-135m-distilled.json`` (``--weights``, default the package's
``spectheory/decoder/real_weights``; with ``--quick`` a temporary folder: the shipped weights are
never overwritten by a smoke run), and ``results/train_real_draft.json`` (curves, winner). One
thread (``torch.set_num_threads(1)``): the full run takes about 10 minutes of one core. Not part of
the main job (the weights are shipped); ``simulations/real_drafts.py`` reads them.

Usage: python simulations/train_real_draft.py [--quick] [--out DIR] [--weights DIR] [--objectives kl,tv]
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch

from spectheory.decoder.real_drafts_distilled import OBJECTIVES

TARGET = "smollm2-135m"
PROMPT_TOKENS = 8

TRAIN_PROMPTS = (
    "The history of the city of Rome begins with a small settlement",
    "Here is a simple recipe for fresh bread that anyone can bake at home",
    "The most important thing to remember when learning a new language is",
    "Photosynthesis is the process by which green plants turn sunlight into",
    "Dear hiring manager, I am writing to apply for the position of",
    "In the morning the village market fills with farmers selling",
    "The main causes of the First World War were a mix of",
    "To install the package, open a terminal and type the following",
    "A good night's sleep helps the body and the mind because",
    "The ocean covers more than seventy percent of the surface of the Earth",
    "Once upon a time, in a kingdom far away, there lived a young",
    "The stock market fell sharply on Monday after reports that",
    "Water boils at one hundred degrees Celsius at sea level, but at",
    "My favourite book when I was a child was a story about",
    "The three branches of the government of the United States are",
    "Regular exercise has many benefits for your health, such as",
    "The museum's new exhibition brings together paintings from",
    "Climate change is affecting farmers around the world, who now",
    "Python is a programming language that is popular because",
    "The train left the station just after midnight, and the",
    "Honey bees live in colonies in which each bee has a role",
    "When you visit Japan in spring, you can see the cherry",
    "The human heart pumps blood through the body by",
    "Our team meeting next week will cover the following topics:",
    "The first step in writing a good essay is to choose",
    "Mount Everest, the highest mountain in the world, was first",
    "Scientists have discovered a new species of frog in the",
    "The recipe calls for two cups of flour, one egg and",
    "Electric cars are becoming more common because their batteries",
    "The library will be closed on Friday for the holiday, so",
    "A healthy breakfast might include fruit, yoghurt and",
    "The Industrial Revolution changed the way people lived and worked",
)
HELDOUT_PROMPTS = (
    "The river flows through the valley and past the old mill where",
    "Learning to play the piano takes patience, because the hands",
    "The company announced today that its profits for the year",
    "Vitamins are nutrients that the body needs in small amounts to",
    "On the first day of school, the children were excited to",
    "The solar system has eight planets, and the largest of them is",
    "If you want to grow tomatoes in your garden, you should",
    "The ancient Egyptians built the pyramids as tombs for",
)


def parse_args(argv=None):
    from spectheory.app.decoder_scripts import decoder_script_parser

    ap = decoder_script_parser(__doc__, threads=1)
    ap.add_argument("--objectives", default=",".join(OBJECTIVES))
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--gamma", type=int, default=4, help="draft length of tokens_per_call and of the curve")
    ap.add_argument("--steps", type=int, default=None, help="default 60 (--quick: 2)")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--per-prompt", type=int, default=None, help="target samples per training prompt (2)")
    ap.add_argument("--new-tokens", type=int, default=None, help="tokens per sample (96; --quick: 8)")
    ap.add_argument("--eval-every", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--weights", default=None, help="weights folder (default: the package's; --quick: a temp dir)"
    )
    args = ap.parse_args(argv)
    q = args.quick
    args.steps = args.steps or (2 if q else 60)
    args.per_prompt = args.per_prompt or 2
    args.new_tokens = args.new_tokens or (8 if q else 96)
    args.eval_every = min(args.eval_every, args.steps)
    args.objectives = [o for o in args.objectives.split(",") if o]
    bad = set(args.objectives) - set(OBJECTIVES)
    if bad:
        ap.error(f"--objectives: unknown {sorted(bad)}; valid: {', '.join(OBJECTIVES)}")
    return args


def prompt_ids(tok, texts):
    """The first ``PROMPT_TOKENS`` token ids of each text, int64 ``[P, PROMPT_TOKENS]``."""
    ids = [tok(t)["input_ids"][:PROMPT_TOKENS] for t in texts]
    if min(map(len, ids)) < PROMPT_TOKENS:
        raise ValueError(f"every prompt needs at least {PROMPT_TOKENS} tokens")
    return np.array(ids, dtype=np.int64)


@torch.inference_mode()
def pool(target, texts, per_prompt, new_tokens, seed):
    """Target paths ``[N, P + T]`` at temperature 1 and the target's normed final hidden states
    before each generated token, float32 ``[N, T, d]``."""
    from spectheory._progress import progress_range
    from spectheory.validation.path_stats import sample_paths

    prompts = np.repeat(prompt_ids(target.tokenizer, texts), per_prompt, axis=0)
    paths = sample_paths(target, prompts, new_tokens, seed, batch_size=32)
    hidden, chunk = [], 8
    for lo in progress_range(-(-len(paths) // chunk), "target hidden states"):
        ids = torch.as_tensor(paths[lo * chunk : (lo + 1) * chunk, :-1])
        h = target.model.model(input_ids=ids).last_hidden_state[:, PROMPT_TOKENS - 1 :]
        hidden.append(h.float())
    return torch.as_tensor(paths), torch.cat(hidden)


def draft_logq(draft, paths):
    """The draft's log-laws before each generated token, ``[B, T, V]``."""
    logits = draft(input_ids=paths[:, :-1]).logits[:, PROMPT_TOKENS - 1 :]
    return torch.log_softmax(logits.float(), -1)


@torch.inference_mode()
def heldout(draft, head, paths, hidden, gamma):
    """Held-out ``alpha = 1 - mean TV(p, q)`` over the generated positions and tokens per target
    call at ``gamma`` (exact along the held-out target paths), one path at a time."""
    from spectheory.decoder.real_drafts_distilled import expected_calls

    tv, rej = [], []
    for i in range(len(paths)):
        logp = torch.log_softmax(head(hidden[i : i + 1]), -1)
        logq = draft_logq(draft, paths[i : i + 1])
        tv.append(0.5 * (logp.exp() - logq.exp()).abs().sum(-1))
        x = paths[i : i + 1, PROMPT_TOKENS:, None]
        rej.append((1 - torch.exp(logq.gather(-1, x) - logp.gather(-1, x))[..., 0]).clamp(min=0))
    calls = expected_calls(torch.cat(rej).double(), gamma)
    return float(1 - torch.cat(tv).mean()), float(paths.shape[1] - PROMPT_TOKENS) * len(paths) / float(
        calls.sum()
    )


def train(args, objective, hf, data):
    """One run: the curve, the trained draft, the seconds of training."""
    from spectheory._progress import progress_range
    from spectheory.decoder.real_drafts_distilled import distill_loss, distilled_model

    paths, hidden = data["train"]
    hpaths, hhidden = data["heldout"]
    head = hf.lm_head
    draft = distilled_model(hf, args.layers, rank=args.rank, seed=args.seed)
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps))
    )
    gen = torch.Generator().manual_seed(args.seed)  # the same batches for every objective

    def point(step, seconds):
        draft.eval()
        alpha, tpc = heldout(draft, head, hpaths, hhidden, args.gamma)
        draft.train()
        return {"step": step, "seconds": seconds, "alpha": alpha, "tokens_per_call": tpc}

    curve = [point(0, 0.0)]
    seconds = 0.0
    draft.train()
    for step in (s + 1 for s in progress_range(args.steps, f"distil ({objective})")):
        t0 = time.perf_counter()
        rows = torch.randint(0, len(paths), (args.batch_size,), generator=gen)
        with torch.no_grad():
            logp = torch.log_softmax(head(hidden[rows]), -1)
        logq = draft_logq(draft, paths[rows])
        tokens = paths[rows, PROMPT_TOKENS:]
        mask = torch.ones_like(tokens, dtype=torch.bool)
        loss = distill_loss(objective, logp, logq, tokens, mask, args.gamma)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        seconds += time.perf_counter() - t0
        if step % args.eval_every == 0 or step == args.steps:
            curve.append(point(step, seconds))
            c = curve[-1]
            print(
                f"{objective} step {step}: {seconds:.0f} s, held-out alpha {c['alpha']:.4f}, "
                f"tokens/call {c['tokens_per_call']:.4f}",
                flush=True,
            )
    return curve, draft, params, seconds


def main(argv=None):
    from spectheory.app.decoder_scripts import write_result
    from spectheory.decoder import load_model, pretrained
    from spectheory.decoder.real_drafts_distilled import WEIGHTS_DIR, trainable_state

    args = parse_args(argv)
    if not pretrained.is_available(TARGET):
        print(f"train_real_draft: skipped: {pretrained.INSTALL_HINT}")
        return 0
    torch.set_num_threads(args.threads)
    weights = args.weights or (tempfile.mkdtemp(prefix="real_draft_") if args.quick else WEIGHTS_DIR)
    target = load_model(TARGET)
    hf = target.model.requires_grad_(False)  # the shared embedding and head are frozen
    t0 = time.perf_counter()
    train_texts = TRAIN_PROMPTS[:2] if args.quick else TRAIN_PROMPTS
    held_texts = HELDOUT_PROMPTS[:2] if args.quick else HELDOUT_PROMPTS
    data = {
        "train": pool(target, train_texts, args.per_prompt, args.new_tokens, args.seed),
        "heldout": pool(target, held_texts, 1, args.new_tokens, args.seed + 1),
    }
    data_seconds = time.perf_counter() - t0
    print(f"data: {len(data['train'][0])} + {len(data['heldout'][0])} target paths in {data_seconds:.0f} s")
    os.makedirs(weights, exist_ok=True)
    index_path = os.path.join(weights, f"{TARGET}-distilled.json")
    index = json.load(open(index_path)) if os.path.exists(index_path) else {"default": None, "runs": {}}
    runs = {}
    for objective in args.objectives:
        curve, draft, params, seconds = train(args, objective, hf, data)
        weights_file = f"{TARGET}-distilled-{objective}.pt"
        torch.save(trainable_state(draft), os.path.join(weights, weights_file))
        runs[objective] = index["runs"][objective] = {
            "target": TARGET,
            "n_layers": args.layers,
            "rank": args.rank,
            "objective": objective,
            "gamma": args.gamma,
            "weights_file": weights_file,
            "trained_parameters": sum(p.numel() for p in params),
            "steps": args.steps,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "seed": args.seed,
            "pool": {
                "prompts": len(train_texts),
                "per_prompt": args.per_prompt,
                "new_tokens": args.new_tokens,
            },
            "heldout": {"prompts": len(held_texts), "new_tokens": args.new_tokens},
            "data_seconds": data_seconds,
            "train_seconds": seconds,
            "curve": curve,
            "heldout_alpha": curve[-1]["alpha"],
            "heldout_tokens_per_call": curve[-1]["tokens_per_call"],
            "torch": torch.__version__,
            "date": datetime.date.today().isoformat(),
            "license": "Apache-2.0 (derived from SmolLM2-135M-Instruct; see NOTICE)",
        }
    winner = max(runs, key=lambda o: runs[o]["heldout_tokens_per_call"])
    index["default"] = winner
    index["command"] = "python simulations/train_real_draft.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    with open(index_path, "w") as fh:
        json.dump(index, fh, indent=1)
    start = runs[winner]["curve"][0]
    print(
        f"winner {winner}: held-out tokens/call {start['tokens_per_call']:.4f} (exit{args.layers}) -> "
        f"{runs[winner]['heldout_tokens_per_call']:.4f}; weights in {weights}"
    )
    heads = [
        {
            "name": f"real LLM distillation: held-out tokens per call at gamma = {args.gamma}, {o}",
            "value": r["heldout_tokens_per_call"],
            "note": f"exit{args.layers} start {r['curve'][0]['tokens_per_call']:.4f}; alpha "
            f"{r['curve'][0]['alpha']:.4f} -> {r['heldout_alpha']:.4f}; {args.steps} steps, {r['train_seconds']:.0f} s",
        }
        for o, r in runs.items()
    ]
    data_out = {"target": TARGET, "winner": winner, "weights_dir": os.path.relpath(weights), "runs": runs}
    path = write_result(args.out, "train_real_draft", data_out, heads, device="cpu")
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
