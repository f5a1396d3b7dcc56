"""Distil a shipped draft (draft-tiny or draft-small) on target samples with another objective (issue 26, item 3; DistillSpec style).

On-policy data: ``--pool`` sequences of the shipped target (temperature 1, seeded), each a
32-byte prompt from the training split of the corpus followed by 96 sampled bytes; the
target's next-byte laws along them are computed once. Starting from the shipped ``--init``
draft (``draft-tiny``: 1 layer, n_embd 32; ``draft-small``: 2 layers, n_embd 96; the same
architecture, so the same cost per call), the draft is fine-tuned on the sampled
positions with one objective, the same budget for each (``--steps`` AdamW steps of
``--batch-size`` sequences, lr 3e-4, cosine to 0.1x, clip 1, seeded):

* ``fkl``: forward KL(p || q) against the target's laws (soft labels);
* ``tv``: total variation 1/2 sum_x |p - q|, the per-position rejection probability, whose sum
  along target paths is Theorem 1;
* ``ms4``: the multi-step objective at gamma = 4, ``1 - (1/4) mean_n sum_{k=1..4} prod_{j<k}
  (1 - TV_{n+j})`` over the windows of 4 consecutive sampled positions: one minus the expected
  share of a 4-draft round accepted when its checks meet the acceptances ``1 - TV`` of the
  target-path positions in turn (a surrogate for tokens per call in the spirit of the
  end-to-end multi-step TV loss; along real rounds the states after an acceptance follow
  ``min(p, q)``, not ``p``).

Weights are saved as fp16 ``state_dict`` files ``<init>-<objective>.pt`` with a JSON
metadata file in ``spectheory/objectives/weights/`` (``--out``), with the held-out acceptance
vs the target as for the shipped drafts. Not part of the main job: the cached weights are
read by ``simulations/distilled_drafts.py``.

Examples
--------
    python simulations/train_distilled.py --objective tv --pool-cache /tmp/pool.npz
    python simulations/train_distilled.py --objective fkl --pool-cache /tmp/pool.npz
    python simulations/train_distilled.py --objective ms4 --init draft-small --pool-cache /tmp/pool.npz
    python simulations/train_distilled.py --objective tv --steps 3 --pool 8 --out /tmp/w   # smoke test
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time

import numpy as np
import torch

from spectheory.decoder import corpus, load_model
from spectheory.validation import sample_paths

DEFAULT_OUT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spectheory", "objectives", "weights"
)
PROMPT, GENERATED = 32, 96
EVAL_WINDOWS, EVAL_LEN = 256, 256


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples\n--------\n")[1],
    )
    ap.add_argument("--objective", required=True, choices=["fkl", "tv", "ms4"])
    ap.add_argument(
        "--init",
        default="draft-tiny",
        choices=["draft-tiny", "draft-small"],
        help="the shipped draft to start from",
    )
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--pool", type=int, default=1536)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-windows", type=int, default=EVAL_WINDOWS)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--pool-cache", default=None, help="an .npz reused by later runs (same pool, seed)")
    return ap.parse_args(argv)


def target_pool(target, n, seed):
    """``n`` target samples ``[n, PROMPT + GENERATED]`` and the target's log-laws along them
    ``[n, GENERATED, 256]`` (float32): the law of byte ``PROMPT + j`` given the bytes before it."""
    data = corpus.train_bytes()
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(data) - PROMPT, size=n)
    prompts = np.stack([data[s : s + PROMPT] for s in starts]).astype(np.int64)
    paths = sample_paths(target, prompts, GENERATED, seed, batch_size=64)
    logp = []
    with torch.inference_mode():
        for lo in range(0, n, 64):
            ids = torch.as_tensor(paths[lo : lo + 64])
            logp.append(torch.log_softmax(target(ids[:, :-1]).double(), -1)[:, PROMPT - 1 :].float())
    return paths, torch.cat(logp)


MS_GAMMA = 4


def loss_fn(objective, logp, logq):
    """The objective between target laws ``exp(logp)`` and the draft's, ``[..., positions, V]``:
    the mean over positions for ``fkl`` and ``tv``, over windows of ``MS_GAMMA`` positions for ``ms4``."""
    if objective == "fkl":
        return (logp.exp() * (logp - logq)).sum(-1).mean()
    tv = 0.5 * (logp.exp() - logq.exp()).abs().sum(-1)
    if objective == "tv":
        return tv.mean()
    windows = (1.0 - tv).unfold(-1, MS_GAMMA, 1)  # [..., positions - MS_GAMMA + 1, MS_GAMMA]
    return 1.0 - torch.cumprod(windows, -1).sum(-1).mean() / MS_GAMMA


@torch.no_grad()
def heldout_acceptance(target, draft, n_windows):
    """Mean over held-out positions of ``sum_x min(target(x), draft(x))`` (T = 1), SE across windows."""
    windows = corpus.heldout_windows(n_windows, EVAL_LEN)
    chunks = []
    for lo in range(0, len(windows), 32):
        ids = torch.as_tensor(windows[lo : lo + 32])
        p = torch.softmax(target(ids).double(), -1)
        q = torch.softmax(draft(ids).double(), -1)
        chunks.append(torch.minimum(p, q).sum(-1).mean(1))
    per = torch.cat(chunks).numpy()
    return float(per.mean()), float(per.std(ddof=1) / math.sqrt(len(per)))


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    target = load_model("target")
    draft = load_model(args.init)
    t0 = time.time()
    if args.pool_cache and os.path.exists(args.pool_cache):
        with np.load(args.pool_cache) as z:
            paths, logp = z["paths"], torch.from_numpy(z["logp"].astype(np.float32))
        if len(paths) != args.pool:
            raise ValueError(f"--pool-cache: holds {len(paths)} sequences, not --pool {args.pool}")
    else:
        paths, logp = target_pool(target, args.pool, args.seed)
        if args.pool_cache:
            np.savez(args.pool_cache, paths=paths, logp=logp.numpy().astype(np.float16))
    pool_seconds = time.time() - t0
    ids = torch.as_tensor(paths)
    decay = [p for p in draft.parameters() if p.dim() >= 2]
    no_decay = [p for p in draft.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
    )
    gen = torch.Generator().manual_seed(args.seed + 1)
    t1 = time.time()
    for step in range(args.steps):
        lr = args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / max(1, args.steps))))
        for g in opt.param_groups:
            g["lr"] = lr
        rows = torch.randint(0, len(ids), (args.batch_size,), generator=gen)
        draft.train()
        logq = torch.log_softmax(draft(ids[rows, :-1])[:, PROMPT - 1 :], -1)
        loss = loss_fn(args.objective, logp[rows], logq)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        if (step + 1) % 100 == 0:
            print(f"step {step + 1}: {args.objective} {loss.item():.4f}, {time.time() - t1:.0f}s", flush=True)
    train_seconds = time.time() - t1
    name = f"{args.init}-{args.objective}"
    os.makedirs(args.out, exist_ok=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in draft.state_dict().items()}
    torch.save(state, os.path.join(args.out, f"{name}.pt"))
    draft.load_state_dict({k: v.float() for k, v in state.items()})
    draft.eval()
    acc, acc_se = heldout_acceptance(target, draft, args.eval_windows)
    shipped = json.load(open(os.path.join(os.path.dirname(corpus.__file__), "weights", f"{args.init}.json")))
    meta = {
        "name": name,
        "kind": "gpt",
        "weights_file": f"{name}.pt",
        "weights_dtype": "float16",
        "config": shipped["config"],
        "architecture": shipped["architecture"],
        "num_params": sum(p.numel() for p in draft.parameters()),
        "initialised_from": f"{args.init} (shipped)",
        "training_command": "python simulations/train_distilled.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "training": {
            "objective": args.objective,
            "data": f"{args.pool} target samples (T = 1): {PROMPT}-byte training-split prompts + {GENERATED} bytes",
            "steps": args.steps,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "optimizer": "AdamW(0.9, 0.95), wd 0.1, clip 1.0",
            "schedule": "cosine to 0.1x",
            "seed": args.seed,
            "threads": 1,
            "pool_seconds": round(pool_seconds, 1),
            "train_seconds": round(train_seconds, 1),
        },
        "acceptance_vs_target": {
            "mean": acc,
            "se": acc_se,
            "temperature": 1.0,
            "definition": "mean over held-out positions of sum_x min(target(x), draft(x)); SE across windows",
            "windows": args.eval_windows,
            "positions_per_window": EVAL_LEN,
        },
        "date": datetime.date.today().isoformat(),
        "torch_version": torch.__version__,
    }
    with open(os.path.join(args.out, f"{name}.json"), "w") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.write("\n")
    print(
        f"{name}: held-out acceptance {acc:.4f} ± {acc_se:.4f} (shipped {args.init} "
        f"{shipped['acceptance_vs_target']['mean']:.4f}); pool {pool_seconds:.0f}s, training {train_seconds:.0f}s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
