"""Train the small byte-level models shipped in ``spectheory/decoder/weights/``.

Models (all on the Python standard library's ``.py`` sources, see
``spectheory.decoder.corpus``):

* ``target``      GPT, 4 layers, n_embd 224, 4 heads, context 256 (~2.5M parameters);
* ``draft-small`` GPT, 2 layers, n_embd 96, 4 heads (< 1/8 of the target's parameters);
* ``draft-tiny``  GPT, 1 layer, n_embd 32, 2 heads;
* ``draft-ngram`` order-2 byte n-gram (next byte given the last byte) from counts,
  additively smoothed (see ``spectheory.decoder.ngram_model``).

Training: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), linear warm-up then
cosine decay to 10 % of the peak learning rate, gradient clipping at 1, random
windows drawn with a seeded ``torch.Generator``; the initialisation is seeded inside
``torch.random.fork_rng`` so no global random state leaks. Weights are saved as fp16
``state_dict`` files (``<name>.pt``) with a JSON metadata file (``<name>.json``). The
held-out loss (nats/byte) is measured with the saved fp16 weights cast back to
float32, on fixed evenly spaced held-out windows (``corpus.heldout_windows``), each
byte predicted from the bytes before it inside its window.

Each draft's metadata also records its average acceptance against the target on the
same held-out windows: the mean over positions of ``sum_x min(target(x), draft(x))``
at temperature 1, with a standard error computed across windows (positions inside a
window are correlated, windows are far apart). ``--model acceptance`` recomputes it
for every draft present (run it after retraining the target).

Examples
--------
    python simulations/train_models.py --model target --steps 1400
    python simulations/train_models.py --model draft-small --steps 1400
    python simulations/train_models.py --model draft-ngram
    python simulations/train_models.py --model acceptance
    python simulations/train_models.py --model target --steps 5 --out /tmp/w   # smoke test
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
import torch.nn.functional as F
from tqdm import tqdm

from spectheory.decoder import corpus
from spectheory.decoder.model import GPT, GPTConfig

DEFAULT_OUT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spectheory", "decoder", "weights"
)

ARCHS = {
    "target": dict(n_layer=4, n_head=4, n_embd=224, block_size=256),
    "draft-small": dict(n_layer=2, n_head=4, n_embd=96, block_size=256),
    "draft-tiny": dict(n_layer=1, n_head=2, n_embd=32, block_size=256),
}
# default optimisation settings per model; CLI flags override them
TRAIN_DEFAULTS = {
    "target": dict(steps=1400, batch_size=8, seq_len=256, lr=3e-3, warmup=50),
    "draft-small": dict(steps=1400, batch_size=8, seq_len=256, lr=3e-3, warmup=50),
    "draft-tiny": dict(steps=1500, batch_size=16, seq_len=256, lr=5e-3, warmup=50),
}
NGRAM_ORDER, NGRAM_ALPHA = 2, 0.5
EVAL_WINDOWS, EVAL_LEN = 256, 256  # held-out bytes scored: 256 windows x 256 positions
DRAFTS = ("draft-small", "draft-tiny", "draft-ngram")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples\n--------\n")[1],
    )
    parser.add_argument("--model", required=True, choices=[*ARCHS, "draft-ngram", "acceptance", "all"])
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--seq-len", type=int, default=None)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval-windows", type=int, default=EVAL_WINDOWS)
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--out", default=DEFAULT_OUT)
    return parser.parse_args(argv)


# ----------------------------------------------------------------------------- evaluation
@torch.no_grad()
def batched_logprobs(model, windows, batch=32):
    """Yield float64 log-probs ``[b, L, V]`` of ``model`` on ``windows [N, L]`` in chunks."""
    for i in range(0, len(windows), batch):
        ids = torch.as_tensor(windows[i : i + batch])
        yield torch.log_softmax(model(ids).double(), dim=-1)


@torch.no_grad()
def heldout_loss(model, n_windows):
    """Mean held-out cross-entropy in nats/byte and its SE across windows."""
    windows = corpus.heldout_windows(n_windows, EVAL_LEN + 1)
    per_window = []
    for i, logp in enumerate(batched_logprobs(model, windows[:, :-1])):
        nxt = torch.as_tensor(windows[i * 32 : (i + 1) * 32, 1:])
        nll = -logp.gather(-1, nxt[..., None])[..., 0]  # [b, L]
        per_window.append(nll.mean(1))
    per_window = torch.cat(per_window).numpy()
    return float(per_window.mean()), float(per_window.std(ddof=1) / math.sqrt(len(per_window)))


@torch.no_grad()
def acceptance_vs_target(target, draft, n_windows):
    """Mean over held-out positions of ``sum_x min(target(x), draft(x))`` (T = 1), SE."""
    windows = corpus.heldout_windows(n_windows, EVAL_LEN)
    per_window = []
    for t_logp, d_logp in zip(batched_logprobs(target, windows), batched_logprobs(draft, windows)):
        accept = torch.minimum(t_logp.exp(), d_logp.exp()).sum(-1)  # [b, L]
        per_window.append(accept.mean(1))
    per_window = torch.cat(per_window).numpy()
    return float(per_window.mean()), float(per_window.std(ddof=1) / math.sqrt(len(per_window)))


# ----------------------------------------------------------------------------- training
def lr_at(step, steps, peak, warmup):
    """Linear warm-up to ``peak`` then cosine decay to ``0.1 * peak``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def make_optimizer(model, lr):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )


