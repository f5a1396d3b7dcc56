"""Train the Medusa heads of the shipped target (``spectheory/decoder/weights/medusa-heads.*``).

Head ``k`` (1-based, ``K = 4`` heads) is ``h + SiLU(W_k h + b_k)`` on the frozen target's
last hidden state ``h_t`` (its ``ln_f`` output), followed by the target's own tied LM
head, trained by cross-entropy on ``x_{t+1+k}`` (see :mod:`spectheory.decoder.medusa`).
The target is frozen, so its hidden states on random training windows are computed once
and the heads are fitted on them (AdamW, cosine learning rate, seeded). Held-out: top-1
and top-5 accuracy per head and the per-rank accuracy (rank 0..9) used to choose the
sparse tree, on the same evenly spaced held-out windows as ``train_models.py``.

Not part of ``spectheory reproduce`` (the weights are shipped): a few minutes of CPU.

    python simulations/train_medusa.py                 # writes the shipped weights
    python simulations/train_medusa.py --quick --out /tmp/w
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from spectheory.decoder import corpus
from spectheory.decoder.medusa import HEADS_NAME, MedusaHeads
from spectheory.decoder.registry import WEIGHTS_DIR, load_model

RANKS = 10


@torch.inference_mode()
def hidden_states(target, windows, batch=16):
    """Final hidden states ``[N, L, C]`` of the target on ``windows [N, L]``."""
    out = []
    for i in tqdm(range(0, len(windows), batch), desc="target hidden states", leave=False):
        _, h = target(torch.as_tensor(windows[i : i + batch]), return_hidden=True)
        out.append(h.float())
    return torch.cat(out)


def head_targets(windows, L, K):
    """Token ``x_{t+1+k}`` for head ``k = 1..K`` at positions ``t < L``: ``[N, L, K]``."""
    w = torch.as_tensor(windows)
    return torch.stack([w[:, 1 + k : 1 + k + L] for k in range(1, K + 1)], -1)


def evaluate(heads, emb, h, y, batch=8192):
    """Per head: top-1, top-5 and per-rank accuracy ``[K, RANKS]``, with SEs across windows."""
    N = h.shape[0]
    hits = []
    with torch.inference_mode():
        for i in range(N):
            logits = heads(h[i], emb)  # [L, K, V]
            top = logits.topk(RANKS, -1).indices  # [L, K, RANKS]
            hits.append((top == y[i][..., None]).float().mean(0))  # [K, RANKS] per window
    hits = torch.stack(hits).numpy()  # [N, K, RANKS]
    rank = hits.mean(0)
    top1, top5 = hits[..., 0], hits[..., :5].sum(-1)
    se = lambda a: (a.std(0, ddof=1) / np.sqrt(N)).tolist()  # noqa: E731
    return {
        "top1": top1.mean(0).tolist(),
        "top1_se": se(top1),
        "top5": top5.mean(0).tolist(),
        "top5_se": se(top5),
        "rank_accuracy": rank.tolist(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--windows", type=int, default=192, help="training windows of 256 bytes")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=4096, help="positions per step")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--eval-windows", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=WEIGHTS_DIR)
    args = ap.parse_args(argv)
    if args.quick:
        args.windows, args.steps, args.eval_windows = 8, 5, 4
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    target = load_model("target")
    for p in target.parameters():
        p.requires_grad_(False)
    K, L = args.heads, 256 - args.heads - 1
    gen = torch.Generator().manual_seed(args.seed)
    data = corpus.train_bytes()
    starts = torch.randint(0, len(data) - 257, (args.windows,), generator=gen).numpy()
    train = np.stack([data[s : s + 256] for s in starts]).astype(np.int64)
    h_train = hidden_states(target, train[:, :L])
    y_train = head_targets(train, L, K)
    held = corpus.heldout_windows(args.eval_windows, 256)
    h_held, y_held = hidden_states(target, held[:, :L]), head_targets(held, L, K)
    emb = target.wte.weight.detach()
    with torch.random.fork_rng():
        torch.manual_seed(args.seed)
        heads = MedusaHeads(K, target.config.n_embd)
    opt = torch.optim.AdamW(heads.parameters(), lr=args.lr, weight_decay=0.0)
    flat_h, flat_y = h_train.reshape(-1, h_train.shape[-1]), y_train.reshape(-1, K)
    for step in tqdm(range(args.steps), desc="medusa heads"):
        lr = args.lr * 0.5 * (1 + np.cos(np.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, len(flat_h), (args.batch,), generator=gen)
        logits = heads(flat_h[idx], emb)  # [b, K, V]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), flat_y[idx].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    state = {k: v.detach().half() for k, v in heads.state_dict().items()}
    path = os.path.join(args.out, f"{HEADS_NAME}.pt")
    torch.save(state, path)
    heads.load_state_dict({k: v.float() for k, v in state.items()})
    ev = evaluate(heads, emb, h_held, y_held)
    base = evaluate(MedusaHeads(K, target.config.n_embd), emb, h_held, y_held)  # W = 0: LM head only
    meta = {
        "name": HEADS_NAME,
        "kind": "medusa-heads",
        "n_heads": K,
        "n_embd": target.config.n_embd,
        "architecture": "head k: h + SiLU(W_k h + b_k) on the target's ln_f output, then the target's "
        "tied LM head; predicts x_{t+1+k}",
        "num_params": int(sum(p.numel() for p in heads.parameters())),
        "weights_file": os.path.basename(path),
        "weights_dtype": "float16",
        "training_command": "python simulations/train_medusa.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "training": {
            "windows": args.windows,
            "positions": int(flat_h.shape[0]),
            "steps": args.steps,
            "batch": args.batch,
            "lr": args.lr,
            "seed": args.seed,
            "final_loss": loss.item(),
            "seconds": round(time.time() - t0, 1),
        },
        "heldout": {"windows": args.eval_windows, "positions_per_window": L, **ev},
        "heldout_untrained_heads": {
            "top1": base["top1"],
            "top5": base["top5"],
            "note": "W = 0: every head is the LM head (the next token's law)",
        },
        "corpus_sha256": corpus.corpus_sha256(),
        "date": datetime.date.today().isoformat(),
        "torch_version": torch.__version__,
    }
    with open(os.path.join(args.out, f"{HEADS_NAME}.json"), "w") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.write("\n")
    print(json.dumps({k: meta["heldout"][k] for k in ("top1", "top5")}, indent=1))
    return meta


if __name__ == "__main__":
    main()
