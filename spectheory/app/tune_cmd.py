"""``spectheory tune``: which gamma, tree or policy to run for two models on this device.

Models are shipped names (``target``, ``draft-small``, ...) or ``hf:PATH`` (a local Hugging Face
model folder through :class:`~spectheory.decoder.hf.HFCausalLM`). Prompts come from a text file
(one prompt per line, tokenized by the folder's tokenizer for ``hf:`` models when it has one,
as UTF-8 bytes otherwise; cut to the shortest prompt, at most ``--prompt-len`` tokens) or, by
default, from held-out windows of the built-in corpus. The work is
:func:`spectheory.tuning.tuner.tune`; ``--verify`` runs the decoder on the top
configurations (:meth:`~spectheory.tuning.tuner.TuneResult.verify`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import cli_args as A

__all__ = ["add_tune_args", "run_tune", "parse_trees", "parse_policies", "load_named_model", "read_prompts"]


def parse_trees(text: str) -> list[tuple[int, ...]]:
    """``"2x1x1,2x2x1"`` -> ``[(2, 1, 1), (2, 2, 1)]``; ``"none"`` -> ``[]``.

    Examples
    --------
    >>> parse_trees("2x2,3")
    [(2, 2), (3,)]
    """
    if text.strip().lower() in ("", "none"):
        return []
    out = []
    for part in text.split(","):
        try:
            shape = tuple(int(x) for x in part.strip().lower().split("x"))
        except ValueError:
            shape = ()
        if not shape or min(shape) < 1:
            raise argparse.ArgumentTypeError(f"expected trees like 2x2x1 (children per depth), got {part!r}")
        out.append(shape)
    return out


def parse_policies(text: str) -> list[tuple[str, float | None]]:
    """``"confidence:0.4,entropy:2,hf"`` -> ``[("confidence", 0.4), ("entropy", 2.0), ("hf", None)]``.

    Examples
    --------
    >>> parse_policies("confidence:0.3,hf")
    [('confidence', 0.3), ('hf', None)]
    """
    if text.strip().lower() in ("", "none"):
        return []
    out: list[tuple[str, float | None]] = []
    for part in text.split(","):
        name, _, value = part.strip().lower().partition(":")
        try:
            number = float(value) if value else None
        except ValueError:
            number = -1.0
        ok = (name in ("confidence", "entropy") and number is not None and number >= 0) or (
            name == "hf" and number is None
        )
        if not ok:
            raise argparse.ArgumentTypeError(
                f"expected policies like confidence:0.4, entropy:2.0 or hf, got {part!r}"
            )
        out.append((name, number))
    return out


def _policies(spec: list[tuple[str, float | None]], depth: int) -> list[Any]:
    from ..stopping import ConfidenceThreshold, EntropyRule, HFSchedule

    out: list[Any] = []
    for name, value in spec:
        if name == "confidence":
            out.append(ConfidenceThreshold(float(value or 0.0), max_depth=depth))
        elif name == "entropy":
            out.append(EntropyRule(float(value or 0.0), max_depth=depth))
        else:
            out.append(HFSchedule(min(5, depth), max_depth=depth))
    return out


def load_named_model(name: str, device: str) -> Any:
    """A shipped model by name or ``hf:PATH`` (a local Hugging Face folder)."""
    from ..decoder import list_models, load_model

    if name.startswith("hf:"):
        from ..decoder.hf import HFCausalLM

        return HFCausalLM.from_pretrained(name[3:], device=device).eval()
    if name not in list_models():
        raise ValueError(f"model {name!r}: not a shipped model ({', '.join(list_models())}) nor hf:PATH")
    return load_model(name, device=device)


def read_prompts(path: str, model_name: str, vocab: int, prompt_len: int) -> Any:
    """Equal-length token prompts ``[P, L]`` from a text file (module docstring)."""
    import numpy as np

    with open(path, encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh if line.strip()]
    if not lines:
        raise ValueError(f"--prompts {path}: no non-empty lines")
    import os

    encode = None
    folder = model_name[3:] if model_name.startswith("hf:") else None
    names = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
    if folder and any(os.path.exists(os.path.join(folder, n)) for n in names):
        from transformers import AutoTokenizer

        encode = AutoTokenizer.from_pretrained(folder, local_files_only=True).encode
    ids = [list(encode(t)) if encode else list(t.encode("utf-8")) for t in lines]
    L = min(prompt_len, min(len(x) for x in ids))
    if L < 1:
        raise ValueError(f"--prompts {path}: a prompt has no tokens")
    arr = np.array([x[:L] for x in ids], dtype=np.int64)
    if arr.max() >= vocab:
        raise ValueError(f"--prompts {path}: token ids up to {arr.max()} exceed the vocabulary ({vocab})")
    return arr


def add_tune_args(p: argparse.ArgumentParser) -> None:
    """The options of ``spectheory tune``."""
    p.add_argument("--target", default="target", help="target: a shipped name or hf:PATH")
    p.add_argument("--draft", default="draft-small", help="draft: a shipped name or hf:PATH")
    p.add_argument(
        "--prompts", default=None, metavar="FILE", help="prompts, one per line (default: the corpus)"
    )
    p.add_argument("--prompt-len", type=A.positive_int, default=32, help="tokens kept per prompt")
    p.add_argument("--device", type=A.device_name, default="cpu", help="torch device: cpu, cuda or cuda:N")
    p.add_argument("--batches", type=A.gammas, default=[1], help="comma-separated batch sizes")
    p.add_argument("--gammas", type=A.gammas, default=[1, 2, 3, 4, 6, 8], help="draft lengths")
    p.add_argument(
        "--trees", type=parse_trees, default=[(2, 1, 1), (2, 2, 1)], help="trees, e.g. 2x1x1,2x2x1 or none"
    )
    p.add_argument(
        "--policies",
        type=parse_policies,
        default=[("confidence", 0.4)],
        help="confidence:T, entropy:T, hf or none",
    )
    p.add_argument(
        "--policy-depth", type=A.positive_int, default=8, help="largest draft length of the policies"
    )
    p.add_argument("--tokens", type=A.positive_int, default=64, help="new tokens per row")
    p.add_argument(
        "--paths", type=A.positive_int, default=128, help="target paths sampled for the predictions"
    )
    p.add_argument("--repeats", type=A.positive_int, default=5, help="timed calls per point of the cost fits")
    p.add_argument("--seed", type=A.nonneg_int, default=0, help="random seed")
    p.add_argument(
        "--threads", type=A.positive_int, default=None, help="torch CPU threads (default: torch's)"
    )
    p.add_argument(
        "--verify", action="store_true", help="run the decoder on the top configurations (default: off)"
    )
    p.add_argument("--top", type=A.positive_int, default=3, help="configurations verified per batch size")
    p.add_argument("--plot", default="spectheory_tune.png", metavar="PATH", help="plot file (.png and .pdf)")
    p.add_argument("--no-plot", action="store_true", help="write no plot (default: write one)")
    p.add_argument("--json", action="store_true", help="machine-readable output (default: the table)")


def run_tune(args: argparse.Namespace) -> int:
    """Load the models and prompts, run :func:`~spectheory.tuning.tuner.tune`, print and plot."""
    from .cli_args import check_device_available

    check_device_available(args.device)
    if not args.no_plot:  # before any work: a plot that cannot be written fails now
        import os

        folder = os.path.dirname(os.path.abspath(args.plot))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"--plot {args.plot}: cannot create its folder ({exc.strerror or exc})"
            ) from None
    if args.paths < 2:
        raise ValueError("--paths: need at least 2 target paths (standard errors)")
    import torch

    from ..tuning.tuner import tune

    if args.threads:
        torch.set_num_threads(args.threads)
    target = load_named_model(args.target, args.device)
    draft = load_named_model(args.draft, args.device)
    if target.vocab_size != draft.vocab_size:
        raise ValueError(
            f"--target, --draft: vocabularies differ ({target.vocab_size} vs {draft.vocab_size})"
        )
    if args.prompts is not None:
        prompts = read_prompts(args.prompts, args.target, target.vocab_size, args.prompt_len)
    else:
        from ..decoder.corpus import heldout_windows

        prompts = heldout_windows(8, args.prompt_len) % target.vocab_size
    limit = min(x for x in (target.max_seq_len, draft.max_seq_len, 1 << 30) if x is not None)
    deepest = max([*args.gammas, *(len(t) for t in args.trees), args.policy_depth if args.policies else 0])
    if prompts.shape[1] + args.tokens + deepest + 1 > limit:
        raise ValueError(
            f"--tokens: prompt + {args.tokens} new tokens exceed the models' max_seq_len = {limit}"
        )
    result = tune(
        target,
        draft,
        prompts,
        device=args.device,
        batches=args.batches,
        gammas=args.gammas,
        trees=args.trees,
        policies=_policies(args.policies, args.policy_depth),
        n_paths=args.paths,
        horizon=args.tokens,
        fit_repeats=args.repeats,
        rng=args.seed,
    )
    if args.verify:
        result.verify(target, draft, top=args.top, seed=args.seed)
    files = [] if args.no_plot else result.plot(args.plot)
    if args.json:
        print(json.dumps({**result.to_dict(), "plot": files}, indent=1, default=float))
        return 0
    print(f"spectheory tune: target {args.target}, draft {args.draft}, device {args.device}")
    print(result.table())
    for B in sorted(set(args.batches)):
        best = result.best(B)
        print(
            f"best at batch {B}: {best['config']} ({best['throughput']:.0f} tokens/s, {best['speedup']:.2f}x)"
        )
    if files:
        print("wrote", *files)
    return 0