def train_gpt(name, args):
    settings = dict(TRAIN_DEFAULTS[name])
    for key in ("steps", "batch_size", "seq_len", "lr"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    settings["warmup"] = min(settings["warmup"], max(1, settings["steps"] // 10))
    config = GPTConfig(**ARCHS[name])
    with torch.random.fork_rng():
        torch.manual_seed(args.seed)
        model = GPT(config)
    data = torch.from_numpy(corpus.train_bytes().astype(np.int64))
    gen = torch.Generator().manual_seed(args.seed + 1)
    optimizer = make_optimizer(model, settings["lr"])
    B, L = settings["batch_size"], settings["seq_len"]
    print(f"{name}: {model.num_params():,} parameters, {settings}", flush=True)
    t0 = time.time()
    bar = tqdm(range(settings["steps"]), desc=name, mininterval=5, file=sys.stdout)
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, settings["steps"], settings["lr"], settings["warmup"])
        starts = torch.randint(0, len(data) - L - 1, (B,), generator=gen)
        batch = torch.stack([data[s : s + L + 1] for s in starts.tolist()])  # [B, L + 1]
        model.train()
        logits = model(batch[:, :-1])  # [B, L, V]
        loss = F.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        if args.eval_every and (step + 1) % args.eval_every == 0:
            model.eval()
            val, _ = heldout_loss(model, 32)
            print(
                f"\nstep {step + 1}: train {loss.item():.4f} held-out(32 windows) {val:.4f} "
                f"nats/byte, {time.time() - t0:.0f}s",
                flush=True,
            )
    train_seconds = time.time() - t0
    # save fp16, then evaluate exactly what a user loads (fp16 weights cast to float32)
    os.makedirs(args.out, exist_ok=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    path = os.path.join(args.out, f"{name}.pt")
    torch.save(state, path)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    model.eval()
    loss_mean, loss_se = heldout_loss(model, args.eval_windows)
    meta = base_metadata(name, args, path)
    meta.update(
        {
            "kind": "gpt",
            "architecture": f"byte-level GPT, {config.n_layer} layers, {config.n_head} heads, "
            f"n_embd {config.n_embd}, context {config.block_size}, pre-LayerNorm, "
            "learned positions, tied embeddings",
            "config": config.to_dict(),
            "num_params": model.num_params(),
            "training": {
                **settings,
                "optimizer": "AdamW(0.9, 0.95), wd 0.1, clip 1.0",
                "schedule": "linear warm-up, cosine to 0.1x",
                "seed": args.seed,
                "threads": args.threads,
                "train_seconds": round(train_seconds, 1),
            },
            "steps": settings["steps"],
            "heldout_loss_nats_per_byte": loss_mean,
            "heldout_loss_se": loss_se,
        }
    )
    write_metadata(args.out, name, meta)
    print(
        f"{name}: held-out loss {loss_mean:.4f} +- {loss_se:.4f} nats/byte, {train_seconds:.0f}s training",
        flush=True,
    )
    return model


def train_ngram(args):
    from spectheory.decoder.ngram_model import NGramModel

    name = "draft-ngram"
    t0 = time.time()
    model = NGramModel.from_bytes(corpus.train_bytes(), order=NGRAM_ORDER, alpha=NGRAM_ALPHA)
    path = os.path.join(args.out, f"{name}.npz")
    os.makedirs(args.out, exist_ok=True)
    model.save(path)
    model = NGramModel.load(path).eval()
    loss_mean, loss_se = heldout_loss(model, args.eval_windows)
    meta = base_metadata(name, args, path)
    meta.update(
        {
            "kind": "ngram",
            "architecture": f"order-{NGRAM_ORDER} byte n-gram (context of {NGRAM_ORDER - 1} "
            f"byte), additive smoothing alpha={NGRAM_ALPHA}, sparse counts",
            "config": {"order": NGRAM_ORDER, "alpha": NGRAM_ALPHA, "vocab_size": 256},
            "num_params": int(model.num_counts()),
            "num_params_note": "number of nonzero n-gram counts stored",
            "training": {
                "counted_bytes": int(len(corpus.train_bytes())),
                "train_seconds": round(time.time() - t0, 1),
            },
            "steps": 0,
            "heldout_loss_nats_per_byte": loss_mean,
            "heldout_loss_se": loss_se,
        }
    )
    write_metadata(args.out, name, meta)
    print(f"{name}: held-out loss {loss_mean:.4f} +- {loss_se:.4f} nats/byte", flush=True)


# ----------------------------------------------------------------------------- metadata
def base_metadata(name, args, path):
    data = corpus.load_corpus()
    return {
        "name": name,
        "weights_file": os.path.basename(path),
        "training_command": "python simulations/train_models.py " + " ".join(sys.argv[1:]),
        "corpus": {
            "description": "Python standard library .py sources (no tests, no "
            "site-packages), see spectheory.decoder.corpus",
            "sha256": data.sha256,
            "train_bytes": int(len(data.train)),
            "heldout_bytes": int(len(data.heldout)),
            "python": sys.version.split()[0],
        },
        "heldout_eval": {
            "windows": args.eval_windows,
            "positions_per_window": EVAL_LEN,
            "context": "bytes before the position inside its window",
        },
        "date": datetime.date.today().isoformat(),
        "torch_version": torch.__version__,
        "weights_dtype": "float16" if path.endswith(".pt") else "uint32 counts",
    }


def write_metadata(out, name, meta):
    with open(os.path.join(out, f"{name}.json"), "w") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.write("\n")


def load_local(name, out):
    """Load a model from ``out`` (the registry's loader, pointed at this folder)."""
    from spectheory.decoder.registry import load_model_from

    return load_model_from(out, name)


def record_acceptance(args):
    target = load_local("target", args.out)
    for name in DRAFTS:
        meta_path = os.path.join(args.out, f"{name}.json")
        if not os.path.exists(meta_path):
            continue
        draft = load_local(name, args.out)
        mean, se = acceptance_vs_target(target, draft, args.eval_windows)
        with open(meta_path) as fh:
            meta = json.load(fh)
        with open(os.path.join(args.out, "target.json")) as fh:
            target_meta = json.load(fh)
        meta["acceptance_vs_target"] = {
            "mean": mean,
            "se": se,
            "temperature": 1.0,
            "definition": "mean over held-out positions of sum_x min(target(x), draft(x)); SE across windows",
            "windows": args.eval_windows,
            "positions_per_window": EVAL_LEN,
            "target_date": target_meta["date"],
            "command": "python simulations/train_models.py --model acceptance",
        }
        write_metadata(args.out, name, meta)
        print(f"{name}: acceptance vs target {mean:.4f} +- {se:.4f}", flush=True)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    names = [*ARCHS, "draft-ngram", "acceptance"] if args.model == "all" else [args.model]
    for name in names:
        if name in ARCHS:
            train_gpt(name, args)
        elif name == "draft-ngram":
            train_ngram(args)
        else:
            record_acceptance(args)


if __name__ == "__main__":
    main()
